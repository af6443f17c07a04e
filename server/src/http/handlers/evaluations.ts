// The evaluations resource's handlers (contract/src/resources/evaluations.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const evaluationsHandlers = ({ evaluations, review }: Services) =>
  s.router(RESOURCES.evaluations.routes, {
    getTestSuite: async ({ params, headers }) => ({ status: 200, body: await review.testSuite(headers['tenant-id'], params.slug) }),
    putTestSuite: async ({ params, headers, body }) => ({ status: 200, body: await review.putTestSuite(headers['tenant-id'], params.slug, body.tests) }),
    startEvaluation: async ({ params, headers, body, res }) => ({
      status: 202,
      body: await evaluations.start(headers['tenant-id'], params.slug, params.version, body, res.locals.keyId ?? null),
    }),
    listEvaluations: async ({ params, headers, query }) => ({ status: 200, body: await evaluations.list(headers['tenant-id'], params.slug, query) }),
    getEvaluation: async ({ params, headers }) => ({ status: 200, body: await evaluations.get(headers['tenant-id'], params.slug, params.id) }),
  });
