// The operations resource's handlers (contract/src/resources/operations.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { UnauthorizedError, UnavailableError } from '../../errors.js';
import { carriesToken } from './request.js';
import type { Services } from '../../services.js';

const s = initServer();

export const operationsHandlers = ({ drain, metrics, ping }: Services, opts: { metricsToken: string | null }) =>
  s.router(RESOURCES.operations.routes, {
    healthz: () => Promise.resolve({ status: 200 as const, body: { status: 'ok' as const } }),
    readyz: async () => {
      // A replica that is closing tells its load balancer at once, while it still answers.
      if (drain.draining) throw new UnavailableError('The server is shutting down: send new requests to another replica');
      try {
        await ping();
      } catch {
        throw new UnavailableError();
      }
      return { status: 200, body: { status: 'ok' } };
    },
    metrics: async ({ headers }) => {
      if (opts.metricsToken && !carriesToken(headers.authorization, opts.metricsToken)) {
        throw new UnauthorizedError('This server requires its metrics token: authorization: Bearer <METRICS_TOKEN>');
      }
      return { status: 200, body: await metrics.scrape() };
    },
  });
