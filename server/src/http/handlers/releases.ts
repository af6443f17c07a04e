// The releases resource's handlers (contract/src/resources/releases.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { actor } from './request.js';
import type { Services } from '../../services.js';

const s = initServer();

export const releasesHandlers = ({ releases }: Services) =>
  s.router(RESOURCES.releases.routes, {
    listReleases: async ({ params, headers, query }) => ({ status: 200, body: await releases.list(headers['tenant-id'], params.slug, query) }),
    verifyReleases: async ({ params, headers, query }) => {
      const head = query.head ? { sequence: Number(query.head.split(':')[0]), hash: query.head.split(':')[1] } : undefined;
      return { status: 200, body: await releases.verify(headers['tenant-id'], params.slug, head) };
    },
    putSplit: async ({ params, headers, body, res }) => ({ status: 200, body: await releases.putSplit(headers['tenant-id'], params.slug, body, actor(res)) }),
    endSplit: async ({ params, headers, query, res }) => ({
      status: 200,
      body: await releases.endSplit(headers['tenant-id'], params.slug, query, actor(res)),
    }),
    promoteSplit: async ({ params, headers, query, res }) => ({
      status: 200,
      body: await releases.promote(headers['tenant-id'], params.slug, query, actor(res)),
    }),
  });
