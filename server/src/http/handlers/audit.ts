// The audit resource's handlers (contract/src/resources/audit.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const auditHandlers = ({ conversationReads }: Services) =>
  s.router(RESOURCES.audit.routes, {
    getAuditLogs: async ({ params, headers, query }) => ({
      status: 200,
      body: await conversationReads.audit(headers['tenant-id'], params.slug, params.id, query),
    }),
    verifyAuditLogs: async ({ params, headers }) => ({
      status: 200,
      body: await conversationReads.verifyAudit(headers['tenant-id'], params.slug, params.id),
    }),
  });
