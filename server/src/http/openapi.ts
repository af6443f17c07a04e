// Builds the OpenAPI 3 document from the contract (served at /openapi.json, committed as openapi.json).
import { isAppRouteOtherResponse, type AppRoute } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import { contract } from '@switchboard/contract';

type Operation = Record<string, any>;

/** Header descriptions land inside their schemas; lift them onto the parameters where readers look. */
function liftParameterDescriptions(op: Operation, route: AppRoute): Operation {
  // Responses of another content type (server-sent events) are left out by the generator.
  for (const [status, r] of Object.entries(route.responses)) {
    if (isAppRouteOtherResponse(r)) {
      op.responses[status] = {
        description: (r.body as { description?: string }).description ?? status,
        content: { [r.contentType]: { schema: { type: 'string' } } },
      };
    }
  }
  for (const p of op.parameters ?? []) {
    if (!p.description && p.schema?.description) {
      p.description = p.schema.description;
      delete p.schema.description;
    }
  }
  // Responses without a body (204) have no schema to carry a description.
  for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, { description?: string; content?: Record<string, { schema?: { description?: string } }> }>)) {
    if (r.description !== status) continue;
    if (status === '204') r.description = 'Done; no body';
    const described = Object.values(r.content ?? {}).find((c) => c.schema?.description);
    if (described) r.description = described.schema!.description!;
  }
  return op;
}

export function getOpenApi(): Record<string, unknown> {
  return generateOpenApi(
    contract,
    {
      openapi: '3.0.3',
      info: {
        title: 'Switchboard',
        version: '1.0.0',
        description:
          'Multi-tenant service that hosts conversational agents. Every /api/v1 endpoint takes a `tenant-id` header. Errors are RFC 9457 problem details (application/problem+json).',
      },
    },
    { setOperationId: true, operationMapper: (op, route) => liftParameterDescriptions(op as Operation, route) as typeof op },
  ) as Record<string, unknown>;
}
