// Faults: the database going away and coming back, a failure between two writes, and SIGTERM
// with a request in flight.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { echoAgent } from '../helpers/agents.js';
import { databases, eachDatabase, PG_URL } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { json, startBackend, testApp, answersOk } from '../helpers/servers.js';
import { startProxy, type Proxy } from '../helpers/tcp-proxy.js';
import { waitUntil } from '../helpers/wait.js';

const T = { 'tenant-id': 'acme' };
const postgres = databases.find((d) => d.name === 'postgres');

/** An app whose PostgreSQL connections go through a proxy the test can cut or silence; `direct` bypasses it. */
function behindProxy(opts: { queryTimeoutMs?: number } = {}) {
  const f = {} as { proxy: Proxy; db: Database; app: App; direct: Database; drop: () => Promise<void> };
  beforeAll(async () => {
    const created = await postgres!.create();
    f.drop = created.drop;
    f.direct = created.db;
    const u = new URL(created.url);
    f.proxy = await startProxy(u.hostname, Number(u.port || 5432));
    u.hostname = '127.0.0.1';
    u.port = String(f.proxy.port);
    f.db = openDatabase(u.toString(), { poolMax: 4, acquireTimeoutMs: 800, queryTimeoutMs: opts.queryTimeoutMs, log: { warn: () => undefined } });
    f.app = testApp(f.db);
    await request(f.app.app).put('/api/v1/agents/echo').set(T).send(echoAgent).expect(200);
  });
  afterAll(async () => {
    await f.app?.close();
    await f.db?.close();
    await f.proxy?.close();
    await f.drop?.();
  });
  return f;
}

describe.skipIf(!postgres)(`the database going away${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  const f = behindProxy();

  it('answers 503 unavailable with retry-after, writes nothing, and recovers by itself', async () => {
    const { app, proxy, direct } = f;
    const id = (await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    proxy.cut();
    for (const r of [
      await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'lost?', conversation_id: id }),
      await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'new one' }),
      await request(app.app).get('/readyz'),
    ]) {
      expect(r.status).toBe(503);
      expect(r.body.code).toBe('unavailable');
      expect(r.headers['retry-after']).toBe('2');
    }
    expect((await request(app.app).get('/healthz')).status).toBe(200);
    proxy.restore();
    await waitUntil('/readyz to answer 200 once the database is back', async () => (await request(app.app).get('/readyz')).status === 200, 2000, 100);
    const turns = await direct.knex('turns').where({ conversation_id: id }).orderBy('idx');
    expect(turns.map((t) => t.message)).toEqual(['echo this', 'Say something.']);
    expect(Number((await direct.knex('conversations').count({ n: '*' }).first())!.n)).toBe(1);
    const after = await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'back again', conversation_id: id });
    expect(after.status).toBe(200);
  });
});

describe.skipIf(!postgres)(`a database that stops answering${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  const f = behindProxy({ queryTimeoutMs: 1000 });

  it('answers 503 within its query time-out (no reset, no FIN: a black hole), then recovers', { timeout: 20_000 }, async () => {
    const { app, proxy } = f;
    const id = (await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    proxy.blackhole();
    // Pooled connections stay open and silent: each call must give up on its own, not hang.
    const answers = await Promise.all([
      request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'lost?', conversation_id: id }),
      request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'new one' }),
      request(app.app).get('/readyz'),
    ]);
    for (const r of answers) {
      expect(r.status).toBe(503);
      expect(r.body.code).toBe('unavailable');
    }
    proxy.restore();
    await waitUntil('/readyz to answer 200 once the database is back', async () => (await request(app.app).get('/readyz')).status === 200, 4000, 100);
    expect((await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'back again', conversation_id: id })).status).toBe(200);
  });
});

describe.skipIf(!postgres)(`database connections and slow actions${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  it('holds no connection while actions run: ten turns on a hanging action leave the pool to everyone else', { timeout: 30_000 }, async () => {
    const created = await postgres!.create();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const hanging = await startBackend((_q, res) => void gate.then(() => json(res, 200, { ok: true })));
    const db = openDatabase(created.url, { poolMax: 3, acquireTimeoutMs: 800, log: { warn: () => undefined } });
    const app = testApp(db, { actionAllowedHosts: { noisy: [`127.0.0.1:${hanging.port}`] } });
    try {
      const slowEcho = {
        name: 'Hangs',
        capabilities: [
          {
            name: 'echo',
            examples: ['echo this'],
            phases: [
              { id: 'listen', say: 'Say something.', collect: { slot: 'said', type: 'text' } },
              { id: 'work', call: 'hang' },
              { id: 'done', say: 'Done.' },
            ],
          },
        ],
        actions: { hang: { type: 'http', method: 'GET', url: `${hanging.url}/hang`, timeout_ms: 20_000 } },
      };
      const N = { 'tenant-id': 'noisy' };
      await request(app.app).put('/api/v1/agents/hang').set(N).send(slowEcho).expect(200);
      await request(app.app).put('/api/v1/agents/echo').set(T).send(echoAgent).expect(200);
      const ids: string[] = [];
      for (let i = 0; i < 10; i++)
        ids.push((await request(app.app).post('/api/v1/agents/hang/converse').set(N).send({ message: 'echo this' })).body.conversation_id);
      // Ten continuing turns wait on the action, more than the pool has connections.
      const stuck = ids.map((id) =>
        request(app.app)
          .post('/api/v1/agents/hang/converse')
          .set(N)
          .send({ message: 'x', conversation_id: id })
          .then((r) => r),
      );
      await waitUntil('ten requests at the hanging backend', () => hanging.requests.length >= 10, 10_000, 20);
      for (let i = 0; i < 5; i++) {
        const r = await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' });
        expect(r.status).toBe(200);
        const again = await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'hi', conversation_id: r.body.conversation_id });
        expect(again.status).toBe(200);
      }
      release();
      for (const r of await Promise.all(stuck)) expect(r.status).toBe(200);
    } finally {
      release();
      await app.close();
      await db.close();
      await hanging.close();
      await created.drop();
    }
  });
});

eachDatabase('a failure between two writes on $name', (database) => {
  const f = appFixture(database, { agents: { echo: echoAgent } });

  it('never leaves a user turn without its agent turn', async () => {
    const { app, db } = f;
    const id = (await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    // Writing the agent turn fails after the user turn was written in the same call.
    if (database.name === 'sqlite') {
      await db.knex.raw(
        `create trigger fail_agent_turn before insert on turns when new.role = 'agent' and new.idx > 1 begin select raise(abort, 'disk on fire'); end`,
      );
    } else {
      await db.knex.raw(
        `create function fail_agent_turn() returns trigger language plpgsql as $$ begin if new.role = 'agent' and new.idx > 1 then raise exception 'disk on fire'; end if; return new; end $$`,
      );
      await db.knex.raw('create trigger fail_agent_turn before insert on turns for each row execute function fail_agent_turn()');
    }
    const r = await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'hello', conversation_id: id });
    expect(r.status).toBe(500);
    expect(r.text).not.toContain('disk on fire');
    const turns = await db.knex('turns').where({ conversation_id: id });
    expect(turns).toHaveLength(2);
    const c = (await db.knex('conversations').where({ id }).first())!;
    expect(Number(c.turn_count)).toBe(2);
    expect(await db.knex('audit_entries').where({ conversation_id: id }).max({ m: 'sequence' }).first()).toEqual({ m: Number(c.audit_seq) });
  });
});

describe('SIGTERM', () => {
  it('drains a request in flight, then stops cleanly', async () => {
    const slow = await startBackend((_q, res) => setTimeout(() => json(res, 200, { ok: true }), 700));
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-sigterm-'));
    const port = await new Promise<number>((resolve) => {
      const s = netServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
      env: {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: `sqlite://${join(dir, 'db.sqlite')}`,
        LOG_LEVEL: 'silent',
        ACTION_ALLOWED_HOSTS: `*=127.0.0.1:${slow.port}`,
        RATE_LIMIT_RPS: '0',
      },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const base = `http://127.0.0.1:${port}`;
      await answersOk(`${base}/healthz`, { tries: 100 });
      const agent = {
        name: 'Slow',
        capabilities: [
          {
            name: 'go',
            examples: ['go now'],
            phases: [
              { id: 'call', call: 'wait' },
              { id: 'done', say: 'Finished.', end: 'completed' },
            ],
          },
        ],
        actions: { wait: { type: 'http', method: 'GET', url: `${slow.url}/wait` } },
      };
      const h = { 'tenant-id': 'acme', 'content-type': 'application/json' };
      expect((await fetch(`${base}/api/v1/agents/slow`, { method: 'PUT', headers: h, body: JSON.stringify(agent) })).status).toBe(200);
      const inFlight = fetch(`${base}/api/v1/agents/slow/converse`, { method: 'POST', headers: h, body: JSON.stringify({ message: 'go now' }) });
      // SIGTERM once the call is under way: its action has reached the slow backend.
      await waitUntil('a request at the slow backend', () => slow.requests.length > 0);
      child.kill('SIGTERM');
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(((await res.json()) as { response: { message: string } }).response.message).toBe('Finished.');
      expect(await exited).toBe(0);
      await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    } finally {
      child.kill('SIGKILL');
      await slow.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
