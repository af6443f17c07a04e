// The status model of PRODUCT.md §3, operator endpoints, erasure and retention, events and
// webhooks, on every database, with a clock the test moves.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import type { App } from '../../server/src/app.js';
import { FakeClock } from '../helpers/clock.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function agent(hookUrl: string): AgentDefinitionInput {
  return {
    name: 'Lifecycle',
    inactivity_timeout_seconds: 60,
    webhooks: [{ url: hookUrl, events: ['conversation.completed', 'conversation.escalated', 'conversation.abandoned'], secret_name: 'HOOKS' }],
    capabilities: [
      {
        name: 'ask',
        examples: ['I have a question', 'question please'],
        phases: [
          { id: 'q', say: 'Ask away.', collect: { slot: 'q' } },
          { id: 'a', say: 'Noted: {{ slots.q }}' },
        ],
      },
      { name: 'wait', examples: ['hold on a moment', 'wait please'], phases: [{ id: 'hold', say: 'Waiting for you.', end: 'paused' }] },
      { name: 'human', examples: ['talk to a human', 'real person please'], phases: [{ id: 'handoff', say: 'Handing over.', end: 'escalated' }] },
      { name: 'bye', examples: ['goodbye', 'bye bye'], phases: [{ id: 'farewell', say: 'Bye!', end: 'completed', outcome: 'said_goodbye' }] },
    ],
  };
}

eachDatabase('lifecycle on $name', (database) => {
  let app: App;
  const clock = new FakeClock();
  let hooks: Backend;
  /** Receiver failures to answer, per conversation. */
  const failFor = new Map<string, number>();
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    hooks = await startBackend((_req, res, body) => {
      const id = JSON.parse(body).data.conversation_id;
      const n = failFor.get(id) ?? 0;
      if (n > 0) {
        failFor.set(id, n - 1);
        return json(res, 500, { error: 'not now' });
      }
      json(res, 204, {});
    });
  });
  afterAll(async () => hooks?.close());
  const f = appFixture(database, {
    config: () => ({
      actionAllowedHosts: { '*': [`127.0.0.1:${hooks.port}`] },
      secrets: { HOOKS: { value: SECRET, tenants: ['*'] } },
      sseHeartbeatMs: 200,
      retention: { days: 30, tenants: { shortlived: 1 }, idempotencyHours: 24, historyDays: 0 },
    }),
    agents: () => ({ life: agent(`${hooks.url}/hooks`) }),
    clock,
  });
  beforeAll(async () => {
    app = f.app;
    await app.startBackground();
    server = app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  const say = (message: string, conversation_id?: string, tenant = T) =>
    request(app.app).post('/api/v1/agents/life/converse').set(tenant).send({ message, conversation_id });
  const get = (id: string) =>
    request(app.app)
      .get(`/api/v1/agents/life/conversations/${id}`)
      .set(T)
      .then((r) => r.body);
  const audit = (id: string, type?: string) =>
    request(app.app)
      .get(`/api/v1/agents/life/conversations/${id}/audit-logs`)
      .query(type ? { type, limit: 500 } : { limit: 500 })
      .set(T)
      .then((r) => r.body.data as any[]);
  const setStatus = (id: string, body: object) => request(app.app).post(`/api/v1/agents/life/conversations/${id}/status`).set(T).send(body);
  const deliveries = (q: object = {}) =>
    request(app.app)
      .get('/api/v1/agents/life/webhook-deliveries')
      .query(q)
      .set(T)
      .then((r) => r.body);

  describe('abandonment', () => {
    it('abandons an active conversation after the inactivity timeout, once', async () => {
      const id = (await say('I have a question')).body.conversation_id;
      clock.advance(59_000);
      expect((await app.lifecycle.sweep()).abandoned).toBe(0);
      clock.advance(2_000);
      const first = await app.lifecycle.sweep();
      expect(first.abandoned).toBeGreaterThanOrEqual(1);
      const c = await get(id);
      expect(c).toMatchObject({ status: 'abandoned', outcome: 'abandoned', completed_at: clock.now().toISOString() });
      const changes = (await audit(id, 'status_change')).map((e) => e.data);
      expect(changes[changes.length - 1]).toEqual({ from: 'active', to: 'abandoned', reason: 'inactivity', outcome: 'abandoned' });
      expect((await app.lifecycle.sweep()).abandoned).toBe(0);
      expect((await audit(id, 'status_change')).filter((e) => e.data.reason === 'inactivity')).toHaveLength(1);
    });

    it('answers 409 to a message after the deadline, even before the sweep, and never revives it', async () => {
      const id = (await say('hold on a moment')).body.conversation_id;
      expect((await get(id)).status).toBe('paused');
      clock.advance(61_000);
      const late = await say('I am back', id);
      expect(late.status).toBe(409);
      expect(late.body.code).toBe('conversation_closed');
      const c = await get(id);
      expect(c.status).toBe('abandoned');
      expect(c.turns).toHaveLength(2);
      expect((await audit(id, 'status_change')).at(-1).data).toMatchObject({ from: 'paused', to: 'abandoned', reason: 'inactivity' });
    });

    it('restarts the inactivity clock with every user turn', async () => {
      const id = (await say('I have a question')).body.conversation_id;
      clock.advance(50_000);
      await say('what is the answer', id).expect(200);
      clock.advance(50_000);
      await app.lifecycle.sweep();
      expect((await get(id)).status).toBe('active');
    });
  });

  describe('pause, escalation and operators', () => {
    it('resumes a paused conversation on the next user message, audited', async () => {
      const id = (await say('hold on a moment')).body.conversation_id;
      const r = await say('goodbye', id);
      expect(r.body.state.status).toBe('completed');
      const changes = (await audit(id, 'status_change')).map((e) => `${e.data.from}>${e.data.to}:${e.data.reason}`);
      expect(changes).toEqual(['null>active:created', 'active>paused:flow_end', 'paused>active:user_message', 'active>completed:flow_end']);
    });

    it('lets operators pause and resume, and refuses moves the table does not allow with 409', async () => {
      const id = (await say('I have a question')).body.conversation_id;
      const paused = await setStatus(id, { status: 'paused' });
      expect(paused.status).toBe(200);
      expect(paused.body).toMatchObject({ id, status: 'paused', outcome: null });
      expect((await setStatus(id, { status: 'escalated' })).body.code).toBe('invalid_transition');
      expect((await setStatus(id, { status: 'paused' })).status).toBe(409);
      expect((await setStatus(id, { status: 'active' })).body.status).toBe('active');
      expect((await audit(id, 'status_change')).at(-1).data).toEqual({
        from: 'paused',
        to: 'active',
        reason: 'operator',
        outcome: null,
        actor: { kind: 'gateway' },
      });
      expect((await setStatus(id, { status: 'sleeping' })).status).toBe(400);
    });

    it('hands an escalated conversation to a human: user turns recorded, operators answer and close it', async () => {
      const id = (await say('talk to a human')).body.conversation_id;
      const waiting = await say('hello? anyone?', id);
      expect(waiting.body.response).toMatchObject({ message: 'A colleague will take over here shortly.', awaiting_input: true });
      expect(waiting.body.state.status).toBe('escalated');
      const op = await request(app.app)
        .post(`/api/v1/agents/life/conversations/${id}/messages`)
        .set(T)
        .send({ message: 'Hi, Sam here. How can I help?', author: 'sam' });
      expect(op.status).toBe(201);
      expect(op.body).toMatchObject({ conversation_id: id, turn_index: 4, turn: { role: 'agent', message: 'Hi, Sam here. How can I help?', author: 'sam' } });
      // Once a person has answered, the agent says nothing automatic to the user's next messages.
      const after = await say('my order is late', id);
      expect(after.body.response).toMatchObject({ message: '', awaiting_input: true });
      expect(after.body.state.status).toBe('escalated');
      expect((await setStatus(id, { status: 'paused' })).body.code).toBe('invalid_transition');
      const done = await setStatus(id, { status: 'completed', outcome: 'refund_issued' });
      expect(done.body).toMatchObject({ status: 'completed', outcome: 'refund_issued', completed_at: expect.any(String) });
      const turns = (await get(id)).turns;
      expect(turns.map((t: { role: string; author?: string }) => `${t.role}${t.author ? `:${t.author}` : ''}`)).toEqual([
        'user',
        'agent',
        'user',
        'agent',
        'agent:sam',
        'user',
        'agent',
      ]);
      expect((await say('thanks', id)).status).toBe(409);
      const late = await request(app.app).post(`/api/v1/agents/life/conversations/${id}/messages`).set(T).send({ message: 'one more thing' });
      expect(late.body.code).toBe('conversation_closed');
      expect((await setStatus(id, { status: 'active' })).body.code).toBe('invalid_transition');
    });
  });

  describe('webhooks', () => {
    const sentFor = (id: string) => hooks.requests.filter((r) => JSON.parse(r.body).data.conversation_id === id);
    const deliveryOf = async (id: string, event: string) => (await deliveries({ conversation_id: id })).data.find((d: { event: string }) => d.event === event);

    it('delivers a signed event from the outbox, retrying with backoff, every attempt recorded', async () => {
      const id = (await say('goodbye')).body.conversation_id;
      failFor.set(id, 2);
      expect(await deliveryOf(id, 'conversation.completed')).toMatchObject({ status: 'pending', attempts: 0, url: `${hooks.url}/hooks` });
      await app.webhooks.runOnce();
      expect(await deliveryOf(id, 'conversation.completed')).toMatchObject({ status: 'pending', attempts: 1, last_status: 500 });
      await app.webhooks.runOnce(); // not due again yet
      expect((await deliveryOf(id, 'conversation.completed')).attempts).toBe(1);
      clock.advance(5_000);
      await app.webhooks.runOnce();
      expect((await deliveryOf(id, 'conversation.completed')).attempts).toBe(2);
      clock.advance(30_000);
      await app.webhooks.runOnce();
      const got = sentFor(id);
      expect(got).toHaveLength(3);
      const last = got[2];
      // Signed per Standard Webhooks over id, timestamp and body (the test clock is not the wall clock, so recompute rather than verify()).
      const at = new Date(Number(last.headers['webhook-timestamp']) * 1000);
      expect(last.headers['webhook-signature']).toBe(new Webhook(SECRET).sign(String(last.headers['webhook-id']), at, last.body));
      expect(at.toISOString()).toBe(clock.now().toISOString());
      const verified = JSON.parse(last.body) as { type: string; data: { conversation_id: string; outcome: string } };
      expect(verified.type).toBe('conversation.completed');
      expect(verified.data).toMatchObject({ conversation_id: id, outcome: 'said_goodbye', status: 'completed' });
      expect(got[0].headers['webhook-id']).toBe(got[2].headers['webhook-id']);
      const done = await deliveryOf(id, 'conversation.completed');
      expect(done).toMatchObject({ status: 'delivered', attempts: 3, last_status: 204, delivered_at: expect.any(String) });
      expect(done.history.map((h: { status: number }) => h.status)).toEqual([500, 500, 204]);
      const first = await deliveries({ limit: 1 });
      expect(first.data).toHaveLength(1);
      const second = await deliveries({ limit: 1, cursor: first.next_cursor });
      expect(second.data[0].id).not.toBe(first.data[0].id);
      expect(second.data[0].created_at <= first.data[0].created_at).toBe(true);
      expect((await request(app.app).get('/api/v1/agents/life/webhook-deliveries').query({ cursor: 'nope' }).set(T)).status).toBe(400);
    });

    it('delivers the events of one conversation in order, holding later ones back', async () => {
      const id = (await say('talk to a human')).body.conversation_id;
      await setStatus(id, { status: 'completed' }).expect(200);
      failFor.set(id, 1);
      await app.webhooks.runOnce();
      expect(await deliveryOf(id, 'conversation.completed')).toMatchObject({ status: 'pending', attempts: 0 });
      clock.advance(5_000);
      await app.webhooks.runOnce();
      await app.webhooks.runOnce();
      expect(sentFor(id).map((r) => JSON.parse(r.body).type)).toEqual(['conversation.escalated', 'conversation.escalated', 'conversation.completed']);
    });

    it('gives up after the last backoff step, more than 24 hours on', async () => {
      const id = (await say('goodbye')).body.conversation_id;
      failFor.set(id, 1000);
      const started = clock.now().getTime();
      for (let i = 0; i < 20; i++) {
        await app.webhooks.runOnce();
        clock.advance(12 * 3_600_000);
      }
      const d = await deliveryOf(id, 'conversation.completed');
      expect(d.status).toBe('failed');
      expect(d.attempts).toBe(12);
      expect(Date.parse(d.history.at(-1).at) - started).toBeGreaterThan(24 * 3_600_000);
    });

    it('never calls a receiver the address rules refuse', async () => {
      const stranger = await startBackend((_q, res) => json(res, 200, {}));
      try {
        await request(app.app)
          .put('/api/v1/agents/blocked-hooks')
          .set(T)
          .send(agent(`${stranger.url}/hooks`))
          .expect(200);
        await request(app.app).post('/api/v1/agents/blocked-hooks/converse').set(T).send({ message: 'goodbye' }).expect(200);
        await app.webhooks.runOnce();
        expect(stranger.requests).toHaveLength(0);
        const d = await request(app.app).get('/api/v1/agents/blocked-hooks/webhook-deliveries').set(T);
        expect(d.body.data[0]).toMatchObject({ status: 'pending', attempts: 1, last_status: null, last_error: expect.stringMatching(/not reachable/) });
      } finally {
        await stranger.close();
      }
    });
  });

  describe('events', () => {
    it('streams turn, phase and status events with ids, resumable with Last-Event-ID', async () => {
      const id = (await say('I have a question')).body.conversation_id;
      const url = `${baseUrl}/api/v1/agents/life/conversations/${id}/events`;
      const stream = await openSse(url, T);
      expect(stream.status).toBe(200);
      expect(stream.contentType).toMatch(/^text\/event-stream/);
      await say('why is the sky blue', id).expect(200);
      const events = await stream.take(3);
      expect(events.map((e) => e.event)).toEqual(['turn.created', 'turn.created', 'phase.changed']);
      expect(JSON.parse(events[0].data!)).toMatchObject({ index: 2, role: 'user', message: 'why is the sky blue' });
      expect(JSON.parse(events[2].data!)).toEqual({ capability: 'ask', from: 'q', to: 'a' });
      const ping = await stream.next(2000);
      expect(ping?.comment).toBe('ping');
      stream.close();

      await say('goodbye', id).expect(200);
      const resumed = await openSse(url, { ...T, 'last-event-id': events[2].id! });
      const replay = await resumed.take(4);
      expect(replay.map((e) => e.event)).toEqual(['turn.created', 'turn.created', 'phase.changed', 'status.changed']);
      expect(replay[0].id).toMatch(/^\d+-0$/);
      expect(Number(replay[0].id!.split('-')[0])).toBeGreaterThan(Number(events[2].id!.split('-')[0]));
      expect(events.map((e) => e.id!.split('-')[1])).toEqual(['0', '1', '2']);
      expect(JSON.parse(replay[3].data!)).toMatchObject({ from: 'active', to: 'completed' });
      resumed.close();
    });

    it('answers 404 for a conversation of another tenant', async () => {
      const id = (await say('I have a question')).body.conversation_id;
      const r = await request(app.app).get(`/api/v1/agents/life/conversations/${id}/events`).set({ 'tenant-id': 'other' });
      expect(r.status).toBe(404);
    });
  });

  describe('erasure and retention', () => {
    it('erases a conversation: turns, slots, context and user id go, an audit skeleton stays', async () => {
      const id = (
        await request(app.app)
          .post('/api/v1/agents/life/converse')
          .set(T)
          .send({ message: 'I have a question', context: { version: 'v1', context: { identity: { user_id: 'ana', user_email: 'ana@example.com' } } } })
      ).body.conversation_id;
      await say('my card number is 4111-1111-1111-1111', id).expect(200);
      expect((await request(app.app).delete(`/api/v1/agents/life/conversations/${id}`).set(T)).status).toBe(204);
      const c = await get(id);
      expect(c).toMatchObject({ id, user_id: null, turns: [], slots: {}, context: null, erased_at: expect.any(String) });
      const h = await request(app.app).get(`/api/v1/agents/life/conversations/${id}/history`).set(T);
      expect(h.body.turns).toEqual([]);
      const a = await audit(id);
      expect(a.map((e) => e.type)).toContain('routing_decision');
      expect(JSON.stringify(a)).not.toMatch(/4111-1111|ana@example.com/);
      expect((await say('hello again', id)).status).toBe(404);
      expect((await request(app.app).delete(`/api/v1/agents/life/conversations/${id}`).set(T)).status).toBe(404);
    });

    it("erases every conversation of one user of the tenant, and no other tenant's", async () => {
      const ctx = (u: string) => ({ version: 'v1', context: { identity: { user_id: u } } });
      const mine = [];
      for (let i = 0; i < 2; i++)
        mine.push(
          (
            await request(app.app)
              .post('/api/v1/agents/life/converse')
              .set(T)
              .send({ message: 'I have a question', context: ctx('bob') })
          ).body.conversation_id,
        );
      const other = (
        await request(app.app)
          .post('/api/v1/agents/life/converse')
          .set(T)
          .send({ message: 'I have a question', context: ctx('carol') })
      ).body.conversation_id;
      await request(app.app)
        .put('/api/v1/agents/life')
        .set({ 'tenant-id': 'elsewhere' })
        .send(agent(`${hooks.url}/hooks`))
        .expect(200);
      const foreign = (
        await request(app.app)
          .post('/api/v1/agents/life/converse')
          .set({ 'tenant-id': 'elsewhere' })
          .send({ message: 'I have a question', context: ctx('bob') })
      ).body.conversation_id;
      const r = await request(app.app).delete('/api/v1/users/bob/conversations').set(T);
      expect(r.body).toEqual({ erased: 2 });
      for (const id of mine) expect((await get(id)).erased_at).toEqual(expect.any(String));
      expect((await get(other)).user_id).toBe('carol');
      const f = await request(app.app).get(`/api/v1/agents/life/conversations/${foreign}`).set({ 'tenant-id': 'elsewhere' });
      expect(f.body).toMatchObject({ user_id: 'bob', erased_at: null });
    });

    it('erases closed conversations after the retention period, per tenant or globally', async () => {
      const short = { 'tenant-id': 'shortlived' };
      await request(app.app)
        .put('/api/v1/agents/life')
        .set(short)
        .send(agent(`${hooks.url}/hooks`))
        .expect(200);
      const a = (await say('goodbye', undefined, short)).body.conversation_id;
      const b = (await say('goodbye')).body.conversation_id;
      const open = (await say('I have a question', undefined, short)).body.conversation_id;
      clock.advance(2 * 86_400_000);
      const r = await app.lifecycle.sweep();
      expect(r.erased).toBeGreaterThanOrEqual(1);
      const read = (id: string, t: Record<string, string>) =>
        request(app.app)
          .get(`/api/v1/agents/life/conversations/${id}`)
          .set(t)
          .then((x) => x.body);
      expect((await read(a, short)).erased_at).toEqual(expect.any(String));
      expect((await read(b, T)).erased_at).toBeNull();
      // The open one was abandoned for inactivity by that sweep, and is erased a day later.
      expect((await read(open, short)).status).toBe('abandoned');
      clock.advance(86_400_000 + 1000);
      await app.lifecycle.sweep();
      expect((await read(open, short)).erased_at).toEqual(expect.any(String));
      clock.advance(30 * 86_400_000);
      await app.lifecycle.sweep();
      expect((await read(b, T)).erased_at).toEqual(expect.any(String));
    });

    it('keeps idempotency records for IDEMPOTENCY_TTL_HOURS, then the sweep deletes them', async () => {
      const keyed = (key: string) =>
        request(app.app)
          .post('/api/v1/agents/life/converse')
          .set({ ...T, 'idempotency-key': key })
          .send({ message: 'hello' });
      const first = (await keyed('ttl-key').expect(200)).body;
      const count = async () => Number((await f.db.knex('idempotency_keys').where({ tenant_id: 'acme' }).count({ n: '*' }))[0].n);
      const before = await count();
      clock.advance(23 * 3_600_000);
      await app.lifecycle.sweep();
      expect(await count()).toBe(before);
      expect((await keyed('ttl-key').expect(200)).body).toEqual(first);
      clock.advance(2 * 3_600_000);
      expect((await app.lifecycle.sweep()).expiredKeys).toBeGreaterThanOrEqual(1);
      expect(await count()).toBe(0);
      // The key is free again: a new conversation.
      expect((await keyed('ttl-key').expect(200)).body.conversation_id).not.toBe(first.conversation_id);
    });
  });
});
