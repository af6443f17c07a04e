// Keys: API keys (AUTH_MODE=api_key), each with roles or the scopes that stand for them
import { z } from 'zod';
import { TenantHeaders, Uuid } from '../common.js';
import { CreateKey, CreatedKey, KeyList } from '../keys.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';
import { KEY, T0, WIDGET_KEY_ID, WIDGET_KEY } from '../examples/fixtures.js';

const c = initContract();

/** The read-only key of the examples, as listed. */
const dashboards = {
  id: KEY,
  name: 'dashboards',
  prefix: 'sbk_af5f3a1d',
  scopes: ['read'],
  roles: [{ role: 'viewer' }],
  widget: null,
  created_at: T0,
  revoked_at: null,
};

export const keys = apiResource({
  tag: 'Keys',
  description: 'API keys (AUTH_MODE=api_key)',
  routes: c.router(
    {
      createKey: {
        method: 'POST',
        path: '/keys',
        headers: TenantHeaders,
        body: CreateKey,
        responses: { 201: CreatedKey },
        summary: 'Create an API key for this tenant (the key is shown once)',
      },
      listKeys: {
        method: 'GET',
        path: '/keys',
        headers: TenantHeaders,
        responses: { 200: KeyList.describe("The tenant's keys, without their secrets") },
        summary: "List the tenant's API keys",
      },
      revokeKey: {
        method: 'DELETE',
        path: '/keys/:id',
        pathParams: z.object({ id: Uuid }),
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'Revoke an API key',
      },
    },
    apiOptions,
  ),
  permissions: {
    createKey: 'keys.manage',
    listKeys: 'keys.manage',
    revokeKey: 'keys.manage',
  },
  examples: {
    KeyRequest: { summary: 'A read-only key for dashboards', value: { name: 'dashboards', scopes: ['read'] } },
    RoleKeyRequest: {
      summary: "A key for a help desk's integration: operator of one agent",
      value: { name: 'help desk', roles: [{ role: 'operator', agents: ['acme-support'] }] },
    },
    WidgetKeyRequest: {
      summary: 'A publishable key for the web chat widget on one site',
      value: { name: 'shop widget', widget: { agents: ['acme-support'], origins: ['https://shop.example.com'] } },
    },
    CreatedKey: {
      summary: 'The key, shown this once',
      value: { ...dashboards, key: 'sbk_af5f3a1de68a4bcd8f312357c91b5513_HfSPe4im0a48ikW_37D0K9QCLZCkbF54MwbZ6teaesA' },
    },
    KeyList: {
      summary: "The tenant's keys (never the key itself)",
      value: {
        data: [
          dashboards,
          {
            id: WIDGET_KEY_ID,
            name: 'shop widget',
            prefix: 'pk_3c0a9e12f',
            scopes: [],
            roles: [],
            widget: { agents: ['acme-support'], origins: ['https://shop.example.com'], key: WIDGET_KEY },
            created_at: T0,
            revoked_at: null,
          },
        ],
      },
    },
  },
  operations: {
    createKey: { request: ['KeyRequest', 'RoleKeyRequest', 'WidgetKeyRequest'], response: ['CreatedKey'] },
    listKeys: { response: ['KeyList'] },
    revokeKey: { response: [] },
  },
});
