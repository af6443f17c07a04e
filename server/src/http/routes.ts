// The contract's handlers: each reads the tenant and request id and calls a service.
import { initServer } from '@ts-rest/express';
import { contract } from '@switchboard/contract';
import type { AgentService } from '../service/agent-service.js';
import type { ConversationService } from '../service/conversation-service.js';
import type { ConversationStore } from '../store/conversation-store.js';
import { UnavailableError } from '../errors.js';

const s = initServer();

export interface RouteDeps {
  agents: AgentService;
  conversations: ConversationService;
  store: ConversationStore;
}

const requestId = (res: { getHeader(n: string): unknown }) => String(res.getHeader('x-request-id'));

export function createRouter({ agents, conversations, store }: RouteDeps) {
  return s.router(contract, {
    api: {
      converse: async ({ params, headers, body, res }) => ({
        status: 200,
        body: await conversations.converse({
          tenantId: headers['tenant-id'],
          slug: params.slug,
          body,
          userIdHeader: headers['user-id'],
          requestId: requestId(res),
          idempotencyKey: headers['idempotency-key'],
        }),
      }),
      listConversations: async ({ params, headers, query }) => ({
        status: 200,
        body: await conversations.list(headers['tenant-id'], params.slug, query),
      }),
      getConversation: async ({ params, headers }) => ({
        status: 200,
        body: await conversations.detail(headers['tenant-id'], params.slug, params.id),
      }),
      getHistory: async ({ params, headers }) => ({
        status: 200,
        body: await conversations.history(headers['tenant-id'], params.slug, params.id),
      }),
      getAuditLogs: async ({ params, headers, query }) => ({
        status: 200,
        body: await conversations.audit(headers['tenant-id'], params.slug, params.id, query),
      }),
      putAgent: async ({ params, headers, body }) => ({
        status: 200,
        body: (await agents.put(headers['tenant-id'], params.slug, body)).agent,
      }),
      listAgents: async ({ headers }) => ({ status: 200, body: { data: await agents.list(headers['tenant-id']) } }),
      getAgent: async ({ params, headers }) => ({ status: 200, body: await agents.get(headers['tenant-id'], params.slug) }),
      deleteAgent: async ({ params, headers }) => {
        await agents.archive(headers['tenant-id'], params.slug);
        return { status: 204, body: undefined };
      },
    },
    ops: {
      healthz: async () => ({ status: 200, body: { status: 'ok' } }),
      readyz: async () => {
        try {
          await store.ping();
        } catch {
          throw new UnavailableError();
        }
        return { status: 200, body: { status: 'ok' } };
      },
    },
  });
}
