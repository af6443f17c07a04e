// The channels resource's handlers (contract/src/resources/channels.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { requestOrigin } from '../origin.js';
import type { Services } from '../../services.js';

const s = initServer();

export const channelsHandlers = ({ channels }: Services) =>
  s.router(RESOURCES.channels.routes, {
    listChannels: async ({ params, headers, req }) => ({
      status: 200,
      body: { data: await channels.list(headers['tenant-id'], params.slug, requestOrigin(req)) },
    }),
    putChannel: async ({ params, headers, body, req }) => ({
      status: 200,
      body: await channels.put(headers['tenant-id'], params.slug, params.channel, body, requestOrigin(req)),
    }),
    patchChannel: async ({ params, headers, body, req }) => ({
      status: 200,
      body: await channels.setStatus(headers['tenant-id'], params.slug, params.channel, body.status, requestOrigin(req)),
    }),
    deleteChannel: async ({ params, headers }) => {
      await channels.remove(headers['tenant-id'], params.slug, params.channel);
      return { status: 204, body: undefined };
    },
    listChannelDeliveries: async ({ params, headers, query }) => ({
      status: 200,
      body: await channels.deliveries(headers['tenant-id'], params.slug, query),
    }),
  });
