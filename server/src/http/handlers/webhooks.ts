// The webhooks resource's handlers (contract/src/resources/webhooks.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const webhooksHandlers = ({ webhookLog }: Services) =>
  s.router(RESOURCES.webhooks.routes, {
    listWebhookDeliveries: async ({ params, headers, query }) => ({
      status: 200,
      body: await webhookLog.list(headers['tenant-id'], params.slug, query),
    }),
  });
