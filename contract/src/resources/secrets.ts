// Secrets: The tenant's own secrets for action templates (write-only)
import { z } from 'zod';
import { Problem, TenantHeaders } from '../common.js';
import { PutSecret, SecretList, SecretName } from '../secrets.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';
import { T0 } from '../examples/fixtures.js';

const c = initContract();

export const secrets = apiResource({
  tag: 'Secrets',
  description: "The tenant's own secrets for action templates (write-only)",
  routes: c.router(
    {
      putSecret: {
        method: 'PUT',
        path: '/secrets/:name',
        pathParams: z.object({ name: SecretName }),
        headers: TenantHeaders,
        body: PutSecret,
        responses: {
          204: c.noBody(),
          409: Problem.describe('The operator has not set SECRETS_KEY, so tenant secrets are off (`secrets_not_configured`)'),
        },
        summary: "Set one of the tenant's secrets (write-only, encrypted at rest)",
      },
      listSecrets: {
        method: 'GET',
        path: '/secrets',
        headers: TenantHeaders,
        responses: { 200: SecretList.describe("The tenant's secrets: names and times, never values") },
        summary: "List the names of the tenant's secrets",
      },
      deleteSecret: {
        method: 'DELETE',
        path: '/secrets/:name',
        pathParams: z.object({ name: SecretName }),
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: "Delete one of the tenant's secrets",
      },
    },
    apiOptions,
  ),
  permissions: {
    putSecret: 'secrets.manage',
    listSecrets: 'secrets.manage',
    deleteSecret: 'secrets.manage',
  },
  examples: {
    SecretRequest: { summary: 'A token for the orders API', value: { value: 'orders-api-token-5f2a9c' } },
    SecretList: { summary: 'Names and dates only', value: { data: [{ name: 'ORDERS_TOKEN', created_at: T0, updated_at: T0 }] } },
  },
  operations: {
    putSecret: { request: ['SecretRequest'], response: [] },
    listSecrets: { response: ['SecretList'] },
    deleteSecret: { response: [] },
  },
});
