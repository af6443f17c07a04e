// The whole seed API, run on every database and through both supertest and the typed client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { echoAgent, slowEchoAgent, supportAgent } from '../helpers/agents.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { clientDriver, supertestDriver, type Driver } from '../helpers/drivers.js';
import { appFixture } from '../helpers/fixture.js';
import { ordersHandler, startBackend, type Backend } from '../helpers/servers.js';

warnIfPostgresSkipped();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MISSING = '00000000-0000-4000-8000-00000000dead';

const drivers = [
  { name: 'supertest', make: async (app: App) => supertestDriver(app) },
  { name: 'typed client', make: clientDriver },
];

eachDatabase('API on $name', (database) => {
  describe.each(drivers)('through $name', (driverKind) => {
    let api: Driver;
    let orders: Backend;
    let forbidden: Backend;

    beforeAll(async () => {
      orders = await startBackend(ordersHandler);
      forbidden = await startBackend(ordersHandler);
    });
    afterAll(async () => {
      await orders?.close();
      await forbidden?.close();
    });
    const f = appFixture(database, {
      config: () => ({ actionAllowedHosts: { acme: [`127.0.0.1:${orders.port}`] } }),
      agents: () => ({ support: supportAgent(orders.url), echo: echoAgent, 'slow-echo': slowEchoAgent(orders.url) }),
    });
    beforeAll(async () => {
      api = await driverKind.make(f.app);
    });
    afterAll(async () => api?.close());

    const start = async (message = 'where is my order', extra: Record<string, unknown> = {}, headers?: Record<string, string>) => {
      const r = await api.converse('support', { message, ...extra }, headers);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as { conversation_id: string; response: any; state: any };
    };

    describe('agents', () => {
      it('creates an agent at version 1 with stable capability ids, and an identical PUT makes no new version', async () => {
        const a = await api.putAgent('versioned', echoAgent);
        expect(a.status).toBe(200);
        expect(a.body).toMatchObject({ slug: 'versioned', name: 'Echo', version: 1, description: null });
        expect(a.body.id).toMatch(UUID);
        expect(a.body.capabilities).toEqual([{ id: expect.stringMatching(UUID), name: 'echo', description: null }]);
        const again = await api.putAgent('versioned', echoAgent);
        expect(again.body.version).toBe(1);
        const changed = await api.putAgent('versioned', { ...echoAgent, description: 'now described' });
        expect(changed.body.version).toBe(2);
        expect(changed.body.capabilities[0].id).toBe(a.body.capabilities[0].id);
        const got = await api.getAgent('versioned');
        expect(got.status).toBe(200);
        expect(got.body.version).toBe(2);
        expect(got.body.definition.description).toBe('now described');
      });

      it('lists the tenant agents and archives one: 404 for converse, its conversations stay readable', async () => {
        await api.putAgent('to-archive', echoAgent);
        const c = await api.converse('to-archive', { message: 'echo this' });
        expect(c.status).toBe(200);
        const listed = await api.listAgents();
        expect(listed.status).toBe(200);
        expect(listed.body.data.map((a: { slug: string }) => a.slug)).toEqual(expect.arrayContaining(['support', 'echo', 'to-archive']));
        expect((await api.deleteAgent('to-archive')).status).toBe(204);
        const after = await api.converse('to-archive', { message: 'echo this' });
        expect(after.status).toBe(404);
        expect(after.body.code).toBe('agent_not_found');
        expect((await api.getAgent('to-archive')).status).toBe(404);
        expect((await api.history('to-archive', c.body.conversation_id)).status).toBe(200);
        expect((await api.listAgents()).body.data.map((a: { slug: string }) => a.slug)).not.toContain('to-archive');
        expect((await api.deleteAgent('to-archive')).status).toBe(404);
      });

      it('refuses an invalid definition with every problem and its path, and stores nothing', async () => {
        const bad = {
          name: 'bad',
          capabilities: [
            {
              name: 'a',
              examples: ['x'],
              phases: [
                { id: 'p', next: 'shiped' },
                { id: 'q', call: 'nope' },
              ],
            },
          ],
        };
        const r = await api.putAgent('bad-agent', bad);
        expect(r.status).toBe(400);
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(r.body.code).toBe('validation_error');
        expect(r.body.errors).toEqual([
          { path: 'capabilities.a.phases.p.next', message: 'unknown phase "shiped"' },
          { path: 'capabilities.a.phases.q.call', message: 'unknown action "nope"' },
        ]);
        const schema = await api.putAgent('bad-agent', { name: 'bad', capabilities: [{ name: 'Bad Name', phases: [] }] });
        expect(schema.status).toBe(400);
        expect(schema.body.errors.map((e: { path: string }) => e.path)).toEqual(['capabilities[0].name', 'capabilities[0].phases']);
        expect((await api.getAgent('bad-agent')).status).toBe(404);
      });
    });

    describe('converse', () => {
      it('starts a conversation with the exact response shape', async () => {
        const r = await api.converse('support', { message: '  where is my order  ' });
        expect(r.status).toBe(200);
        expect(r.headers['x-request-id']).toBeTruthy();
        expect(r.body).toEqual({
          conversation_id: expect.stringMatching(UUID),
          response: {
            message: 'What is your order number?',
            phase: 'ask_order',
            awaiting_input: true,
            options: [{ label: "I don't know it", value: 'unknown' }],
          },
          state: { status: 'active', capability: 'order_status' },
        });
        const h = await api.history('support', r.body.conversation_id);
        expect(h.body.turns[0].message).toBe('where is my order');
      });

      it('takes the user id from the context, else from the user-id header, else none', async () => {
        const ctx = { version: 'v1', context: { identity: { user_id: 'ctx-user' } } };
        const a = await start('where is my order', { context: ctx }, { 'user-id': 'header-user' });
        const b = await start('where is my order', {}, { 'user-id': 'header-user' });
        const c = await start('where is my order');
        expect((await api.get('support', a.conversation_id)).body.user_id).toBe('ctx-user');
        expect((await api.get('support', b.conversation_id)).body.user_id).toBe('header-user');
        expect((await api.get('support', c.conversation_id)).body.user_id).toBeNull();
      });

      it('runs a whole flow: collect with retry, HTTP action, branch, completion; then 409', async () => {
        const s = await start('where is my order', { context: { version: 'v1', context: { identity: { user_id: 'u1' } } } });
        const id = s.conversation_id;
        const retry = await api.converse('support', { message: 'abc', conversation_id: id }, { 'user-id': 'u1' });
        expect(retry.body.response.message).toBe('Six digits, please.\nWhat is your order number?');
        const before = orders.requests.length;
        const done = await api.converse('support', { message: '100001', conversation_id: id });
        expect(done.body).toEqual({
          conversation_id: id,
          response: { message: 'Order 100001 shipped on 2026-11-20, eta 2026-11-25.', phase: 'shipped', awaiting_input: false, options: [] },
          state: { status: 'completed', capability: 'order_status' },
        });
        const call = orders.requests[before];
        expect(call.url).toBe('/orders/100001');
        expect(call.headers.authorization).toBe('Bearer tok-s3cret-value');

        const rec = await api.get('support', id);
        expect(rec.body).toMatchObject({
          id,
          status: 'completed',
          outcome: 'resolved',
          capability: 'order_status',
          phase: 'shipped',
          awaiting_input: false,
          agent_version: 1,
          slots: { order_id: '100001', eta: '2026-11-25' },
          completed_at: expect.stringMatching(ISO),
        });
        expect(rec.body.turns.map((t: { role: string }) => t.role)).toEqual(['user', 'agent', 'user', 'agent', 'user', 'agent']);

        const closed = await api.converse('support', { message: 'hello again', conversation_id: id });
        expect(closed.status).toBe(409);
        expect(closed.body.code).toBe('conversation_closed');
        expect((await api.history('support', id)).body.turns).toHaveLength(6);

        const audit = await api.audit('support', id, { type: 'action_call' });
        const entry = audit.body.data[0];
        expect(entry.data).toMatchObject({ action: 'get_order', outcome: 'ok', attempts: 1, response: { status: 200 } });
        expect(entry.data.request.headers.authorization).toBe('Bearer ***');
        expect(JSON.stringify(audit.body)).not.toContain('tok-s3cret-value');
        expect(entry.duration_ms).toBeGreaterThanOrEqual(0);
      });

      it('never calls a backend that is not allow-listed; the flow takes on_error and audits "blocked"', async () => {
        await api.putAgent('blocked', supportAgent(forbidden.url));
        const s = await api.converse('blocked', { message: 'where is my order' });
        const r = await api.converse('blocked', { message: '100001', conversation_id: s.body.conversation_id });
        expect(r.body.response.phase).toBe('sorry');
        expect(r.body.state.status).toBe('escalated');
        expect(forbidden.requests).toHaveLength(0);
        const audit = await api.audit('blocked', s.body.conversation_id, { type: 'action_call' });
        expect(audit.body.data[0].data).toMatchObject({ outcome: 'blocked', attempts: 1, response: null });
      });

      it('treats another user, another tenant and an unknown id alike: 404', async () => {
        const s = await start('where is my order', {}, { 'user-id': 'owner' });
        const id = s.conversation_id;
        const other = await api.converse('support', { message: '100001', conversation_id: id }, { 'user-id': 'intruder' });
        expect(other.status).toBe(404);
        expect(other.body.code).toBe('conversation_not_found');
        const foreign = await api.converse('support', { message: '100001', conversation_id: id }, { 'tenant-id': 'other-tenant' });
        expect(foreign.status).toBe(404);
        expect(foreign.body.code).toBe('agent_not_found');
        await api.putAgent('support', supportAgent(orders.url), { 'tenant-id': 'other-tenant' });
        for (const r of [
          await api.converse('support', { message: '100001', conversation_id: id }, { 'tenant-id': 'other-tenant' }),
          await api.get('support', id, { 'tenant-id': 'other-tenant' }),
          await api.history('support', id, { 'tenant-id': 'other-tenant' }),
          await api.audit('support', id, {}, { 'tenant-id': 'other-tenant' }),
          await api.get('support', MISSING),
          await api.converse('support', { message: 'x', conversation_id: MISSING }),
        ]) {
          expect(r.status).toBe(404);
          expect(r.body.code).toBe('conversation_not_found');
        }
        expect((await api.list('support', {}, { 'tenant-id': 'other-tenant' })).body.data).toEqual([]);
        // Nothing changed for the owner: the conversation still waits for the order number.
        const h = await api.history('support', id);
        expect(h.body.turns).toHaveLength(2);
        const ok = await api.converse('support', { message: '100002', conversation_id: id }, { 'user-id': 'owner' });
        expect(ok.body.response.phase).toBe('not_shipped');
      });

      it('answers 400 for bad input and stores nothing', async () => {
        const before = (await api.list('support', { limit: 100 })).body.data.length;
        const cases: [unknown, string][] = [
          [{}, 'message'],
          [{ message: '   ' }, 'message'],
          [{ message: 42 }, 'message'],
          [{ message: 'hi', conversation_id: 'not-a-uuid' }, 'conversation_id'],
          [{ message: 'hi', context: { version: 'v2' } }, 'context.version'],
          [{ message: 'x'.repeat(4001) }, 'message'],
        ];
        for (const [body, path] of cases) {
          const r = await api.converse('support', body);
          expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
          expect(r.body.code).toBe('validation_error');
          expect(r.body.errors.map((e: { path: string }) => e.path)).toContain(path);
        }
        expect((await api.list('support', { limit: 100 })).body.data.length).toBe(before);
        const badId = await api.get('support', 'nope');
        expect(badId.status).toBe(400);
        expect(badId.body.errors[0].path).toBe('path.id');
      });

      it('replays an idempotent retry without a new turn, and refuses the key with another body', async () => {
        const key = `key-${driverKind.name}`;
        const a = await api.converse('support', { message: 'where is my order' }, { 'idempotency-key': key });
        const b = await api.converse('support', { message: 'where is my order' }, { 'idempotency-key': key });
        expect(b.status).toBe(200);
        expect(b.body).toEqual(a.body);
        expect((await api.history('support', a.body.conversation_id)).body.turns).toHaveLength(2);
        const c = await api.converse('support', { message: 'something else' }, { 'idempotency-key': key });
        expect(c.status).toBe(422);
        expect(c.body.code).toBe('idempotency_mismatch');
        const cont1 = await api.converse('support', { message: '100001', conversation_id: a.body.conversation_id }, { 'idempotency-key': `${key}-2` });
        const cont2 = await api.converse('support', { message: '100001', conversation_id: a.body.conversation_id }, { 'idempotency-key': `${key}-2` });
        expect(cont2.status).toBe(200);
        expect(cont2.body).toEqual(cont1.body);
        expect((await api.history('support', a.body.conversation_id)).body.turns).toHaveLength(4);
      });

      it('applies 20 concurrent messages to one conversation one at a time, none lost', async () => {
        // Each turn makes a 15 ms HTTP call, so without the lock the turns would overlap.
        const s = await api.converse('slow-echo', { message: 'echo this' });
        const id = s.body.conversation_id;
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => api.converse('slow-echo', { message: `m${i}`, conversation_id: id })));
        expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
        for (const [i, r] of results.entries()) expect(r.body.response.message).toBe(`You said: m${i}`);
        const turns = (await api.history('slow-echo', id)).body.turns as { role: string; message: string }[];
        expect(turns).toHaveLength(42);
        for (let i = 2; i < turns.length; i += 2) {
          expect(turns[i].role).toBe('user');
          expect(turns[i + 1]).toMatchObject({ role: 'agent', message: `You said: ${turns[i].message}` });
        }
        expect(new Set(turns.filter((t) => t.role === 'user').map((t) => t.message)).size).toBe(21);
        const audit = await api.audit('slow-echo', id, { limit: 500 });
        expect(audit.body.data.map((e: { sequence: number }) => e.sequence)).toEqual(audit.body.data.map((_: unknown, i: number) => i + 1));
      });

      it('keeps a conversation on the agent version it started with', async () => {
        await api.putAgent('evolving', echoAgent);
        const s = await api.converse('evolving', { message: 'echo this' });
        const changed = structuredClone(echoAgent) as any;
        changed.capabilities[0].phases[1].say = 'Version two heard: {{ slots.said }}';
        expect((await api.putAgent('evolving', changed)).body.version).toBe(2);
        const old = await api.converse('evolving', { message: 'hello', conversation_id: s.body.conversation_id });
        expect(old.body.response.message).toBe('You said: hello');
        expect((await api.get('evolving', s.body.conversation_id)).body.agent_version).toBe(1);
        const fresh = await api.converse('evolving', { message: 'echo this' });
        const next = await api.converse('evolving', { message: 'hello', conversation_id: fresh.body.conversation_id });
        expect(next.body.response.message).toBe('Version two heard: hello');
      });

      it('replaces the context blocks a continuing request carries and keeps the others', async () => {
        const s = await start('where is my order', {
          context: {
            version: 'v1',
            context: { identity: { user_id: 'ctx' }, preferences: { language: 'es' }, customAttributes: { a: 1, __proto__: { x: 1 } } },
          },
        });
        await api.converse('support', {
          message: 'abc',
          conversation_id: s.conversation_id,
          context: { version: 'v1', context: { preferences: { language: 'en' } } },
        });
        const d = await api.get('support', s.conversation_id);
        expect(d.body.context).toEqual({
          version: 'v1',
          context: { identity: { user_id: 'ctx' }, preferences: { language: 'en' }, customAttributes: { a: 1 } },
        });
      });
    });

    describe('reads', () => {
      it('lists summaries newest first with filters and an opaque cursor', async () => {
        await api.putAgent('listing', echoAgent);
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await api.converse('listing', { message: 'echo this' }, { 'user-id': i % 2 ? 'odd' : 'even' });
          ids.push(r.body.conversation_id);
        }
        const page1 = await api.list('listing', { limit: 2 });
        expect(page1.status).toBe(200);
        expect(page1.body.data).toHaveLength(2);
        expect(page1.body.data[0]).toEqual({
          id: ids[4],
          agent_id: expect.stringMatching(UUID),
          capability_id: expect.stringMatching(UUID),
          user_id: 'even',
          status: 'active',
          outcome: null,
          created_at: expect.stringMatching(ISO),
          updated_at: expect.stringMatching(ISO),
          completed_at: null,
          capability: 'echo',
          turn_count: 2,
          channel: null,
        });
        const seen = [...page1.body.data];
        let cursor = page1.body.next_cursor;
        while (cursor) {
          const p = await api.list('listing', { limit: 2, cursor });
          seen.push(...p.body.data);
          cursor = p.body.next_cursor;
        }
        expect(seen.map((c) => c.id)).toEqual([...ids].reverse());
        const odd = await api.list('listing', { user_id: 'odd' });
        expect(odd.body.data.map((c: { id: string }) => c.id)).toEqual([ids[3], ids[1]]);
        expect((await api.list('listing', { status: 'completed' })).body.data).toEqual([]);
        expect((await api.list('listing', { capability: 'echo' })).body.data).toHaveLength(5);
        const future = await api.list('listing', { created_after: '2999-01-01T00:00:00Z' });
        expect(future.body.data).toEqual([]);
        expect((await api.list('listing', { created_before: '2999-01-01T00:00:00+02:00' })).body.data).toHaveLength(5);
        const bad = await api.list('listing', { cursor: 'garbage' });
        expect(bad.status).toBe(400);
        expect((await api.list('listing', { limit: 0 })).status).toBe(400);
        expect((await api.list('listing', { limit: 101 })).status).toBe(400);
        expect((await api.list('listing', { status: 'sleeping' })).status).toBe(400);
      });

      it('returns the history oldest first and typed audit entries in sequence, filtered and paged', async () => {
        const s = await start('where is my order');
        await api.converse('support', { message: '100002', conversation_id: s.conversation_id });
        const h = await api.history('support', s.conversation_id);
        expect(Object.keys(h.body).sort()).toEqual(
          ['agent_id', 'capability_id', 'completed_at', 'created_at', 'id', 'outcome', 'status', 'turns', 'updated_at', 'user_id'].sort(),
        );
        expect(h.body.turns[0]).toEqual({ role: 'user', message: 'where is my order', timestamp: expect.stringMatching(ISO) });
        expect(h.body.turns[1]).toMatchObject({ role: 'agent', phase: 'ask_order' });

        const all = await api.audit('support', s.conversation_id);
        expect(all.body.conversation_id).toBe(s.conversation_id);
        const types = all.body.data.map((e: { type: string }) => e.type);
        expect(types).toEqual([
          'status_change',
          'routing_decision',
          'phase_transition',
          'turn_timing',
          'phase_transition',
          'action_call',
          'phase_transition',
          'status_change',
          'turn_timing',
        ]);
        const first = all.body.data[0];
        expect(first).toEqual({
          id: expect.stringMatching(UUID),
          conversation_id: s.conversation_id,
          sequence: 1,
          turn_index: 0,
          type: 'status_change',
          request_id: expect.any(String),
          timestamp: expect.stringMatching(ISO),
          duration_ms: null,
          data: { from: null, to: 'active', reason: 'created', outcome: null },
          hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
        expect(all.body.data[4].turn_index).toBe(2);
        const timing = all.body.data[3].data;
        expect(Object.keys(timing).sort()).toEqual(['actions_ms', 'engine_ms', 'routing_ms', 'state', 'storage_ms', 'total_ms', 'turns']);
        const routing = await api.audit('support', s.conversation_id, { type: 'routing_decision' });
        expect(routing.body.data).toHaveLength(1);
        expect(routing.body.data[0].data.selected.capability).toBe('order_status');
        const p1 = await api.audit('support', s.conversation_id, { limit: 4 });
        expect(p1.body.data).toHaveLength(4);
        const p2 = await api.audit('support', s.conversation_id, { limit: 100, cursor: p1.body.next_cursor });
        expect(p2.body.data[0].sequence).toBe(5);
        expect(p2.body.next_cursor).toBeNull();
      });

      it('stores the request id of the call on its audit entries', async () => {
        const r = await api.converse('support', { message: 'where is my order' }, { 'x-request-id': `trace-${driverKind.name.replace(' ', '-')}` });
        expect(r.headers['x-request-id']).toBe(`trace-${driverKind.name.replace(' ', '-')}`);
        const audit = await api.audit('support', r.body.conversation_id);
        expect(new Set(audit.body.data.map((e: { request_id: string }) => e.request_id))).toEqual(new Set([r.headers['x-request-id']]));
      });
    });
  });
});
