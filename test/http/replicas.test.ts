// Two server processes on one PostgreSQL database: messages to one conversation apply one at a
// time (row lock) wherever they arrive; the sweeper and the webhook outbox do each piece of work
// once; events written by one process stream from the other (LISTEN/NOTIFY).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { slowEchoAgent } from '../helpers/agents.js';
import { FakeClock } from '../helpers/clock.js';
import { databases, PG_URL } from '../helpers/databases.js';
import { supertestDriver, type Driver } from '../helpers/drivers.js';
import { json, ordersHandler, startBackend, testApp, type Backend } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

const postgres = databases.find((d) => d.name === 'postgres');
const T = { 'tenant-id': 'acme' };

const lifeAgent = (hookUrl: string) => ({
  name: 'Life',
  inactivity_timeout_seconds: 60,
  webhooks: [{ url: hookUrl, events: ['conversation.abandoned', 'conversation.completed'] }],
  capabilities: [
    {
      name: 'ask',
      examples: ['I have a question', 'question please'],
      phases: [
        { id: 'q', say: 'Ask away.', collect: { slot: 'q' } },
        { id: 'a', say: 'Noted.' },
      ],
    },
    { name: 'bye', examples: ['goodbye', 'bye bye'], phases: [{ id: 'f', say: 'Bye!', end: 'completed' }] },
  ],
});

describe.skipIf(!postgres)(`two replicas on one PostgreSQL${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  let drop: () => Promise<void>;
  let second: Database;
  let apps: App[] = [];
  let replicas: Driver[] = [];
  let backend: Backend;
  let hooks: Backend;
  let server: Server;
  const clock = new FakeClock();

  beforeAll(async () => {
    const created = await postgres!.create();
    drop = created.drop;
    // The second replica as it runs behind PgBouncer in transaction mode (docs/scaling.md): its
    // statements not prepared, its LISTEN on a session of its own, opened from another URL.
    const listenUrl = new URL(created.url);
    listenUrl.searchParams.set('application_name', 'switchboard-listen');
    second = openDatabase(created.url, { poolMax: 20, preparedStatements: false, listenUrl: listenUrl.toString() });
    backend = await startBackend(ordersHandler);
    hooks = await startBackend((_q, res) => setTimeout(() => json(res, 204, {}), 10));
    // Deliveries are driven by runOnce below, not by a timer that could take some of them first.
    const config = { actionAllowedHosts: { '*': [`127.0.0.1:${backend.port}`, `127.0.0.1:${hooks.port}`] }, webhookIntervalMs: 0 };
    apps = [testApp(created.db, config, clock), testApp(second, config, clock)];
    for (const a of apps) await a.startBackground();
    replicas = apps.map(supertestDriver);
    server = apps[1].app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    expect((await replicas[0].putAgent('slow-echo', slowEchoAgent(backend.url))).status).toBe(200);
    await request(apps[0].app)
      .put('/api/v1/agents/life')
      .set(T)
      .send(lifeAgent(`${hooks.url}/hooks`))
      .expect(200);
  });
  afterAll(async () => {
    for (const a of apps) await a.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await second?.close();
    await backend?.close();
    await hooks?.close();
    await drop?.();
  });

  it('applies 20 concurrent messages spread over both replicas one at a time, none lost', async () => {
    const s = await replicas[0].converse('slow-echo', { message: 'echo this' });
    const id = s.body.conversation_id;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => replicas[i % 2].converse('slow-echo', { message: `m${i}`, conversation_id: id })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const [i, r] of results.entries()) expect(r.body.response.message).toBe(`You said: m${i}`);
    const turns = (await replicas[1].history('slow-echo', id)).body.turns as { role: string; message: string }[];
    expect(turns).toHaveLength(42);
    for (let i = 2; i < turns.length; i += 2) expect(turns[i + 1].message).toBe(`You said: ${turns[i].message}`);
  });

  it('streams from one replica the events written through the other', async () => {
    const id = (await request(apps[0].app).post('/api/v1/agents/life/converse').set(T).send({ message: 'I have a question' })).body.conversation_id;
    const port = (server.address() as AddressInfo).port;
    const stream = await openSse(`http://127.0.0.1:${port}/api/v1/agents/life/conversations/${id}/events`, T);
    await request(apps[0].app).post('/api/v1/agents/life/converse').set(T).send({ message: 'is it raining', conversation_id: id }).expect(200);
    const events = await stream.take(3);
    stream.close();
    expect(events.map((e) => e.event)).toEqual(['turn.created', 'turn.created', 'phase.changed']);
    expect(JSON.parse(events[0].data!).message).toBe('is it raining');
  });

  it('sweeps each inactive conversation exactly once, and delivers each webhook once, with two processes at the same time', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await request(apps[i % 2].app)
        .post('/api/v1/agents/life/converse')
        .set(T)
        .send({ message: 'I have a question' });
      ids.push(r.body.conversation_id);
    }
    clock.advance(61_000);
    const [a, b] = await Promise.all([apps[0].lifecycle.sweep(), apps[1].lifecycle.sweep()]);
    expect(a.abandoned + b.abandoned).toBeGreaterThanOrEqual(12);
    for (const id of ids) {
      const audit = await request(apps[1].app).get(`/api/v1/agents/life/conversations/${id}/audit-logs`).query({ type: 'status_change' }).set(T);
      expect(audit.body.data.filter((e: { data: { reason: string } }) => e.data.reason === 'inactivity')).toHaveLength(1);
    }
    const before = hooks.requests.length;
    const [x, y] = await Promise.all([apps[0].webhooks.runOnce(), apps[1].webhooks.runOnce()]);
    expect(x.delivered + y.delivered).toBeGreaterThanOrEqual(12);
    const delivered = hooks.requests.slice(before).map((r) => JSON.parse(r.body).data.conversation_id as string);
    for (const id of ids) expect(delivered.filter((d) => d === id)).toHaveLength(1);
    expect(new Set(delivered).size).toBe(delivered.length);
  });
});
