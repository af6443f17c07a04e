// The keys resource's handlers (contract/src/resources/keys.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const keysHandlers = ({ keys, streams }: Services) =>
  s.router(RESOURCES.keys.routes, {
    createKey: async ({ headers, body }) => ({
      status: 201,
      body: body.widget
        ? await keys.createPublishable(headers['tenant-id'], body.widget, body.name)
        : await keys.create(headers['tenant-id'], body.roles ? { roles: body.roles } : body.scopes!, body.name),
    }),
    listKeys: async ({ headers }) => ({ status: 200, body: { data: await keys.list(headers['tenant-id']) } }),
    revokeKey: async ({ headers, params }) => {
      await keys.revoke(headers['tenant-id'], params.id);
      streams.endForKeys([params.id]);
      return { status: 204, body: undefined };
    },
  });
