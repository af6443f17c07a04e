// Knowledge in releases, on every database: an agent with `knowledge_updates: release` answers
// from the snapshot its version pinned while a live one follows its sources; the same definition
// over changed passages is a new version, judged by the release gates (a replay of recorded
// conversations shows the answers that changed); the release record names the snapshot and
// verifies; replaced passages are kept only while a version in use pins them (and count against
// the quota meanwhile); a version whose snapshot is gone is refused; a deleted source leaves
// every snapshot at once; analytics count the answers citing each source.
import request from 'supertest';
import { expect, it } from 'vitest';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };

const md = (sections: Record<string, string>) =>
  new TextEncoder().encode(
    Object.entries(sections)
      .map(([h, p]) => `# ${h}\n\n${p}\n`)
      .join('\n'),
  );

const FIRST = md({
  Refunds: 'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.',
  Shipping: 'Orders leave our warehouse within two business days of payment.',
});
// The refunds section is gone: a question about refunds finds nothing.
const SECOND = md({
  Shipping: 'Orders leave our warehouse within two business days of payment.',
  'Gift cards': 'Gift cards never expire and can be spent in every shop.',
});

const REFUND = 'how long does a refund take to reach my card?';

const definition = (updates?: 'release') => ({
  name: 'Helpdesk',
  knowledge_sources: ['policies'],
  ...(updates ? { knowledge_updates: updates } : {}),
  routing: { fallback: 'docs' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello! Ask me anything.' }] },
    { name: 'docs', phases: [{ id: 'answer', answer: { not_found: 'escalate' } }] },
  ],
  release: { require: { replay: { conversations: 10, max_changed_outcomes: 0 } } },
});

interface Pin {
  snapshot: number;
  digest: string;
}

eachDatabase('knowledge snapshots in releases on $name', (database) => {
  const f = appFixture(database, {});
  const api = () => request(f.app.app);
  const upload = async (bytes: Uint8Array) => {
    await api().put('/api/v1/knowledge/sources/policies').set(T).attach('file', Buffer.from(bytes), 'policies.md').expect(202);
    await f.app.knowledge.idle();
  };
  const say = async (slug: string, message: string) => (await api().post(`/api/v1/agents/${slug}/converse`).set(T).send({ message }).expect(200)).body;
  const versions = async (slug: string) =>
    (await api().get(`/api/v1/agents/${slug}/versions`).set(T).expect(200)).body.data as { version: number; knowledge: Pin | null }[];
  const passagesUsed = async () => (await api().get('/api/v1/usage').set(T).expect(200)).body.knowledge.passages.used as number;
  let first: Pin;
  let current: number;

  it('pins the snapshot a version is made at; a live agent pins none', async () => {
    await upload(FIRST);
    current = (await api().get('/api/v1/knowledge/sources/policies').set(T).expect(200)).body.passages;
    expect(current).toBe(2);
    await api().put('/api/v1/agents/pinned').set(T).send(definition('release')).expect(200);
    await api().put('/api/v1/agents/live').set(T).send(definition()).expect(200);
    const [v1] = await versions('pinned');
    expect(v1.knowledge).toMatchObject({ snapshot: expect.any(Number), digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    first = v1.knowledge!;
    expect((await versions('live'))[0].knowledge).toBeNull();
    const record = (await api().get('/api/v1/agents/pinned/releases').set(T).expect(200)).body.data;
    expect(record[0]).toMatchObject({ version: 1, knowledge: first });
    for (const slug of ['pinned', 'live']) {
      const r = await say(slug, REFUND);
      expect(r.state.status).toBe('active');
      expect(r.response.citations[0]).toMatchObject({ source: 'policies', heading: 'Refunds' });
    }
  });

  it('keeps answering from its snapshot after the source changes, while the live agent follows the source', async () => {
    await upload(SECOND);
    const pinned = await say('pinned', REFUND);
    expect(pinned.state.status).toBe('active');
    expect(pinned.response.message).toMatch(/^Refunds go back to the card/);
    const audit = (await api().get(`/api/v1/agents/pinned/conversations/${pinned.conversation_id}/audit-logs?type=knowledge_search`).set(T).expect(200)).body
      .data;
    expect(audit[0].data).toMatchObject({ snapshot: first.snapshot, answered: true });
    const live = await say('live', REFUND);
    expect(live.state.status).toBe('escalated');
    // The gift cards came in after the pinned snapshot: only the live agent knows them.
    expect((await say('live', 'do gift cards expire?')).state.status).toBe('active');
    expect((await say('pinned', 'do gift cards expire?')).state.status).toBe('escalated');
    // The replaced passages are kept for the pinned version, and count against the quota meanwhile.
    expect(await passagesUsed()).toBe(2 + current);
    expect((await api().get('/api/v1/knowledge/sources/policies/passages').set(T).expect(200)).body.data).toHaveLength(2);
  });

  let second: Pin;

  it('makes a new version of the same definition over the changed passages, and none when nothing changed', async () => {
    const put = await api().put('/api/v1/agents/pinned?activate=false').set(T).send(definition('release')).expect(200);
    expect(put.body).toMatchObject({ version: 1, stored_version: 2 });
    const [v2, v1] = await versions('pinned');
    expect(v2.knowledge!.snapshot).toBeGreaterThan(first.snapshot);
    expect(v2.knowledge!.digest).not.toBe(first.digest);
    expect(v1.knowledge).toEqual(first);
    second = v2.knowledge!;
    const again = await api().put('/api/v1/agents/pinned?activate=false').set(T).send(definition('release')).expect(200);
    expect(again.body.stored_version).toBe(2);
    expect(await versions('pinned')).toHaveLength(2);
  });

  it("refuses the new snapshot when the gates' replay finds answers that changed, and changes nothing", async () => {
    const r = await api().post('/api/v1/agents/pinned/versions/2/activate').set(T).expect(409);
    expect(r.body.code).toBe('release_gates_failed');
    const gate = r.body.gates.find((g: { gate: string }) => g.gate === 'replay_changed_outcomes');
    expect(gate).toMatchObject({ passed: false, limit: 0 });
    expect(gate.figure).toBeGreaterThan(0);
    expect((await api().get('/api/v1/agents/pinned').set(T).expect(200)).body.version).toBe(1);
    expect((await say('pinned', REFUND)).state.status).toBe('active');
  });

  it('releases it forced with a reason: the step names the snapshot, the record verifies, and the old passages go', async () => {
    const r = await api().post('/api/v1/agents/pinned/versions/2/activate?force=true&reason=The%20refunds%20page%20moved').set(T).expect(200);
    expect(r.body.release).toMatchObject({ action: 'activate', version: 2, knowledge: second, forced: true });
    expect((await api().get('/api/v1/agents/pinned/releases/verify').set(T).expect(200)).body).toMatchObject({ valid: true });
    expect((await say('pinned', REFUND)).state.status).toBe('escalated');
    expect((await say('pinned', 'do gift cards expire?')).state.status).toBe('active');
    // No version in use pins the first snapshot any more: its replaced passages are gone.
    expect(await passagesUsed()).toBe(2);
  });

  it('refuses to serve again a version whose snapshot is no longer kept', async () => {
    const r = await api().post('/api/v1/agents/pinned/versions/1/activate').set(T).expect(409);
    expect(r.body.code).toBe('knowledge_snapshot_gone');
    expect(r.body.detail).toMatch(/Version 1 answers from knowledge snapshot \d+/);
    expect((await api().get('/api/v1/agents/pinned').set(T).expect(200)).body.version).toBe(2);
  });

  it('drops a deleted source from every snapshot at once', async () => {
    expect((await say('pinned', 'when do orders leave the warehouse?')).state.status).toBe('active');
    await api().delete('/api/v1/knowledge/sources/policies').set(T).expect(204);
    expect((await say('pinned', 'when do orders leave the warehouse?')).state.status).toBe('escalated');
    expect(await passagesUsed()).toBe(0);
  });

  it("counts in each agent's analytics the answers citing each source and the questions its sources did not answer", async () => {
    const knowledge = async (slug: string) => (await api().get(`/api/v1/agents/${slug}/analytics`).set(T).expect(200)).body.knowledge;
    expect(await knowledge('pinned')).toEqual({ sources: [{ source: 'policies', cited: 5 }], unanswered: 3 });
    expect(await knowledge('live')).toEqual({ sources: [{ source: 'policies', cited: 2 }], unanswered: 1 });
  });

  it('needs knowledge_sources to pin', async () => {
    const def = { ...definition('release') } as Record<string, unknown>;
    delete def.knowledge_sources;
    const r = await api().put('/api/v1/agents/nothing').set(T).send(def).expect(400);
    expect(r.body.errors).toContainEqual({ path: 'knowledge_updates', message: 'the agent names no knowledge_sources whose snapshot a version could pin' });
  });
});
