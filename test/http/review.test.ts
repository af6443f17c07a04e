// The review inbox and evaluations on every database, on the example agent (agents/acme-support.yaml)
// through the typed client: messages that miss are found as their turns are written and grouped,
// two are added as examples and one as out of scope into a draft (with a diff), the draft is
// evaluated beside the current version and routes them as the reviewers said; erased
// conversations leave the inbox, another tenant sees nothing, and bad actions change nothing.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { ordersBackendFixture } from '../helpers/example-agent.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const SLUG = 'acme-support';

eachDatabase('the review inbox and evaluations on $name', (database) => {
  const orders = ordersBackendFixture();
  const f = appFixture(database, { config: orders.config });
  const c = clientFixture(f);
  const api = () => request(f.app.app);
  const say = async (message: string, conversation_id?: string) => {
    const r = await c.sb.api.converse({ params: { slug: SLUG }, body: { message, conversation_id } });
    if (r.status !== 200) throw new Error(`"${message}": ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const inbox = async (query: Record<string, string | number> = {}) => {
    const r = await c.sb.api.listReview({ params: { slug: SLUG }, query: query as never });
    expect(r.status).toBe(200);
    if (r.status !== 200) throw new Error('listReview failed');
    return r.body;
  };
  const current = async () => (await api().get(`/api/v1/agents/${SLUG}`).set('tenant-id', 'acme').expect(200)).body.version as number;
  const versions = async () => (await api().get(`/api/v1/agents/${SLUG}/versions`).set('tenant-id', 'acme').expect(200)).body.data.length as number;

  beforeAll(async () => {
    const definition = await orders.definition();
    await f.app.agents.put('acme', SLUG, definition);
  });

  let weather: string;
  let erasable: string;

  it('finds the messages that miss as their turns are written, grouped, with counts by reason', async () => {
    weather = (await say("What's the weather like?")).conversation_id;
    await say("what's the weather like");
    erasable = (await say('can you recommend a good restaurant nearby')).conversation_id;
    await say('I never got the things I paid for');
    await say('where is the stuff I bought');
    // A slot answered wrongly until max_attempts: the last answer is a finding, and the conversation escalates.
    const o = await say('where is my order');
    await say('no idea', o.conversation_id);
    await say('still no idea', o.conversation_id);
    expect((await say('I do not know it', o.conversation_id)).state.status).toBe('escalated');
    // Escalated the turn after the routing (the order system fails): the routed message is a finding.
    const down = await say('has my order shipped');
    expect((await say('999999', down.conversation_id)).state.status).toBe('escalated');
    // Left mid-flow for another capability: the message that chose the flow is a finding.
    const left = await say('track my package');
    expect((await say('let me talk to someone', left.conversation_id)).state.capability).toBe('human');
    // Said again right after the reply.
    const again = await say('billing question');
    await say('a billing question please', again.conversation_id);

    const page = await inbox();
    const find = (reason: string, re: RegExp) => page.data.find((i) => i.reason === reason && re.test(i.message));
    const w = find('fallback', /weather/)!;
    expect(w).toMatchObject({ status: 'open', count: 2, capability: 'fallback', action: null });
    expect(w.occurrences).toHaveLength(2);
    expect(w.occurrences[0]).toMatchObject({ version: 1, turn_index: 0, message: "what's the weather like" });
    expect(w.occurrences[0].detail).toMatchObject({ routing_reason: 'background' });
    // The occurrence points at the routing decision in the audit log.
    const entry = (await api().get(`/api/v1/agents/${SLUG}/conversations/${weather}/audit-logs`).set('tenant-id', 'acme').expect(200)).body.data.find(
      (e: { sequence: number }) => e.sequence === w.occurrences[1].audit_sequence,
    );
    expect(entry.type).toBe('routing_decision');
    expect(find('slot_failed', /I do not know it/)).toMatchObject({ capability: 'order_status', count: 1 });
    expect(find('escalated', /has my order shipped/)!.occurrences[0].detail).toMatchObject({ turns_after: 1, escalation_reason: 'flow_end' });
    expect(find('switched', /track my package/)!.occurrences[0].detail).toMatchObject({ from: 'order_status', to: 'human' });
    expect(find('rephrased', /billing question/)!.occurrences[0].detail).toMatchObject({ next_message: 'a billing question please' });
    // A hand-off asked for is no finding: "let me talk to someone" routed where it meant to.
    expect(page.data.some((i) => /talk to someone/.test(i.message))).toBe(false);
    expect(page.counts.slot_failed).toEqual({ items: 1, messages: 1 });
    expect(page.counts.fallback.messages).toBe(page.counts.fallback.items + 1);
    const total = Object.values(page.counts).reduce((n, x) => n + x.messages, 0);
    expect(total).toBe(page.data.reduce((n, i) => n + i.count, 0));
    // Newest first, and filtered by reason and time.
    const seen = page.data.map((i) => i.last_seen_at);
    expect([...seen].sort().reverse()).toEqual(seen);
    expect((await inbox({ reason: 'slot_failed' })).data.map((i) => i.reason)).toEqual(['slot_failed']);
    expect((await inbox({ since: '2999-01-01T00:00:00Z' })).data).toEqual([]);
    expect((await inbox({ until: '2000-01-01T00:00:00Z' })).counts.fallback.items).toBe(0);
    // Pages follow each other without repeating.
    const first = await inbox({ limit: 2 });
    const second = await inbox({ limit: 2, cursor: first.next_cursor! });
    expect(second.data.map((i) => i.id)).not.toContain(first.data[0].id);
  });

  it('adds two messages as examples and one as out of scope into a draft, with a diff, audited with the key', async () => {
    const page = await inbox();
    const pick = (re: RegExp) => page.data.find((i) => re.test(i.message))!.id;
    const before = await current();
    const added = await c.sb.api.actOnReview({
      params: { slug: SLUG },
      body: { items: [pick(/never got the things/), pick(/stuff I bought/)], action: 'add_example', capability: 'order_status' },
    });
    expect(added.status).toBe(200);
    if (added.status !== 200) return;
    expect(added.body.acted).toBe(2);
    expect(added.body.draft).toMatchObject({ based_on: before, version: before + 1 });
    expect(added.body.draft!.added.map((a) => a.example).sort()).toEqual(['I never got the things I paid for', 'where is the stuff I bought']);
    expect(added.body.draft!.diff).toContain('+      - I never got the things I paid for');
    expect(await current()).toBe(before); // a draft, not current

    const oos = await c.sb.api.actOnReview({ params: { slug: SLUG }, body: { items: [pick(/weather/)], action: 'add_out_of_scope' } });
    expect(oos.status).toBe(200);
    if (oos.status !== 200) return;
    // Merged into the draft: the new version has both changes.
    expect(oos.body.draft).toMatchObject({ based_on: before + 1, version: before + 2 });
    const draft = (
      await api()
        .get(`/api/v1/agents/${SLUG}/versions/${before + 2}`)
        .set('tenant-id', 'acme')
        .expect(200)
    ).body.definition;
    expect(draft.routing.out_of_scope).toEqual(["what's the weather like"]);
    expect(draft.capabilities.find((x: { name: string }) => x.name === 'order_status').examples).toContain('where is the stuff I bought');
    // Each action made a version of its own, noted; the newest is the draft, the one before it superseded.
    const listed = (await api().get(`/api/v1/agents/${SLUG}/versions?limit=2`).set('tenant-id', 'acme').expect(200)).body.data;
    expect(listed.map((v: { state: string; note: string }) => [v.state, v.note])).toEqual([
      ['draft', `review: 1 message added as out of scope to version ${before + 1}`],
      ['never_released', `review: 2 messages added as examples of order_status to version ${before}`],
    ]);

    const open = await inbox();
    expect(open.data.some((i) => /weather|never got the things|stuff I bought/.test(i.message))).toBe(false);
    const done = await inbox({ status: 'added' });
    expect(done.data).toHaveLength(2);
    expect(done.data[0].action).toMatchObject({ action: 'add_example', capability: 'order_status', version: before + 1 });
    expect(done.data[0].action!.acted_at).toBeTruthy();
  });

  it('refuses bad actions and changes nothing', async () => {
    const n = await versions();
    const open = (await inbox()).data[0];
    const post = (body: object) => api().post(`/api/v1/agents/${SLUG}/review/actions`).set('tenant-id', 'acme').send(body);
    expect((await post({ items: [open.id], action: 'add_example' }).expect(400)).body.errors[0].path).toMatch(/capability/);
    expect((await post({ items: [open.id], action: 'add_example', capability: 'no_such_thing' }).expect(400)).body.detail).toMatch(/no capability/);
    expect((await post({ items: [open.id], action: 'dismiss', extra: 1 }).expect(400)).body.code).toBe('validation_error');
    expect((await post({ items: ['6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10'], action: 'dismiss' }).expect(404)).body.code).toBe('review_item_not_found');
    const acted = (await inbox({ status: 'added' })).data[0].id;
    expect((await post({ items: [open.id, acted], action: 'dismiss' }).expect(409)).body.code).toBe('review_item_closed');
    expect((await inbox()).data.map((i) => i.id)).toContain(open.id);
    expect(await versions()).toBe(n);
    // Another tenant sees neither the inbox nor the items.
    await api().get(`/api/v1/agents/${SLUG}/review`).set('tenant-id', 'other').expect(404);
    await api()
      .post(`/api/v1/agents/${SLUG}/review/actions`)
      .set('tenant-id', 'other')
      .send({ items: [open.id], action: 'dismiss' })
      .expect(404);
  });

  it('forgets the messages of an erased conversation', async () => {
    expect((await inbox()).data.some((i) => /restaurant/.test(i.message))).toBe(true);
    await api().delete(`/api/v1/agents/${SLUG}/conversations/${erasable}`).set('tenant-id', 'acme').expect(204);
    const after = await inbox();
    expect(after.data.some((i) => /restaurant/.test(i.message))).toBe(false);
    expect(JSON.stringify(after)).not.toContain('restaurant');
  });

  describe('evaluating the draft', () => {
    it('stores the test conversations every evaluation runs', async () => {
      const tests = [
        { name: 'order', steps: [{ user: 'where is my order', expect: { capability: 'order_status' } }] },
        { name: 'stuff', steps: [{ user: 'where is the stuff I bought', expect: { capability: 'order_status' } }] },
      ];
      const put = await c.sb.api.putTestSuite({ params: { slug: SLUG }, body: { tests } });
      expect(put.status).toBe(200);
      const got = await c.sb.api.getTestSuite({ params: { slug: SLUG } });
      expect(got.status === 200 && got.body.tests.map((t) => t.name)).toEqual(['order', 'stuff']);
      // More steps than one request may run: refused, and the suite stored stays.
      const huge = Array.from({ length: 11 }, (_, i) => ({ name: `t${i}`, steps: Array.from({ length: 100 }, () => ({ user: 'hello' })) }));
      const refused = await api().put(`/api/v1/agents/${SLUG}/test-suite`).set('tenant-id', 'acme').send({ tests: huge }).expect(400);
      expect(refused.body.errors[0].message).toMatch(/at most 1000 steps/);
      expect((await api().get(`/api/v1/agents/${SLUG}/test-suite`).set('tenant-id', 'acme').expect(200)).body.tests).toHaveLength(2);
    });

    it('routes the reviewed messages as the reviewers said, beside the current version', async () => {
      const draft = (await api().get(`/api/v1/agents/${SLUG}/versions`).set('tenant-id', 'acme').expect(200)).body.data[0].version as number;
      const started = await c.sb.api.startEvaluation({ params: { slug: SLUG, version: draft }, body: { replay: 20, folds: 3 } });
      expect(started.status).toBe(202);
      if (started.status !== 202) return;
      // One at a time per tenant.
      expect(
        (await api().post(`/api/v1/agents/${SLUG}/versions/${draft}/evaluations`).set('tenant-id', 'acme').send({}).expect(429)).headers['retry-after'],
      ).toBeTruthy();
      await f.app.evaluations.finished(started.body.id);
      const r = await c.sb.api.getEvaluation({ params: { slug: SLUG, id: started.body.id } });
      expect(r.status).toBe(200);
      if (r.status !== 200) return;
      const e = r.body;
      expect(e).toMatchObject({ status: 'done', stage: 'done', version: draft, baseline: 1, error: null });
      expect(e.progress.done).toBe(e.progress.total);
      const result = e.result!;
      expect(result.labelled.messages).toHaveLength(3);
      for (const m of result.labelled.messages) expect(m.draft).toBe(m.expected);
      expect(result.draft.labelled).toEqual({ total: 3, as_reviewed: 3 });
      expect(result.labelled.broken).toBe(0);
      expect(result.labelled.fixed).toBe(3 - result.current.labelled.as_reviewed);
      expect(result.draft.cross_validation.total).toBeGreaterThan(20);
      const m = result.draft.cross_validation.matrix;
      expect(m.counts.flat().reduce((a, b) => a + b, 0)).toBe(result.draft.cross_validation.total);
      expect(m.labels).toContain('order_status');
      expect(result.draft.tests).toMatchObject({ total: 2, passed: 2, failed: [] });
      expect(result.current.tests.total).toBe(2);
      expect(result.replay).toMatchObject({ conversations: expect.any(Number) });
      expect(result.replay!.conversations).toBeGreaterThan(0);
      const list = await c.sb.api.listEvaluations({ params: { slug: SLUG }, query: {} });
      expect(list.status === 200 && list.body.data[0].id).toBe(started.body.id);
    });

    it('erases the words a reviewer acted on from every copy: the acted item, the drafts that hold them and the evaluations', async () => {
      const words = 'I never got the things I paid for';
      const everywhere = async () => {
        const tables = await Promise.all([
          f.db.knex('review_groups').where({ tenant_id: 'acme' }).select('action'),
          f.db.knex('review_occurrences').where({ tenant_id: 'acme' }).select('message'),
          f.db.knex('agent_versions').where({ tenant_id: 'acme' }).select('version', 'definition'),
          f.db.knex('evaluations').where({ tenant_id: 'acme' }).select('result'),
        ]);
        return tables.map((rows) => JSON.stringify(rows).includes(words));
      };
      expect(await everywhere()).toEqual([true, true, true, true]);
      const said = (await f.db.knex('review_occurrences').where({ tenant_id: 'acme', message: words }).first('conversation_id')) as { conversation_id: string };
      const drafts = (await api().get(`/api/v1/agents/${SLUG}/versions`).set('tenant-id', 'acme').expect(200)).body.data as {
        version: number;
        digest: string;
      }[];

      await api().delete(`/api/v1/agents/${SLUG}/conversations/${said.conversation_id}`).set('tenant-id', 'acme').expect(204);
      expect(await everywhere()).toEqual([false, false, false, false]);
      // The acted item says it was erased; the other example of the same action stays.
      const acted = (await inbox({ status: 'added' })).data;
      expect(acted.find((i) => i.action?.erased)).toMatchObject({ action: { action: 'add_example', erased: true } });
      expect(acted.find((i) => i.action?.erased)!.action!.example).toBeUndefined();
      const newest = (await api().get(`/api/v1/agents/${SLUG}/versions/${drafts[0].version}`).set('tenant-id', 'acme').expect(200)).body;
      const examples = newest.definition.capabilities.find((x: { name: string }) => x.name === 'order_status').examples as string[];
      expect(examples).toContain('where is the stuff I bought');
      expect(examples).not.toContain(words);
      // A draft's digest follows its definition; the current version, released, is as it was.
      expect(newest.digest).not.toBe(drafts[0].digest);
      expect((await api().get(`/api/v1/agents/${SLUG}/versions`).set('tenant-id', 'acme').expect(200)).body.data.at(-1).digest).toBe(drafts.at(-1)!.digest);
      // The evaluation keeps its figures, and the message's place with its text emptied.
      const listed = await c.sb.api.listEvaluations({ params: { slug: SLUG }, query: {} });
      const id = listed.status === 200 ? listed.body.data[0].id : '';
      const e = await c.sb.api.getEvaluation({ params: { slug: SLUG, id } });
      expect(e.status === 200 && e.body.result!.labelled.messages.filter((m) => m.message === '')).toHaveLength(1);
      expect(e.status === 200 && e.body.result!.draft.labelled).toEqual({ total: 3, as_reviewed: 3 });
    });

    it('refuses a version that does not exist, and another tenant', async () => {
      expect((await api().post(`/api/v1/agents/${SLUG}/versions/99/evaluations`).set('tenant-id', 'acme').send({}).expect(404)).body.code).toBe(
        'version_not_found',
      );
      await api().get(`/api/v1/agents/${SLUG}/evaluations`).set('tenant-id', 'other').expect(404);
    });
  });
});

eachDatabase('review actions with API keys on $name', (database) => {
  const f = appFixture(database, { config: { authMode: 'api_key' } });
  it('records the key that acted, and refuses a key without the admin scope', async () => {
    const admin = await f.app.keys.create('acme', ['admin', 'read', 'converse']);
    const reader = await f.app.keys.create('acme', ['read', 'converse']);
    const as = (key: string) => ({ authorization: `Bearer ${key}`, 'tenant-id': 'acme' });
    const api = () => request(f.app.app);
    await api()
      .put('/api/v1/agents/shop')
      .set(as(admin.key))
      .send({
        name: 'Shop',
        capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say: 'Number?' }] }],
      })
      .expect(200);
    await api().post('/api/v1/agents/shop/converse').set(as(reader.key)).send({ message: 'tell me a joke about penguins' }).expect(200);
    const item = (await api().get('/api/v1/agents/shop/review').set(as(reader.key)).expect(200)).body.data[0];
    expect(item.message).toBe('tell me a joke about penguins');
    await api()
      .post('/api/v1/agents/shop/review/actions')
      .set(as(reader.key))
      .send({ items: [item.id], action: 'dismiss' })
      .expect(403);
    const done = await api()
      .post('/api/v1/agents/shop/review/actions')
      .set(as(admin.key))
      .send({ items: [item.id], action: 'dismiss' })
      .expect(200);
    expect(done.body).toEqual({ acted: 1, draft: null });
    const dismissed = (await api().get('/api/v1/agents/shop/review?status=dismissed').set(as(reader.key)).expect(200)).body.data;
    expect(dismissed).toHaveLength(1);
    expect(dismissed[0].action).toMatchObject({ action: 'dismiss', acted_by: admin.id });
  });
});
