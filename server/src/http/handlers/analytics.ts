// The analytics resource's handlers (contract/src/resources/analytics.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const analyticsHandlers = ({ analytics }: Services) =>
  s.router(RESOURCES.analytics.routes, {
    getAnalytics: async ({ params, headers, query }) => ({ status: 200, body: await analytics.get(headers['tenant-id'], params.slug, query) }),
  });
