// Operations: Liveness, readiness and metrics
import { z } from 'zod';
import { Health, Problem } from '../common.js';
import { initContract } from '@ts-rest/core';
import { opsOptions, publicResource } from '../resource.js';

const c = initContract();

export const operations = publicResource({
  tag: 'Operations',
  description: 'Liveness, readiness and metrics',
  routes: c.router(
    {
      healthz: {
        method: 'GET',
        path: '/healthz',
        responses: { 200: Health.describe('The process is up') },
        summary: 'Liveness',
      },
      readyz: {
        method: 'GET',
        path: '/readyz',
        responses: {
          200: Health.describe('The database is reachable'),
          503: Problem.describe('The database cannot be reached'),
        },
        summary: 'Readiness',
      },
      metrics: {
        method: 'GET',
        path: '/metrics',
        headers: z.object({ authorization: z.string().optional().describe('`Bearer <METRICS_TOKEN>` when the server sets one') }),
        responses: {
          200: c.otherResponse({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: z.string().describe('The Prometheus text format') }),
          401: Problem.describe('METRICS_TOKEN is set and the request does not carry it'),
        },
        summary: 'Prometheus metrics of this process (docs/observability.md)',
        description: 'The Prometheus text format: process defaults and the switchboard_* series. Open unless the server sets METRICS_TOKEN.',
      },
    },
    opsOptions,
  ),
  examples: {
    Healthy: { summary: 'Up', value: { status: 'ok' } },
    Metrics: {
      summary: 'Prometheus text',
      value:
        '# HELP switchboard_turns_total User messages answered\n# TYPE switchboard_turns_total counter\nswitchboard_turns_total{tenant="demo",agent="acme-support",capability="order_status",status="completed"} 96\n',
    },
  },
  operations: {
    healthz: { response: ['Healthy'] },
    readyz: { response: ['Healthy'] },
    metrics: { response: ['Metrics'] },
  },
});
