// The operators resource's handlers (contract/src/resources/operators.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { requestId } from './request.js';
import type { Services } from '../../services.js';

const s = initServer();

export const operatorsHandlers = ({ lifecycle }: Services) =>
  s.router(RESOURCES.operators.routes, {
    postOperatorMessage: async ({ params, headers, body, res }) => ({
      status: 201,
      body: await lifecycle.operatorMessage({ tenantId: headers['tenant-id'], ...params, requestId: requestId(res), actor: res.locals.actor ?? null }, body),
    }),
    setStatus: async ({ params, headers, body, res }) => ({
      status: 200,
      body: await lifecycle.setStatus(
        { tenantId: headers['tenant-id'], ...params, requestId: requestId(res), actor: res.locals.actor ?? null },
        { to: body.status, outcome: body.outcome },
      ),
    }),
    eraseConversation: async ({ params, headers, res }) => {
      await lifecycle.erase({ tenantId: headers['tenant-id'], ...params, requestId: requestId(res) });
      return { status: 204, body: undefined };
    },
    eraseUserConversations: async ({ params, headers }) => ({
      status: 200,
      body: { erased: await lifecycle.eraseUser(headers['tenant-id'], params.user_id) },
    }),
  });
