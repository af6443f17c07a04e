// Roles and permissions (contract/src/access.ts), walked from the contract itself: every operation
// under /api/v1 × every role, for the whole tenant, for the agent it names, and for another agent;
// then the hostile cases, which must answer 403 and change nothing, through the typed client too.
import request from 'supertest';
import type { AppRoute } from '@ts-rest/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentGrantRoutes, contract, Role, ROLE_PERMISSIONS, routePermissions, type Grant } from '@switchboard/contract';
import { createSwitchboardClient } from '../../client/src/index.js';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';

const ROUTES = Object.entries(contract.api) as [keyof typeof routePermissions, AppRoute][];
const ROLES = Role.options;

/** A path of the route with every parameter filled, on agent `slug`. */
const pathOf = (route: AppRoute, slug: string) =>
  route.path
    .replace(':slug', slug)
    .replace(':version', '1')
    .replace(':channel', 'slack')
    .replace(':source', 'docs')
    .replace(':name', 'TOKEN')
    .replace(':user_id', 'someone')
    .replace(':id', '00000000-0000-4000-8000-000000000000');

describe('the contract', () => {
  it('declares a permission for every operation under /api/v1, each one some role holds', () => {
    for (const [name] of ROUTES) {
      const permission = routePermissions[name];
      expect(permission, name).toBeTruthy();
      expect(
        ROLES.filter((r) => ROLE_PERMISSIONS[r].includes(permission)),
        name,
      ).toContain('owner');
    }
    expect(Object.keys(routePermissions).sort()).toEqual(ROUTES.map(([n]) => n).sort());
  });
});

eachDatabase('permissions on $name', (database) => {
  const f = appFixture(database, { config: { authMode: 'api_key' } });
  let app: App;
  const key: Record<string, string> = {};
  const make = async (grants: Grant[]) => (await app.keys.create('acme', { roles: grants })).key;
  const call = (route: AppRoute, path: string, bearer: string, tenant = 'acme') => {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    const r = request(app.app)[method](path).set('tenant-id', tenant).set('authorization', `Bearer ${bearer}`);
    if (method === 'get' || method === 'delete') return r;
    return 'contentType' in route && route.contentType === 'multipart/form-data' ? r.field('name', 'Docs') : r.send({});
  };

  beforeAll(async () => {
    app = f.app;
    key.owner = await make([{ role: 'owner' }]);
    for (const slug of ['alpha', 'beta'])
      await request(app.app).put(`/api/v1/agents/${slug}`).set('tenant-id', 'acme').set('authorization', `Bearer ${key.owner}`).send(echoAgent).expect(200);
    for (const role of ROLES) {
      key[role] = await make([{ role }]);
      key[`${role}@alpha`] = await make([{ role, agents: ['alpha'] }]);
      key[`${role}@beta`] = await make([{ role, agents: ['beta'] }]);
    }
  });

  it('shows a per-agent grant only its own agents in the list', async () => {
    const listed = await request(app.app).get('/api/v1/agents').set('tenant-id', 'acme').set('authorization', `Bearer ${key['viewer@beta']}`).expect(200);
    expect(listed.body.data.map((a: { slug: string }) => a.slug)).toEqual(['beta']);
    const all = await request(app.app).get('/api/v1/agents').set('tenant-id', 'acme').set('authorization', `Bearer ${key.viewer}`).expect(200);
    expect(all.body.data.map((a: { slug: string }) => a.slug).sort()).toEqual(['alpha', 'beta']);
    // A client reads nothing, its list included.
    await request(app.app).get('/api/v1/agents').set('tenant-id', 'acme').set('authorization', `Bearer ${key.client}`).expect(403);
  });

  it('answers every operation × every role as the contract says: for the tenant, this agent, another agent', async () => {
    const wrong: string[] = [];
    // The owner's calls go last: they may delete the agent the others are asked about.
    for (const who of [...ROLES.filter((r) => r !== 'owner'), 'owner'] as Role[])
      for (const [name, route] of ROUTES) {
        const permission = routePermissions[name];
        const held = ROLE_PERMISSIONS[who].includes(permission);
        const underAgent = route.path.includes(':slug');
        const path = pathOf(route, 'alpha');
        for (const [as, allowed] of [
          [who, held],
          [`${who}@alpha`, held && (underAgent || agentGrantRoutes.has(name))],
          [`${who}@beta`, held && agentGrantRoutes.has(name)],
        ] as const) {
          const res = await call(route, path, key[as]);
          const refused = res.status === 403 && res.body.code === 'forbidden';
          if (res.status === 401 || refused === allowed) wrong.push(`${as} ${route.method} ${path}: ${res.status} ${res.body.detail ?? ''}`);
          if (refused) expect(res.body.detail).toContain(`"${permission}" permission`);
        }
      }
    expect(wrong).toEqual([]);
  });
});

eachDatabase('hostile callers on $name', (database) => {
  const f = appFixture(database, { config: { authMode: 'api_key' } });
  const c = clientFixture(f);
  let owner: string;
  const as = (apiKey: string, tenantId = 'acme') => createSwitchboardClient({ baseUrl: c.url, tenantId, apiKey });
  const make = async (roles: Grant[], tenant = 'acme') => (await f.app.keys.create(tenant, { roles })).key;

  beforeAll(async () => {
    owner = await make([{ role: 'owner' }]);
    for (const slug of ['alpha', 'beta']) {
      const put = await as(owner).api.putAgent({ params: { slug }, body: echoAgent });
      expect(put.status).toBe(200);
    }
    // A draft of alpha that nobody has released.
    const draft = await as(owner).api.putAgent({ params: { slug: 'alpha' }, query: { activate: 'false' }, body: { ...echoAgent, name: 'Echo 2' } });
    expect(draft.status).toBe(200);
  });

  it('refuses a reviewer who tries to activate, and the version stays where it was', async () => {
    const reviewer = as(await make([{ role: 'reviewer' }]));
    const res = await reviewer.api.activateVersion({ params: { slug: 'alpha', version: 2 }, query: {} });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      code: 'forbidden',
      detail: expect.stringContaining('"releases.write" permission on agent "alpha" (roles: owner, releaser)'),
    });
    const agent = await as(owner).api.getAgent({ params: { slug: 'alpha' } });
    expect(agent.status === 200 && agent.body.version).toBe(1);
    const releases = await as(owner).api.listReleases({ params: { slug: 'alpha' }, query: {} });
    expect(releases.status === 200 && releases.body.data.map((r) => r.version)).toEqual([1]);
    // A releaser of alpha may.
    const releaser = as(await make([{ role: 'releaser', agents: ['alpha'] }]));
    expect((await releaser.api.activateVersion({ params: { slug: 'alpha', version: 2 }, query: {} })).status).toBe(200);
  });

  it("refuses an operator of agent A replying on agent B, and B's conversation keeps its turns", async () => {
    const started = await as(owner).api.converse({ params: { slug: 'beta' }, body: { message: 'echo this' } });
    if (started.status !== 200) throw new Error(`converse: ${started.status}`);
    const id = started.body.conversation_id;
    const before = (await as(owner).api.getHistory({ params: { slug: 'beta', id } })).body;
    const operatorA = as(await make([{ role: 'operator', agents: ['alpha'] }]));
    const reply = await operatorA.api.postOperatorMessage({ params: { slug: 'beta', id }, body: { message: 'hello from a person' } });
    expect(reply.status).toBe(403);
    expect((await operatorA.api.setStatus({ params: { slug: 'beta', id }, body: { status: 'completed' } })).status).toBe(403);
    expect((await operatorA.api.getHistory({ params: { slug: 'beta', id } })).status).toBe(403);
    expect((await as(owner).api.getHistory({ params: { slug: 'beta', id } })).body).toEqual(before);
    // An operator of beta may reply there.
    const operatorB = as(await make([{ role: 'operator', agents: ['beta'] }]));
    expect((await operatorB.api.postOperatorMessage({ params: { slug: 'beta', id }, body: { message: 'hello from a person' } })).status).toBe(201);
  });

  it('refuses a key of another tenant, even an owner, before reading anything', async () => {
    const other = await make([{ role: 'owner' }], 'globex');
    const res = await as(other).api.listAgents();
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ detail: 'This key belongs to another tenant' });
  });

  it('refuses a key whose stored roles a bug corrupted, rather than guessing what they were', async () => {
    const k = await f.app.keys.create('acme', { roles: [{ role: 'viewer' }] });
    expect((await as(k.key).api.listAgents()).status).toBe(200);
    for (const bad of ['{not json', '[{"role":"superuser"}]', '[]', '"owner"']) {
      await f.db.knex('api_keys').where({ id: k.id }).update({ roles: bad });
      const res = await as(k.key).api.listAgents();
      expect(res.status, bad).toBe(403);
      const keys = await as(owner).api.listKeys();
      expect(keys.status === 200 && keys.body.data.find((x) => x.id === k.id)?.roles, bad).toEqual([]);
    }
  });

  it('creates keys with roles by API, and refuses a grant it cannot keep, storing nothing', async () => {
    const api = as(owner).api;
    const created = await api.createKey({ body: { name: 'help desk', roles: [{ role: 'operator', agents: ['alpha'] }] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ scopes: [], roles: [{ role: 'operator', agents: ['alpha'] }] });
    const count = async () => (await f.db.knex('api_keys').count({ n: '*' }).first())!.n;
    const before = Number(await count());
    for (const body of [
      { roles: [{ role: 'superuser' }] },
      { roles: [] },
      { roles: [{ role: 'viewer', agents: [] }] },
      { roles: [{ role: 'viewer', agents: ['Not A Slug'] }] },
      { roles: [{ role: 'viewer', tenant: 'globex' }] },
      { roles: [{ role: 'viewer' }], scopes: ['read'] },
    ]) {
      const res = await request(f.app.app).post('/api/v1/keys').set('tenant-id', 'acme').set('authorization', `Bearer ${owner}`).send(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_error');
    }
    expect(Number(await count())).toBe(before);
    // A key made with scopes shows the roles they stand for.
    const scoped = await api.createKey({ body: { scopes: ['read', 'converse'] } });
    expect(scoped.status === 201 && scoped.body.roles).toEqual([{ role: 'client' }, { role: 'viewer' }]);
  });

  it('lets only a builder or owner of the agent choose the version a conversation starts on', async () => {
    const client = as(await make([{ role: 'client' }]));
    const res = await client.api.converse({ params: { slug: 'alpha' }, body: { message: 'echo this', version: 1 } });
    expect(res.status).toBe(403);
    const builder = as(await make([{ role: 'builder', agents: ['alpha'] }]));
    expect((await builder.api.converse({ params: { slug: 'alpha' }, body: { message: 'echo this', version: 1 } })).status).toBe(200);
    expect((await builder.api.converse({ params: { slug: 'beta' }, body: { message: 'echo this', version: 1 } })).status).toBe(403);
  });
});
