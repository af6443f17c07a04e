// The secrets resource's handlers (contract/src/resources/secrets.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const secretsHandlers = ({ secrets }: Services) =>
  s.router(RESOURCES.secrets.routes, {
    putSecret: async ({ headers, params, body }) => {
      await secrets.put(headers['tenant-id'], params.name, body.value);
      return { status: 204, body: undefined };
    },
    listSecrets: async ({ headers }) => ({ status: 200, body: { data: await secrets.list(headers['tenant-id']) } }),
    deleteSecret: async ({ headers, params }) => {
      await secrets.delete(headers['tenant-id'], params.name);
      return { status: 204, body: undefined };
    },
  });
