// The usage resource's handlers (contract/src/resources/usage.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const usageHandlers = ({ usage }: Services) =>
  s.router(RESOURCES.usage.routes, {
    getUsage: async ({ headers }) => ({ status: 200, body: await usage.of(headers['tenant-id']) }),
  });
