// API keys (AUTH_MODE=api_key): tenants, scopes as roles, revocation, storage, and the command line.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import type { Database } from '../../server/src/store/db.js';
import { echoAgent } from '../helpers/agents.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

eachDatabase('API keys on $name', (database) => {
  const f = appFixture(database, { config: { authMode: 'api_key' } });
  let app: App;
  let db: Database;
  const keys: Record<string, string> = {};
  const as =
    (key: string | undefined, tenant = 'a') =>
    (r: request.Test) => {
      r.set('tenant-id', tenant);
      if (key) r.set('authorization', `Bearer ${key}`);
      return r;
    };

  beforeAll(async () => {
    ({ app, db } = f);
    keys.adminA = (await app.keys.create('a', ['admin', 'read', 'converse'])).key;
    keys.converseA = (await app.keys.create('a', ['converse'])).key;
    keys.readB = (await app.keys.create('b', ['read', 'converse'])).key;
    await as(keys.adminA)(request(app.app).put('/api/v1/agents/echo').send(echoAgent)).expect(200);
  });

  it('answers 401 without a key, with a wrong key, or a malformed header, and never says which', async () => {
    const wrong = keys.adminA.slice(0, -4) + 'AAAA';
    const unknown = `sbk_${'0'.repeat(32)}_${'A'.repeat(43)}`;
    const bodies = [];
    for (const r of [
      request(app.app).get('/api/v1/agents').set('tenant-id', 'a'),
      request(app.app).get('/api/v1/agents').set('tenant-id', 'a').set('authorization', `Bearer ${wrong}`),
      request(app.app).get('/api/v1/agents').set('tenant-id', 'a').set('authorization', `Bearer ${unknown}`),
      request(app.app).get('/api/v1/agents').set('tenant-id', 'a').set('authorization', keys.adminA),
    ]) {
      const res = await r;
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer');
      bodies.push(res.body.detail);
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it("answers 403 for a key of tenant A used with tenant-id B, before looking at B's data", async () => {
    const res = await as(keys.adminA, 'b')(request(app.app).get('/api/v1/agents'));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'forbidden', detail: 'This key belongs to another tenant' });
  });

  it('lets a converse-only key talk but not read history or manage agents', async () => {
    const c = await as(keys.converseA)(request(app.app).post('/api/v1/agents/echo/converse').send({ message: 'echo this' }));
    expect(c.status).toBe(200);
    const h = await as(keys.converseA)(request(app.app).get(`/api/v1/agents/echo/conversations/${c.body.conversation_id}/history`));
    expect(h.status).toBe(403);
    expect(h.body.detail).toMatch(/"read" permission on agent "echo"/);
    expect((await as(keys.converseA)(request(app.app).put('/api/v1/agents/other').send(echoAgent))).status).toBe(403);
    expect((await as(keys.adminA)(request(app.app).get(`/api/v1/agents/echo/conversations/${c.body.conversation_id}/history`))).status).toBe(200);
  });

  it('runs test conversations for a key that may converse, never for one that may only read', async () => {
    const readOnly = (await app.keys.create('a', ['read'])).key;
    const tests = [{ name: 't', steps: [{ user: 'echo this', expect: { capability: 'echo' } }] }];
    const refused = await as(readOnly)(request(app.app).post('/api/v1/agents/echo/tests').send({ tests }));
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/"tests.run" permission/);
    expect((await as(keys.converseA)(request(app.app).post('/api/v1/agents/echo/tests').send({ tests }))).status).toBe(200);
  });

  it('lets an admin key alone read and converse: admin implies the other scopes', async () => {
    const adminOnly = (await app.keys.create('a', ['admin'])).key;
    const c = await as(adminOnly)(request(app.app).post('/api/v1/agents/echo/converse').send({ message: 'echo this' }));
    expect(c.status).toBe(200);
    expect((await as(adminOnly)(request(app.app).get(`/api/v1/agents/echo/conversations/${c.body.conversation_id}/history`))).status).toBe(200);
    expect((await as(adminOnly)(request(app.app).get('/api/v1/agents'))).status).toBe(200);
    // The other scopes imply nothing.
    expect((await as(keys.readB, 'b')(request(app.app).put('/api/v1/agents/x').send(echoAgent))).status).toBe(403);
  });

  it('lets only an admin key choose the version a conversation starts on', async () => {
    const pinned = await as(keys.converseA)(request(app.app).post('/api/v1/agents/echo/converse').send({ message: 'echo this', version: 1 }));
    expect(pinned.status).toBe(403);
    expect(pinned.body.detail).toMatch(/"agents.write" permission/);
    const admin = await as(keys.adminA)(request(app.app).post('/api/v1/agents/echo/converse').send({ message: 'echo this', version: 1 }));
    expect(admin.status).toBe(200);
  });

  it('creates keys through the API, shows each once, stores only a hash, and revokes them at once', async () => {
    const created = await as(keys.adminA)(
      request(app.app)
        .post('/api/v1/keys')
        .send({ name: 'web', scopes: ['read'] }),
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'web', scopes: ['read'], revoked_at: null, key: expect.stringMatching(/^sbk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/) });
    const secret = created.body.key.slice('sbk_'.length + 32 + 1); // base64url secrets may contain '_'
    const stored = await db.knex('api_keys').where({ id: created.body.id }).first();
    expect(JSON.stringify(stored)).not.toContain(secret);
    const list = await as(keys.adminA)(request(app.app).get('/api/v1/keys'));
    expect(list.body.data.find((k: { id: string }) => k.id === created.body.id)).not.toHaveProperty('key');
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect((await as(created.body.key)(request(app.app).get('/api/v1/agents'))).status).toBe(200);
    expect((await as(keys.adminA)(request(app.app).delete(`/api/v1/keys/${created.body.id}`))).status).toBe(204);
    const after = await as(created.body.key)(request(app.app).get('/api/v1/agents'));
    expect(after.status).toBe(401);
    expect((await as(keys.readB, 'b')(request(app.app).delete(`/api/v1/keys/${created.body.id}`))).status).toBe(403);
  });

  it('leaves health, readiness and the API document open', async () => {
    expect((await request(app.app).get('/healthz')).status).toBe(200);
    expect((await request(app.app).get('/openapi.json')).status).toBe(200);
  });
});

describe('npm run keys', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-keys-'));
  const env = { ...process.env, DATABASE_URL: `sqlite://${join(dir, 'k.db')}`, LOG_LEVEL: 'silent' };
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/keys.ts', ...args], { env });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a key and prints it once, lists and revokes it', async () => {
    const created = await cli('create', '--tenant', 'acme', '--scopes', 'converse,read', '--name', 'web');
    const id = /created key ([0-9a-f-]{36})/.exec(created.stdout)![1];
    expect(created.stdout).toMatch(/key \(shown once, store it now\): sbk_/);
    const listed = await cli('list', '--tenant', 'acme');
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).not.toMatch(/sbk_[0-9a-f]{32}_/);
    const revoked = await cli('revoke', '--tenant', 'acme', '--id', id);
    expect(revoked.stdout).toContain(`revoked key ${id}`);
    const bad = await cli('create', '--tenant', 'acme', '--scopes', 'everything').catch((e) => e);
    expect(bad.code).toBe(2);
  });

  it('creates a key with roles, for the tenant and for named agents, and refuses a role it does not know', async () => {
    const created = await cli('create', '--tenant', 'acme', '--role', 'viewer', '--role', 'operator:acme-support,billing');
    expect(created.stdout).toMatch(/with roles viewer operator:acme-support,billing\n/);
    const id = /created key ([0-9a-f-]{36})/.exec(created.stdout)![1];
    expect((await cli('list', '--tenant', 'acme')).stdout).toMatch(new RegExp(`${id}.*viewer operator:acme-support,billing`));
    for (const args of [
      ['--role', 'superuser'],
      ['--role', 'operator:Not A Slug'],
      ['--role', 'viewer', '--scopes', 'read'],
    ]) {
      const bad = await cli('create', '--tenant', 'acme', ...args).catch((e) => e);
      expect(bad.code, args.join(' ')).toBe(2);
    }
  });
});

describe('npm run people', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-people-'));
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: `sqlite://${join(dir, 'p.db')}`, LOG_LEVEL: 'silent' };
  delete env.OIDC_ISSUER;
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/people.ts', ...args], { env });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('makes the first owner known before they sign in, lists, disables and revokes them, and says what it did', async () => {
    const on = ['--tenant', 'acme', '--issuer', 'https://login.example.com/realms/acme', '--subject', 'f3a9c2d1'];
    const granted = await cli('grant', ...on, '--role', 'owner', '--role', 'operator:acme-support');
    expect(granted.stdout).toMatch(
      /granted owner operator:acme-support to f3a9c2d1 of https:\/\/login.example.com\/realms\/acme in tenant acme in sqlite:.*: roles now owner operator:acme-support\n/,
    );
    expect((await cli('list', '--tenant', 'acme')).stdout).toMatch(/f3a9c2d1 +- +owner operator:acme-support +last sign-in never/);
    expect((await cli('disable', ...on)).stdout).toContain('disabled f3a9c2d1 in tenant acme');
    expect((await cli('list', '--tenant', 'acme')).stdout).toMatch(/disabled 20\d\d-/);
    expect((await cli('revoke', ...on)).stdout).toContain('removed the roles granted to f3a9c2d1');
    expect((await cli('list', '--tenant', 'acme')).stdout).toMatch(/\(no role granted here\)/);
    for (const args of [
      ['grant', '--tenant', 'acme', '--subject', 'x', '--role', 'owner'],
      ['grant', ...on, '--role', 'superuser'],
    ]) {
      const bad = await cli(...args).catch((e: { code: number }) => e);
      expect((bad as { code: number }).code, args.join(' ')).toBe(2);
    }
    const missing = await cli('revoke', '--tenant', 'acme', '--issuer', 'https://login.example.com/realms/acme', '--subject', 'nobody').catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('no person nobody') });
  });
});
