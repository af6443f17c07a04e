// Rows a process keeps as it wrote them (store/kept-rows.ts): on PostgreSQL a conversation's next
// call in the same process skips its read, and writes only on the version it kept. Two apps on one
// database stand for two replicas; whatever one does to a conversation, the other's kept row must
// not be answered from once it is out of date.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { echoAgent, slowEchoAgent } from '../helpers/agents.js';
import { databases, PG_URL } from '../helpers/databases.js';
import { ordersHandler, startBackend, testApp, type Backend } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

const postgres = databases.find((d) => d.name === 'postgres');
const T = { 'tenant-id': 'acme' };

describe.skipIf(!postgres)(`conversation rows kept by the process that wrote them${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  let drop: () => Promise<void>;
  let second: Database;
  let third: Database;
  let apps: App[] = [];
  let uncached: App;
  let backend: Backend;
  let server: Server;

  beforeAll(async () => {
    const created = await postgres!.create();
    drop = created.drop;
    second = openDatabase(created.url, { poolMax: 5 });
    third = openDatabase(created.url, { poolMax: 5, keptRowsMb: 0 });
    backend = await startBackend(ordersHandler);
    const config = { actionAllowedHosts: { '*': [`127.0.0.1:${backend.port}`] } };
    apps = [testApp(created.db, config), testApp(second, config)];
    uncached = testApp(third, config);
    // The second serves event streams, which hear the first's writes through LISTEN.
    await apps[1].startBackground();
    server = apps[1].app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    await request(apps[0].app).put('/api/v1/agents/echo').set(T).send(echoAgent).expect(200);
    await request(apps[0].app).put('/api/v1/agents/slow-echo').set(T).send(slowEchoAgent(backend.url)).expect(200);
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    for (const a of [...apps, uncached]) await a?.close();
    await second?.close();
    await third?.close();
    await backend?.close();
    await drop?.();
  });

  /** switchboard_conversation_rows_total of one app, by source. */
  async function rows(app: App): Promise<{ kept: number; database: number; stale: number }> {
    const text = (await request(app.app).get('/metrics').expect(200)).text;
    const n = (source: string) => Number(new RegExp(`^switchboard_conversation_rows_total\\{source="${source}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    return { kept: n('kept'), database: n('database'), stale: n('stale') };
  }

  const converse = (app: App, slug: string, body: object) => request(app.app).post(`/api/v1/agents/${slug}/converse`).set(T).send(body);

  it("answers a conversation's next calls in the same process from the row it wrote, without reading it", async () => {
    const id = (await converse(apps[0], 'echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    const before = await rows(apps[0]);
    for (let i = 0; i < 4; i++) {
      const r = await converse(apps[0], 'echo', { message: `m${i}`, conversation_id: id }).expect(200);
      expect(r.body.response.message).toBe(`You said: m${i}`);
    }
    const after = await rows(apps[0]);
    expect(after.kept - before.kept).toBe(4);
    expect(after.database - before.database).toBe(0);
    expect(after.stale - before.stale).toBe(0);
    // And a process that keeps nothing reads every time, with the same answers.
    const u0 = await rows(uncached);
    await converse(uncached, 'echo', { message: 'again', conversation_id: id }).expect(200);
    const u1 = await rows(uncached);
    expect([u1.kept - u0.kept, u1.database - u0.database]).toEqual([0, 1]);
  });

  it('keeps every answer right when calls alternate between two processes, and pays no read for a kept row found changed', async () => {
    const id = (await converse(apps[0], 'echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    await converse(apps[1], 'echo', { message: 'first', conversation_id: id }).expect(200);
    const before = await Promise.all(apps.map(rows));
    const said: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await converse(apps[i % 2], 'echo', { message: `a${i}`, conversation_id: id }).expect(200);
      said.push(r.body.response.message);
    }
    const after = await Promise.all(apps.map(rows));
    // Each answer is the message just sent, and the history has them all, in order.
    expect(said).toEqual([0, 1, 2, 3, 4, 5].map((i) => `You said: a${i}`));
    const history = (await request(apps[1].app).get(`/api/v1/agents/echo/conversations/${id}/history`).set(T).expect(200)).body.turns as {
      role: string;
      message: string;
    }[];
    expect(history).toHaveLength(2 + 2 + 12);
    for (let i = 0; i < 6; i++) expect(history.slice(4 + 2 * i, 6 + 2 * i).map((t) => t.message)).toEqual([`a${i}`, `You said: a${i}`]);
    // Each process's kept row was out of date at every call: refused, and the call ran again on the
    // rows the refusal answered with, not on another read.
    for (const [i, a] of after.entries()) {
      expect(a.stale - before[i].stale).toBe(3);
      expect(a.database - before[i].database).toBe(0);
    }
  });

  it('sees a change made to the row by hand, which moved no audit sequence', async () => {
    const id = (await converse(apps[0], 'echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    await converse(apps[0], 'echo', { message: 'one', conversation_id: id }).expect(200);
    // The deadline moved into the past by an operator: the kept row still has the old one.
    await second.knex('conversations').where({ id }).update({ inactive_after: '2000-01-01T00:00:00.000Z', inactive_bucket: '2000-01-01T00:0' });
    const r = await converse(apps[0], 'echo', { message: 'two', conversation_id: id });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('conversation_closed');
  });

  it('answers 404 once another process archived the agent or erased the conversation', async () => {
    await request(apps[0].app).put('/api/v1/agents/echo2').set(T).send(echoAgent).expect(200);
    const a = (await converse(apps[0], 'echo2', { message: 'echo this' }).expect(200)).body.conversation_id;
    await converse(apps[0], 'echo2', { message: 'one', conversation_id: a }).expect(200);
    await request(apps[1].app).delete('/api/v1/agents/echo2').set(T).expect(204);
    const archived = await converse(apps[0], 'echo2', { message: 'two', conversation_id: a });
    expect(archived.status).toBe(404);
    expect(archived.body.code).toBe('agent_not_found');

    const b = (await converse(apps[0], 'echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    await converse(apps[0], 'echo', { message: 'one', conversation_id: b }).expect(200);
    await request(apps[1].app).delete(`/api/v1/agents/echo/conversations/${b}`).set(T).expect(204);
    const erased = await converse(apps[0], 'echo', { message: 'two', conversation_id: b });
    expect(erased.status).toBe(404);
    expect(erased.body.code).toBe('conversation_not_found');
  });

  it('takes the lease before an action only on the version it kept, and calls the action once', async () => {
    const id = (await converse(apps[0], 'slow-echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    await converse(apps[0], 'slow-echo', { message: 'x1', conversation_id: id }).expect(200);
    // Another process moves the conversation on: the first one's kept row is out of date.
    await converse(apps[1], 'slow-echo', { message: 'x2', conversation_id: id }).expect(200);
    const calls = backend.requests.length;
    const before = await rows(apps[0]);
    const r = await converse(apps[0], 'slow-echo', { message: 'x3', conversation_id: id }).expect(200);
    expect(r.body.response.message).toBe('You said: x3');
    expect(backend.requests.slice(calls).map((q) => q.url)).toEqual(['/tick?said=x3']);
    expect((await rows(apps[0])).stale - before.stale).toBe(1);
  });

  it('keeps no row of a conversation an event stream follows, whose mark moves the row with every heartbeat', async () => {
    const id = (await converse(apps[0], 'echo', { message: 'echo this' }).expect(200)).body.conversation_id;
    const port = (server.address() as AddressInfo).port;
    const stream = await openSse(`http://127.0.0.1:${port}/api/v1/agents/echo/conversations/${id}/events`, T);
    try {
      await converse(apps[0], 'echo', { message: 'one', conversation_id: id }).expect(200);
      const before = await rows(apps[0]);
      await converse(apps[0], 'echo', { message: 'two', conversation_id: id }).expect(200);
      await converse(apps[0], 'echo', { message: 'three', conversation_id: id }).expect(200);
      const after = await rows(apps[0]);
      expect([after.kept - before.kept, after.database - before.database, after.stale - before.stale]).toEqual([0, 2, 0]);
      // The stream has the turns all the same.
      expect((await stream.take(2)).map((e) => e.event)).toEqual(['turn.created', 'turn.created']);
    } finally {
      stream.close();
    }
  });
});
