// Releases on every database, on the example agent (agents/acme-support.yaml, whose release
// policy requires its tests to pass, reviewed messages to route well and a replay to change few
// outcomes) through the typed client: a draft that breaks a test is refused with the failing gate
// and its figure and changes nothing; forcing it takes a reason and is recorded; a rollback is not
// gated; a good draft gets half of new conversations, consistently per user on two app instances
// sharing the database, with its figures beside the current version's; promotion and rollback
// follow; every step is in the release record, whose hash chain verifies and catches an edit.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinition, Release } from '@switchboard/contract';
import { readTestFile } from '../../server/src/agents-loader.js';
import { startVersion } from '../../server/src/service/releases/traffic-splits.js';
import type { App } from '../../server/src/app.js';
import { ordersBackendFixture } from '../helpers/example-agent.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

warnIfPostgresSkipped();

const SLUG = 'acme-support';

/** The example agent with `change` made to a copy of it. */
const edited = (def: AgentDefinition, change: (d: AgentDefinition) => void): AgentDefinition => {
  const copy = structuredClone(def);
  change(copy);
  return copy;
};

eachDatabase('releases on $name', (database) => {
  const orders = ordersBackendFixture();
  const f = appFixture(database, { config: orders.config });
  const c = clientFixture(f);
  const api = () => request(f.app.app);
  let base: AgentDefinition;
  /** A second app on the same database: another replica. */
  let replica: App;

  beforeAll(async () => {
    base = await orders.definition();
    replica = testApp(f.db, orders.config());
  });
  afterAll(() => replica?.close());

  const say = async (message: string, opts: { user?: string; conversation_id?: string; app?: App } = {}) => {
    const r = await request((opts.app ?? f.app).app)
      .post(`/api/v1/agents/${SLUG}/converse`)
      .set('tenant-id', 'acme')
      .send({
        message,
        conversation_id: opts.conversation_id,
        ...(opts.user ? { context: { version: 'v1', context: { identity: { user_id: opts.user } } } } : {}),
      })
      .expect(200);
    const body = r.body as { conversation_id: string; state: { status: string } };
    // The version the conversation runs on, as its record says.
    const got = await api().get(`/api/v1/agents/${SLUG}/conversations/${body.conversation_id}`).set('tenant-id', 'acme').expect(200);
    return { ...body, version: got.body.agent_version as number };
  };
  const agent = async () => (await api().get(`/api/v1/agents/${SLUG}`).set('tenant-id', 'acme').expect(200)).body as { version: number; split: unknown };
  const releases = async () => {
    const r = await c.sb.api.listReleases({ params: { slug: SLUG }, query: { limit: 100 } });
    if (r.status !== 200) throw new Error(`listReleases: ${r.status}`);
    return r.body.data;
  };
  const draft = async (def: AgentDefinition) => {
    const r = await c.sb.api.putAgent({ params: { slug: SLUG }, query: { activate: 'false' }, body: def });
    if (r.status !== 200) throw new Error(`putAgent: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.stored_version;
  };

  it('records the first version, and runs conversations for the replay gate to read', async () => {
    const put = await c.sb.api.putAgent({ params: { slug: SLUG }, query: { activate: 'true' }, body: base });
    expect(put.status).toBe(200);
    if (put.status !== 200) return;
    expect(put.body.release).toMatchObject({ sequence: 1, action: 'activate', version: 1, previous_version: null, gates: [], forced: false, key_id: null });
    const { tests } = await readTestFile('agents/acme-support.test.yaml');
    expect((await c.sb.api.putTestSuite({ params: { slug: SLUG }, body: { tests } })).status).toBe(200);
    const o = await say('where is my order');
    expect((await say('100001', { conversation_id: o.conversation_id })).state.status).toBe('completed');
    await say('talk to a human');
    await say('billing question');
  });

  let failedEvaluation: string;

  it('refuses a draft that breaks a test, with the failing gate and its figure, and changes nothing', async () => {
    const broken = edited(base, (d) => {
      const phase = d.capabilities.find((x) => x.name === 'order_status')!.phases.find((p) => p.id === 'shipped')!;
      phase.say = { ...(phase.say as Record<string, string>), en: 'Your order is on its way.' };
    });
    const v2 = await draft(broken);
    expect(v2).toBe(2);
    const r = await c.sb.api.activateVersion({ params: { slug: SLUG, version: v2 } });
    expect(r.status).toBe(409);
    if (r.status !== 409) return;
    expect(r.body.code).toBe('release_gates_failed');
    expect(r.body.detail).toMatch(/fails 1 release gate: tests/);
    const tests = r.body.gates!.find((g) => g.gate === 'tests')!;
    expect(tests).toMatchObject({ passed: false, evidence: 9, limit: 1, current: 1 });
    expect(tests.figure).toBeCloseTo(8 / 9, 3);
    expect(tests.detail).toBe('tests: 8 of 9 pass (all must); failing: shipped order');
    // The other gates passed, each with its figure and evidence.
    expect(r.body.gates!.filter((g) => g.gate !== 'tests').every((g) => g.passed)).toBe(true);
    const replay = r.body.gates!.find((g) => g.gate === 'replay_changed_outcomes')!;
    expect(replay).toMatchObject({ figure: 0, limit: 0.02 });
    expect(replay.evidence).toBeGreaterThanOrEqual(3);
    expect(r.body.gates!.find((g) => g.gate === 'labelled_accuracy')).toMatchObject({ passed: true, evidence: 0 });
    failedEvaluation = r.body.evaluation_id!;
    // Nothing changed: the same version is current, the record has its one step.
    expect((await agent()).version).toBe(1);
    expect(await releases()).toHaveLength(1);
    // A PUT that would make it current goes through the same gates, and leaves it a draft.
    const put = await c.sb.api.putAgent({ params: { slug: SLUG }, query: { activate: 'true' }, body: broken });
    expect(put.status).toBe(409);
    if (put.status === 409) expect(put.body.detail).toMatch(/stored as draft version 2/);
    expect((await agent()).version).toBe(1);
  });

  it('refuses a host the current version never called when the policy forbids new ones', async () => {
    const elsewhere = edited(base, (d) => {
      d.actions!.get_order.url = 'https://orders.elsewhere.example/orders/{{ slots.order_id }}';
    });
    const v3 = await draft(elsewhere);
    const r = await c.sb.api.activateVersion({ params: { slug: SLUG, version: v3 } });
    expect(r.status).toBe(409);
    if (r.status !== 409) return;
    expect(r.body.gates!.find((g) => g.gate === 'new_hosts')).toMatchObject({
      passed: false,
      figure: 1,
      detail: 'new hosts (forbidden): https://orders.elsewhere.example',
    });
  });

  it('forces a release only with a reason, reusing the evaluation, and records the failed gates', async () => {
    const noReason = await api().post(`/api/v1/agents/${SLUG}/versions/2/activate?force=true`).set('tenant-id', 'acme').expect(400);
    expect(noReason.body.errors).toEqual([{ path: 'query.reason', message: 'a forced release needs a reason' }]);
    const r = await c.sb.api.activateVersion({ params: { slug: SLUG, version: 2 }, query: { force: 'true', reason: 'Wording agreed with support' } });
    expect(r.status).toBe(200);
    if (r.status !== 200) return;
    expect(r.body.version).toBe(2);
    expect(r.body.release).toMatchObject({ action: 'activate', version: 2, previous_version: 1, forced: true, reason: 'Wording agreed with support' });
    // The same two versions and inputs: the evaluation that refused it is the one recorded, not run again.
    expect(r.body.release.evaluation_id).toBe(failedEvaluation);
    expect(r.body.release.gates.find((g) => g.gate === 'tests')!.passed).toBe(false);
  });

  it('rolls back to a version released before without gates', async () => {
    const r = await c.sb.api.activateVersion({ params: { slug: SLUG, version: 1 } });
    expect(r.status).toBe(200);
    if (r.status !== 200) return;
    expect(r.body.release).toMatchObject({ action: 'rollback', version: 1, previous_version: 2, gates: [], evaluation_id: null });
  });

  let good: number;
  let splitEvaluation: string | null;

  it('sends half of new users to a good draft, the same user to the same version on every replica', async () => {
    good = await draft(
      edited(base, (d) => {
        d.capabilities.find((x) => x.name === 'order_status')!.examples!.push("where's my parcel");
      }),
    );
    const r = await c.sb.api.putSplit({ params: { slug: SLUG }, body: { version: good, percent: 50 } });
    expect(r.status).toBe(200);
    if (r.status !== 200) return;
    expect(r.body.split).toMatchObject({ version: good, percent: 50 });
    expect(r.body.release).toMatchObject({ action: 'split_start', version: good, previous_version: 1, split: { version: good, percent: 50 }, forced: false });
    expect(r.body.release.gates.length).toBe(4);
    expect(r.body.release.gates.every((g) => g.passed)).toBe(true);
    splitEvaluation = r.body.release.evaluation_id;
    expect((await agent()).split).toMatchObject({ version: good, percent: 50 });

    const users = Array.from({ length: 24 }, (_, i) => `u-${i}`);
    const seen = new Map<string, number>();
    for (const [i, user] of users.entries()) {
      // Alternate replicas: each reads the split with the agent, and hashes the user alike.
      const first = await say('hello', { user, app: i % 2 ? replica : f.app });
      const again = await say('hi there', { user, app: i % 2 ? f.app : replica });
      expect(again.version, user).toBe(first.version);
      seen.set(user, first.version);
    }
    const onCandidate = [...seen.values()].filter((v) => v === good).length;
    expect(onCandidate).toBeGreaterThan(0);
    expect(onCandidate).toBeLessThan(users.length);
    for (const [user, v] of seen)
      expect(v, user).toBe(startVersion((await f.app.agents.active('acme', SLUG)).id, 1, { version: good, share: 5000, startedAt: '' }, user));
    // A running conversation keeps its version when the split moves.
    const running = await say('where is my order', { user: 'u-running' });
    const moved = await c.sb.api.putSplit({ params: { slug: SLUG }, body: { version: good, percent: 100 } });
    expect(moved.status).toBe(200);
    if (moved.status === 200) {
      expect(moved.body.release).toMatchObject({ action: 'split_change', split: { version: good, percent: 100 } });
      // Only the share changed: the evaluation is reused.
      expect(moved.body.release.evaluation_id).toBe(splitEvaluation);
    }
    expect((await say('100001', { conversation_id: running.conversation_id, app: replica })).version).toBe(running.version);
    expect((await say('hello', { user: 'u-new' })).version).toBe(good);
  });

  it("shows both versions' figures side by side, with the conversations behind each", async () => {
    const r = await c.sb.api.getAnalytics({ params: { slug: SLUG }, query: {} });
    expect(r.status).toBe(200);
    if (r.status !== 200) return;
    const byVersion = new Map(r.body.versions.map((v) => [v.version, v]));
    expect([...byVersion.keys()].sort()).toEqual([1, good].sort());
    expect(r.body.versions.reduce((n, v) => n + v.started, 0)).toBe(r.body.conversations.started);
    const candidate = byVersion.get(good)!;
    expect(candidate.started).toBeGreaterThan(0);
    expect(candidate.routed).toBeGreaterThanOrEqual(candidate.started);
    const v1 = byVersion.get(1)!;
    expect(v1.closed).toBe(v1.completed + v1.escalated + v1.abandoned);
    expect(v1.rates.containment).toBe(v1.closed ? Math.round((v1.completed / v1.closed) * 10_000) / 10_000 : null);
    const [lo, hi] = v1.intervals.containment!;
    expect(lo).toBeLessThanOrEqual(v1.rates.containment!);
    expect(hi).toBeGreaterThanOrEqual(v1.rates.containment!);
    const metrics = (await api().get('/metrics').expect(200)).text;
    expect(metrics).toMatch(new RegExp(`switchboard_conversations_started_total\\{tenant="acme",agent="${SLUG}",version="${good}"\\} [1-9]`));
  });

  it('promotes the candidate through the gates, then rolls back, each a step of the record', async () => {
    const p = await c.sb.api.promoteSplit({ params: { slug: SLUG } });
    expect(p.status).toBe(200);
    if (p.status !== 200) return;
    expect(p.body).toMatchObject({ version: good, split: null });
    expect(p.body.release).toMatchObject({ action: 'promote', version: good, previous_version: 1, split: null, evaluation_id: splitEvaluation });
    const noSplit = await c.sb.api.promoteSplit({ params: { slug: SLUG } });
    expect(noSplit.status).toBe(409);
    if (noSplit.status === 409) expect(noSplit.body.code).toBe('no_split');
    expect((await c.sb.api.endSplit({ params: { slug: SLUG } })).status).toBe(409);
    const back = await c.sb.api.activateVersion({ params: { slug: SLUG, version: 1 }, query: { reason: 'Escalations went up' } });
    expect(back.status).toBe(200);
    if (back.status === 200) expect(back.body.release).toMatchObject({ action: 'rollback', reason: 'Escalations went up' });
  });

  it('ends a split in one call, recorded with its reason', async () => {
    expect((await c.sb.api.putSplit({ params: { slug: SLUG }, body: { version: good, percent: 10 } })).status).toBe(200);
    const r = await c.sb.api.endSplit({ params: { slug: SLUG }, query: { reason: 'Seen enough' } });
    expect(r.status).toBe(200);
    if (r.status !== 200) return;
    expect(r.body).toMatchObject({ split: null, release: { action: 'split_end', version: good, split: null, reason: 'Seen enough', gates: [] } });
    expect((await say('hello', { user: 'u-after' })).version).toBe(1);
  });

  it('lists every step newest first, and its hash chain verifies and catches an edit', async () => {
    const steps = await releases();
    expect(steps.map((s: Release) => [s.sequence, s.action, s.version])).toEqual([
      [9, 'split_end', good],
      [8, 'split_start', good],
      [7, 'rollback', 1],
      [6, 'promote', good],
      [5, 'split_change', good],
      [4, 'split_start', good],
      [3, 'rollback', 1],
      [2, 'activate', 2],
      [1, 'activate', 1],
    ]);
    expect(steps.every((s: Release) => s.request_id.length > 0 && /^[0-9a-f]{64}$/.test(s.hash))).toBe(true);
    const page = await c.sb.api.listReleases({ params: { slug: SLUG }, query: { limit: 4 } });
    expect(page.status).toBe(200);
    if (page.status === 200) {
      const next = await c.sb.api.listReleases({ params: { slug: SLUG }, query: { limit: 4, cursor: page.body.next_cursor! } });
      expect(next.status === 200 && next.body.data.map((s) => s.sequence)).toEqual([5, 4, 3, 2]);
    }
    const ok = await c.sb.api.verifyReleases({ params: { slug: SLUG } });
    expect(ok.body).toEqual({ entries: 9, keyed_entries: 0, valid: true, first_broken: null });

    // Someone with the database rewrites who forced version 2, and why.
    const row = await f.db.knex('release_records').where({ tenant_id: 'acme', sequence: 2 }).first();
    await f.db
      .knex('release_records')
      .where({ id: row.id })
      .update({ data: String(row.data).replace('Wording agreed with support', 'Approved by the CTO') });
    const broken = await c.sb.api.verifyReleases({ params: { slug: SLUG } });
    expect(broken.body).toMatchObject({ valid: false, first_broken: { sequence: 2, reason: 'data_mismatch' } });
    await f.db.knex('release_records').where({ id: row.id }).update({ data: row.data });
    expect((await c.sb.api.verifyReleases({ params: { slug: SLUG } })).body).toMatchObject({ valid: true });
  });

  it('refuses bad splits and hides releases from another tenant', async () => {
    const current = await api().put(`/api/v1/agents/${SLUG}/split`).set('tenant-id', 'acme').send({ version: 1, percent: 50 }).expect(400);
    expect(current.body.errors).toEqual([{ path: 'version', message: 'must not be the current version' }]);
    await api().put(`/api/v1/agents/${SLUG}/split`).set('tenant-id', 'acme').send({ version: 99, percent: 50 }).expect(404);
    await api().put(`/api/v1/agents/${SLUG}/split`).set('tenant-id', 'acme').send({ version: good, percent: 101 }).expect(400);
    await api().put(`/api/v1/agents/${SLUG}/split`).set('tenant-id', 'acme').send({ version: good, percent: 50, force: true }).expect(400);
    expect((await agent()).split).toBeNull();
    await api().get(`/api/v1/agents/${SLUG}/releases`).set('tenant-id', 'other').expect(404);
    await api().get(`/api/v1/agents/${SLUG}/releases/verify`).set('tenant-id', 'other').expect(404);
    await api().delete(`/api/v1/agents/${SLUG}/split`).set('tenant-id', 'other').expect(404);
  });
});

eachDatabase('releasing an archived agent on $name', (database) => {
  const f = appFixture(database);
  it('brings it back with a PUT, recorded, with no gates to judge against: nothing runs on it', async () => {
    const api = () => request(f.app.app);
    const shop = (say: string) => ({
      name: 'Shop',
      capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say }] }],
      release: { require: { tests: 'pass' } },
    });
    await api().put('/api/v1/agents/shop').set('tenant-id', 'acme').send(shop('Number?')).expect(200);
    await api()
      .put('/api/v1/agents/shop/test-suite')
      .set('tenant-id', 'acme')
      .send({ tests: [{ name: 'asks', steps: [{ user: 'where is my order', expect: { reply: 'Number?' } }] }] })
      .expect(200);
    // Live, a version that breaks the test is refused.
    await api().put('/api/v1/agents/shop').set('tenant-id', 'acme').send(shop('Which?')).expect(409);
    await api().delete('/api/v1/agents/shop').set('tenant-id', 'acme').expect(204);
    const back = await api().put('/api/v1/agents/shop').set('tenant-id', 'acme').send(shop('Which one?')).expect(200);
    expect(back.body).toMatchObject({ version: 3, stored_version: 3, release: { action: 'activate', version: 3, previous_version: 1, gates: [] } });
  });
});

describe('releases with API keys', () => {
  eachDatabase('on $name', (database) => {
    const f = appFixture(database, { config: { authMode: 'api_key' } });
    it('records the key that released, and refuses a key without the admin scope', async () => {
      const admin = await f.app.keys.create('acme', ['admin', 'read', 'converse']);
      const reader = await f.app.keys.create('acme', ['read', 'converse']);
      const as = (key: string) => ({ authorization: `Bearer ${key}`, 'tenant-id': 'acme' });
      const api = () => request(f.app.app);
      const shop = (say: string) => ({
        name: 'Shop',
        capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say }] }],
      });
      const first = await api().put('/api/v1/agents/shop').set(as(admin.key)).send(shop('Number?')).expect(200);
      expect(first.body.release).toMatchObject({ action: 'activate', key_id: admin.id, actor: { kind: 'key', id: admin.id } });
      await api().put('/api/v1/agents/shop?activate=false').set(as(admin.key)).send(shop('Your number?')).expect(200);
      await api().put('/api/v1/agents/shop/split').set(as(reader.key)).send({ version: 2, percent: 20 }).expect(403);
      await api().post('/api/v1/agents/shop/versions/2/activate').set(as(reader.key)).expect(403);
      const split = await api().put('/api/v1/agents/shop/split').set(as(admin.key)).send({ version: 2, percent: 20 }).expect(200);
      expect(split.body.release).toMatchObject({ action: 'split_start', key_id: admin.id, gates: [] });
      const listed = await api().get('/api/v1/agents/shop/releases').set(as(reader.key)).expect(200);
      expect(listed.body.data.map((s: Release) => s.key_id)).toEqual([admin.id, admin.id]);
    });
  });
});
