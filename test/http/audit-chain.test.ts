// The tamper-evident audit log: a hash chain per conversation, recomputed by the verify endpoint.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, migrate } from '../../server/src/store/db.js';
import { ConversationStore } from '../../server/src/store/conversations/conversation-store.js';
import { ReleaseStore } from '../../server/src/store/release-store.js';
import { echoAgent, supportAgent } from '../helpers/agents.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

const T = { 'tenant-id': 'acme' };

eachDatabase('audit chain on $name', (database) => {
  const f = appFixture(database, { agents: { echo: echoAgent, support: supportAgent('http://127.0.0.1:9') } });
  const verifyAt = (slug: string, id: string) =>
    request(f.app.app)
      .get(`/api/v1/agents/${slug}/conversations/${id}/audit-logs/verify`)
      .set(T)
      .then((r) => r.body as Record<string, unknown>);

  async function conversation(turns = 3): Promise<string> {
    const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    for (let i = 0; i < turns; i++)
      await request(f.app.app)
        .post('/api/v1/agents/echo/converse')
        .set(T)
        .send({ message: `m${i}`, conversation_id: id })
        .expect(200);
    return id;
  }
  const verify = (id: string) =>
    request(f.app.app)
      .get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`)
      .set(T)
      .then((r) => r.body);
  const entries = (id: string) => f.db.knex('audit_entries').where({ conversation_id: id }).orderBy('sequence');

  it('verifies an untouched log', async () => {
    const id = await conversation();
    const n = (await entries(id)).length;
    expect(await verify(id)).toEqual({ conversation_id: id, entries: n, keyed_entries: 0, valid: true, first_broken: null });
  });

  it('finds a changed payload', async () => {
    const id = await conversation();
    const row = (await entries(id))[4];
    const data = JSON.parse(row.data);
    await f.db
      .knex('audit_entries')
      .where({ conversation_id: id, sequence: row.sequence })
      .update({ data: JSON.stringify({ ...data, forged: true }) });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'data_mismatch' } });
  });

  it('finds a payload changed together with its data hash', async () => {
    const id = await conversation();
    const { dataHash } = await import('../../server/src/lib/audit-chain.js');
    const row = (await entries(id))[2];
    const forged = JSON.stringify({ ...JSON.parse(row.data), forged: true });
    await f.db
      .knex('audit_entries')
      .where({ conversation_id: id, sequence: row.sequence })
      .update({ data: forged, data_hash: dataHash(forged) });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'hash_mismatch' } });
  });

  it('finds a deleted entry and a cut-off tail', async () => {
    const a = await conversation();
    await f.db.knex('audit_entries').where({ conversation_id: a, sequence: 3 }).delete();
    expect(await verify(a)).toMatchObject({ valid: false, first_broken: { sequence: 3, reason: 'sequence_gap' } });
    const b = await conversation();
    const last = (await entries(b)).at(-1)!;
    await f.db.knex('audit_entries').where({ conversation_id: b, sequence: last.sequence }).delete();
    expect(await verify(b)).toMatchObject({ valid: false, first_broken: { sequence: last.sequence, reason: 'head_mismatch' } });
  });

  it('still verifies after erasure, which keeps the hashes of what it removes', async () => {
    // An action call (to an address the rules refuse) leaves an entry with request data to erase.
    await request(f.app.app).put('/api/v1/agents/support').set(T).send(supportAgent('http://127.0.0.1:9')).expect(200);
    const id = (await request(f.app.app).post('/api/v1/agents/support/converse').set(T).send({ message: 'where is my order' })).body.conversation_id;
    await request(f.app.app).post('/api/v1/agents/support/converse').set(T).send({ message: '123456', conversation_id: id }).expect(200);
    const before = (await entries(id)).find((e) => e.type === 'action_call')!;
    expect(JSON.parse(before.data).request.url).toContain('/orders/123456');
    await request(f.app.app).delete(`/api/v1/agents/support/conversations/${id}`).set(T).expect(204);
    const after = (await entries(id)).find((e) => e.type === 'action_call')!;
    expect(JSON.parse(after.data)).toMatchObject({ erased: true });
    expect(after.data).not.toContain('123456');
    const r = await request(f.app.app).get(`/api/v1/agents/support/conversations/${id}/audit-logs/verify`).set(T);
    expect(r.body).toMatchObject({ valid: true, first_broken: null });
  });

  it('refuses a forged entry that claims to be erased: only a real, chained erasure exempts an entry', async () => {
    const id = await conversation();
    const row = (await entries(id)).find((e) => e.type === 'routing_decision')!;
    const forged = JSON.stringify({ ...JSON.parse(row.data), erased: true, selected: { capability: 'x' } });
    await f.db.knex('audit_entries').where({ conversation_id: id, sequence: row.sequence }).update({ data: forged });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'data_mismatch' } });
    // Setting erased_at as well proves nothing without the chained erasure entry that covers it.
    await f.db.knex('audit_entries').where({ conversation_id: id, sequence: row.sequence }).update({ erased_at: '2026-11-22T10:00:00.000Z' });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'data_mismatch' } });
  });

  it('records an erasure as a chained entry', async () => {
    const id = await conversation(1);
    const n = (await entries(id)).length;
    await request(f.app.app).delete(`/api/v1/agents/echo/conversations/${id}`).set(T).expect(204);
    const all = await entries(id);
    expect(all).toHaveLength(n + 1);
    expect(all.at(-1)).toMatchObject({ type: 'erasure' });
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ through_sequence: n });
    expect(await verify(id)).toMatchObject({ valid: true, entries: n + 1 });
  });

  it('covers turn texts: a changed, added or deleted turn breaks verification', async () => {
    const a = await conversation(2);
    await f.db.knex('turns').where({ conversation_id: a, idx: 2 }).update({ message: 'I never said that' });
    expect(await verify(a)).toMatchObject({ valid: false, first_broken: { reason: 'turn_mismatch', turn_index: 2 } });
    const b = await conversation(1);
    await f.db.knex('turns').where({ conversation_id: b, idx: 3 }).delete();
    expect(await verify(b)).toMatchObject({ valid: false, first_broken: { reason: 'turn_mismatch', turn_index: 3 } });
    const c = await conversation(1);
    await f.db
      .knex('turns')
      .insert({ conversation_id: c, idx: 4, tenant_id: 'acme', role: 'agent', message: 'smuggled', timestamp: '2026-11-22T10:00:00.000Z' });
    expect(await verify(c)).toMatchObject({ valid: false, first_broken: { reason: 'turn_unchained', turn_index: 4 } });
  });

  it("finds the conversation's state changed with no turn: its slots, phase or status are chained with the turn that left them", async () => {
    const id = (await request(f.app.app).post('/api/v1/agents/support/converse').set(T).send({ message: 'where is my order' }).expect(200)).body
      .conversation_id as string;
    expect(await verifyAt('support', id)).toMatchObject({ valid: true });
    const row = (await f.db.knex('conversations').where({ id }).first())!;
    const state = JSON.parse(row.state);
    await f.db
      .knex('conversations')
      .where({ id })
      .update({ state: JSON.stringify({ ...state, slots: { ...state.slots, order_id: '999999' } }) });
    expect(await verifyAt('support', id)).toMatchObject({ valid: false, first_broken: { reason: 'state_mismatch' } });
    await f.db.knex('conversations').where({ id }).update({ state: row.state, status: 'completed' });
    expect(await verifyAt('support', id)).toMatchObject({ valid: false, first_broken: { reason: 'state_mismatch' } });
    await f.db.knex('conversations').where({ id }).update({ status: row.status });
    expect(await verifyAt('support', id)).toMatchObject({ valid: true });
  });

  it("answers 404 for another tenant's conversation", async () => {
    const id = await conversation(0);
    const r = await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`).set({ 'tenant-id': 'other' });
    expect(r.status).toBe(404);
  });
});

eachDatabase('keyed audit chain (AUDIT_CHAIN_KEY) on $name', (database) => {
  const KEY = Buffer.alloc(32, 7);
  const f = appFixture(database, { agents: { echo: echoAgent }, config: { auditChainKey: KEY } });
  const say = async (message: string, conversation_id?: string) =>
    (await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message, conversation_id }).expect(200)).body.conversation_id as string;
  const verifyWith = async (id: string, key?: Buffer, previousKeys: Buffer[] = []) => {
    const { ConversationStore } = await import('../../server/src/store/conversations/conversation-store.js');
    return new ConversationStore(f.db, { chainKey: key, previousKeys }).verifyAudit('acme', id);
  };
  /** Rechains a conversation's entries from the first, unkeyed or under `key`, data edited by `edit`, and moves its head. */
  const rechain = async (id: string, key?: Buffer, edit: (sequence: number, data: string) => string = (_s, d) => d) => {
    const { dataHash, entryHash } = await import('../../server/src/lib/audit-chain.js');
    let previous: string | null = null;
    for (const r of await entries(id)) {
      const fields = {
        ...r,
        sequence: Number(r.sequence),
        turn_index: r.turn_index === null ? null : Number(r.turn_index),
        duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
      };
      const data = edit(fields.sequence, r.data);
      previous = entryHash(previous, fields, dataHash(data), key);
      await f.db
        .knex('audit_entries')
        .where({ conversation_id: id, sequence: r.sequence })
        .update({ data, data_hash: dataHash(data), hash: previous });
    }
    await f.db.knex('conversations').where({ id }).update({ audit_hash: previous });
  };
  const seal = async () => {
    const { sealChains } = await import('../../server/src/service/conversations/chain-seals.js');
    const { ChainSealStore } = await import('../../server/src/store/conversations/chain-seals.js');
    const { ConversationStore } = await import('../../server/src/store/conversations/conversation-store.js');
    const { ReleaseStore } = await import('../../server/src/store/release-store.js');
    const { systemClock } = await import('../../server/src/lib/clock.js');
    const done = await sealChains(
      {
        conversations: new ConversationStore(f.db, { chainKey: KEY }),
        releases: new ReleaseStore(f.db, KEY),
        seals: new ChainSealStore(f.db),
        keys: { current: KEY, previous: [] },
        clock: systemClock,
      },
      () => {},
    );
    return done.find((p) => p.kind === 'conversation')!;
  };

  it('never verifies a conversation rebuilt without the key from its first entry', async () => {
    const id = await say('echo this');
    await say('more', id);
    await rechain(id, undefined, (sequence, data) => (sequence === 2 ? JSON.stringify({ ...JSON.parse(data), forged: true }) : data));
    const report = await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`).set(T).expect(200);
    expect(report.body).toMatchObject({ valid: false, keyed_entries: 0, keyed_from: null, first_broken: { sequence: 1, reason: 'not_keyed' } });
  });

  it('vouches for a chain written before the key only once it is sealed, and only as it was sealed', async () => {
    const old = await say('echo this');
    await rechain(old); // as an app without the key wrote it
    const broken = await say('another');
    await rechain(broken, undefined, (sequence, data) => (sequence === 1 ? `${data} ` : data));
    await f.db
      .knex('audit_entries')
      .where({ conversation_id: broken, sequence: 1 })
      .update({ data_hash: 'f'.repeat(64) });
    expect(await verifyWith(old, KEY)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'not_keyed' } });

    const sealed = await seal();
    expect(sealed.broken).toEqual([expect.objectContaining({ id: broken, reason: 'data_mismatch' })]);
    expect(sealed.sealed).toBeGreaterThanOrEqual(1);
    const n = (await entries(old)).length;
    expect(await verifyWith(old, KEY)).toEqual({ entries: n, keyed_entries: 0, keyed_from: null, valid: true, first_broken: null });
    // The broken one stays unsealed.
    expect(await f.db.knex('chain_seals').where({ chain_id: broken }).first()).toBeUndefined();

    // Rewritten after the seal, unkeyed: the seal names another hash.
    await rechain(old, undefined, (sequence, data) => (sequence === 1 ? JSON.stringify({ ...JSON.parse(data), forged: true }) : data));
    expect(await verifyWith(old, KEY)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'not_keyed' } });
    // A seal a writer made up (without the key) vouches for nothing either.
    const head = await f.db.knex('conversations').where({ id: old }).first('audit_hash', 'audit_seq');
    await f.db
      .knex('chain_seals')
      .where({ chain_id: old })
      .update({ hash: head!.audit_hash, sequence: head!.audit_seq, seal: 'a'.repeat(64) });
    expect(await verifyWith(old, KEY)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'not_keyed' } });
  });

  it('rotates the key: entries under the previous key verify before the new one took over, and only with it configured', async () => {
    const OLD = Buffer.alloc(32, 3);
    const id = await say('echo this');
    await rechain(id, OLD); // written while OLD was the key
    const before = (await entries(id)).length;
    expect(await verifyWith(id, KEY, [OLD])).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'not_keyed' } });
    await say('more', id); // now under KEY, chained onto OLD's entries
    const all = (await entries(id)).length;
    expect(await verifyWith(id, KEY, [OLD])).toEqual({ entries: all, keyed_entries: all - before, keyed_from: before + 1, valid: true, first_broken: null });
    expect(await verifyWith(id, KEY)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'hash_mismatch' } });
    // An entry under the previous key after one under the current key: someone holding the old key.
    const { dataHash, entryHash } = await import('../../server/src/lib/audit-chain.js');
    const rows = await entries(id);
    const last = rows[rows.length - 1];
    const fields = {
      ...last,
      sequence: Number(last.sequence),
      turn_index: last.turn_index === null ? null : Number(last.turn_index),
      duration_ms: last.duration_ms === null ? null : Number(last.duration_ms),
    };
    const hash = entryHash(rows[rows.length - 2].hash, fields, dataHash(last.data), OLD);
    await f.db.knex('audit_entries').where({ conversation_id: id, sequence: last.sequence }).update({ hash });
    await f.db.knex('conversations').where({ id }).update({ audit_hash: hash });
    expect(await verifyWith(id, KEY, [OLD])).toMatchObject({ valid: false, first_broken: { sequence: Number(last.sequence), reason: 'unkeyed_after_keyed' } });
  });
  const entries = (id: string) => f.db.knex('audit_entries').where({ conversation_id: id }).orderBy('sequence');

  it('chains every entry with the key, and such a chain verifies only with it', async () => {
    const id = await say('echo this');
    await say('more', id);
    const n = (await entries(id)).length;
    const res = await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`).set(T).expect(200);
    expect(res.body).toEqual({ conversation_id: id, entries: n, keyed_entries: n, keyed_from: 1, valid: true, first_broken: null });
    expect(await verifyWith(id)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'hash_mismatch' } });
  });

  it('refuses a chain that whoever writes the database recomputed without the key', async () => {
    const { dataHash, entryHash } = await import('../../server/src/lib/audit-chain.js');
    const id = await say('echo this');
    await say('more', id);
    const rows = await entries(id);
    // The forger changes an entry and recomputes every hash from there, as the unkeyed chain allows.
    let previous: string | null = rows[1].hash;
    for (const r of rows.slice(2)) {
      const data = r.sequence === 3 ? JSON.stringify({ ...JSON.parse(r.data), forged: true }) : r.data;
      const fields = {
        ...r,
        sequence: Number(r.sequence),
        turn_index: r.turn_index === null ? null : Number(r.turn_index),
        duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
      };
      const hash = entryHash(previous, fields, dataHash(data));
      await f.db
        .knex('audit_entries')
        .where({ conversation_id: id, sequence: r.sequence })
        .update({ data, data_hash: dataHash(data), hash });
      previous = hash;
    }
    await f.db.knex('conversations').where({ id }).update({ audit_hash: previous });
    expect(await verifyWith(id, KEY)).toMatchObject({ valid: false, keyed_entries: 2, first_broken: { sequence: 3, reason: 'unkeyed_after_keyed' } });
    // Without the key, the same forgery passes: what the unkeyed chain proves is only consistency.
    expect(await verifyWith(id)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'hash_mismatch' } });
  });

  it('accepts a chain begun before the key was set and continued with it', async () => {
    const id = await say('echo this');
    const before = (await entries(id)).length;
    // Rewrite the conversation so far as an app without the key would have written it.
    await rechain(id);
    await say('more', id);
    const report = await verifyWith(id, KEY);
    expect(report).toMatchObject({ valid: true, entries: (await entries(id)).length });
    expect(report.keyed_entries).toBe((await entries(id)).length - before);
  });
});

describe('npm run audit -- seal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-seal-'));
  const url = `sqlite://${join(dir, 's.db')}`;
  const KEY = Buffer.alloc(32, 5);
  const cli = (env: Record<string, string>) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/audit.ts', 'seal'], {
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AUDIT_CHAIN'))), DATABASE_URL: url, LOG_LEVEL: 'silent', ...env },
    });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('seals the chains written before the key, prints what it did, and leaves sealed ones alone the next time', async () => {
    const db = openDatabase(url);
    await migrate(db);
    const app = testApp(db); // no key yet
    await request(app.app).put('/api/v1/agents/echo').set(T).send(echoAgent).expect(200);
    const id = (await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' }).expect(200)).body.conversation_id as string;
    await app.close();
    const agent = (await db.knex('agents').first('id')) as { id: string };
    const conversations = new ConversationStore(db, { chainKey: KEY });
    const releases = new ReleaseStore(db, KEY);
    expect(await conversations.verifyAudit('acme', id)).toMatchObject({ valid: false, first_broken: { reason: 'not_keyed' } });
    expect(await releases.verify('acme', agent.id)).toMatchObject({ valid: false, first_broken: { reason: 'not_keyed' } });

    const without = await cli({}).catch((e: { code: number; stderr: string }) => e);
    expect(without).toMatchObject({ code: 1, stderr: expect.stringContaining('AUDIT_CHAIN_KEY is not set') });

    const first = await cli({ AUDIT_CHAIN_KEY: KEY.toString('hex') });
    expect(first.stdout).toContain('release records: 1 checked, 1 sealed, 0 already keyed or sealed, 0 broken (not sealed)');
    expect(first.stdout).toContain('conversations: 1 checked, 1 sealed, 0 already keyed or sealed, 0 broken (not sealed)');
    expect(first.stderr).toContain('conversations: 1/1 checked, 1 sealed');
    expect(await conversations.verifyAudit('acme', id)).toMatchObject({ valid: true, keyed_entries: 0, keyed_from: null });
    expect(await releases.verify('acme', agent.id)).toMatchObject({ valid: true, keyed_entries: 0, keyed_from: null });

    const again = await cli({ AUDIT_CHAIN_KEY: KEY.toString('hex') });
    expect(again.stdout).toContain('conversations: 1 checked, 0 sealed, 1 already keyed or sealed');
    await db.close();
  });
});
