// Per-tenant rate limits (in memory, and shared through Redis) and the caps on conversations.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { testApp } from '../helpers/servers.js';
import { appFixture } from '../helpers/fixture.js';

const REDIS_URL = process.env.TEST_REDIS_URL;
if (/^(1|true)$/.test(process.env.REQUIRE_REDIS ?? '') && !REDIS_URL) throw new Error('REQUIRE_REDIS is set but TEST_REDIS_URL is not');
const sqlite = databases[0];

describe('rate limits', () => {
  const apps: App[] = [];
  const drops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const a of apps) await a.close();
    for (const d of drops) await d();
  });
  async function make(rateLimit: { rps: number; burst: number }, redisUrl?: string) {
    const created = await sqlite.create();
    drops.push(created.drop);
    const app = testApp(created.db, { rateLimit, redisUrl });
    apps.push(app);
    await app.ready();
    return app;
  }

  it('answers 429 with retry-after past a tenant rate and burst, and leaves other tenants alone', async () => {
    const app = await make({ rps: 2, burst: 3 });
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 8; i++) {
      const r = await request(app.app).get('/api/v1/agents').set('tenant-id', 'busy');
      statuses.push(r.status);
      if (r.status === 429) {
        retryAfter = r.headers['retry-after'];
        expect(r.body.code).toBe('rate_limited');
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.slice(5)).toEqual([429, 429, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await request(app.app).get('/api/v1/agents').set('tenant-id', 'quiet')).status).toBe(200);
    expect((await request(app.app).get('/healthz')).status).toBe(200);
  });

  it.skipIf(!REDIS_URL)(`shares one budget between processes through Redis${REDIS_URL ? '' : ' (SKIPPED: set TEST_REDIS_URL)'}`, async () => {
    const tenant = `rl-${randomBytes(4).toString('hex')}`;
    const a = await make({ rps: 3, burst: 0 }, REDIS_URL);
    const b = await make({ rps: 3, burst: 0 }, REDIS_URL);
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        request((i % 2 ? a : b).app)
          .get('/api/v1/agents')
          .set('tenant-id', tenant)
          .then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
  });
});

describe('caps on a conversation', () => {
  const f = appFixture(sqlite, { agents: { echo: echoAgent }, config: { maxTurnsPerConversation: 6, maxContextBytes: 512, maxStateBytes: 1024 } });
  const T = { 'tenant-id': 'acme' };

  it('refuses a turn past the turn limit with 422 and writes nothing', async () => {
    const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'one', conversation_id: id }).expect(200);
    await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'two', conversation_id: id }).expect(200);
    const r = await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'three', conversation_id: id });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('limit_exceeded');
    const op = await request(f.app.app).post(`/api/v1/agents/echo/conversations/${id}/messages`).set(T).send({ message: 'hi' });
    expect(op.body.code).toBe('limit_exceeded');
    expect((await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/history`).set(T)).body.turns).toHaveLength(6);
  });

  it('refuses a context over its size limit with 413', async () => {
    const r = await request(f.app.app)
      .post('/api/v1/agents/echo/converse')
      .set(T)
      .send({ message: 'echo this', context: { version: 'v1', context: { customAttributes: { notes: 'x'.repeat(600) } } } });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ code: 'payload_too_large', errors: [{ path: 'context' }] });
    expect((await request(f.app.app).get('/api/v1/agents/echo/conversations').set(T)).body.data).toHaveLength(1);
  });

  it('refuses a turn whose slots would pass the state limit', async () => {
    const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    const r = await request(f.app.app)
      .post('/api/v1/agents/echo/converse')
      .set(T)
      .send({ message: 'y'.repeat(1500), conversation_id: id });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('limit_exceeded');
    expect((await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}`).set(T)).body.slots).toEqual({});
  });

  it('refuses an agent definition over its size limit with 413', async () => {
    const other = await sqlite.create();
    const small = testApp(other.db, { agentBodyLimitBytes: 2048 });
    const big = { ...echoAgent, description: 'z'.repeat(1900), capabilities: echoAgent.capabilities };
    const r = await request(small.app).put('/api/v1/agents/big').set(T).send(big);
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('payload_too_large');
    await small.close();
    await other.drop();
  });
});
