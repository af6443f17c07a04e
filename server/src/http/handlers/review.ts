// The review resource's handlers (contract/src/resources/review.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const reviewHandlers = ({ review }: Services) =>
  s.router(RESOURCES.review.routes, {
    listReview: async ({ params, headers, query }) => ({ status: 200, body: await review.list(headers['tenant-id'], params.slug, query) }),
    actOnReview: async ({ params, headers, body, res }) => ({
      status: 200,
      body: await review.act(headers['tenant-id'], params.slug, body, res.locals.keyId ?? null),
    }),
  });
