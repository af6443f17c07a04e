// Usage: what the tenant uses of its quotas
import { TenantHeaders } from '../common.js';
import { Usage } from '../usage.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';

const c = initContract();

export const usage = apiResource({
  tag: 'Usage',
  description: "What the tenant uses of its quotas, beside the operator's limits",
  routes: c.router(
    {
      getUsage: {
        method: 'GET',
        path: '/usage',
        headers: TenantHeaders,
        responses: { 200: Usage },
        summary: "The tenant's use of its quotas, beside the limits",
      },
    },
    apiOptions,
  ),
  permissions: { getUsage: 'read' },
  examples: {
    Usage: {
      summary: 'The demo tenant with its help centre',
      value: {
        knowledge: {
          sources: { used: 1, limit: 500 },
          bytes: { used: 3446, limit: 2147483648 },
          passages: { used: 3, limit: 100000 },
          syncs_today: { used: 0, limit: 100 },
        },
      },
    },
  },
  operations: { getUsage: { response: ['Usage'] } },
});
