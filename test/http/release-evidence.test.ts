// Release records against a database writer, on both databases, under AUDIT_CHAIN_KEY: every
// column the service decides by is in the hash or checked against it (a step's version column, the
// agent's served version and split, the evaluation a step cites); a record rebuilt without the key
// never verifies; and a record cut short with its head moved back is found from a head published
// to the log stream. Each tampering is an SQL edit, as a writer of the database would make it.
import { createHmac } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { createApp, type App } from '../../server/src/app.js';
import { dataHash, entryHash } from '../../server/src/lib/audit-chain.js';
import type { Database } from '../../server/src/store/db.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { testConfig } from '../helpers/servers.js';

warnIfPostgresSkipped();

const SLUG = 'desk';
const T = { 'tenant-id': 'acme' };
const KEY = Buffer.alloc(32, 9);
const POLICY = { require: { routing_accuracy: { min: 0.2, no_regression: false } } };

const desk = (name: string, release: AgentDefinitionInput['release'] = POLICY): AgentDefinitionInput => ({
  name,
  capabilities: [
    { name: 'hello', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: `Hello from ${name}.` }] },
    { name: 'bye', examples: ['bye', 'goodbye', 'see you', 'farewell'], phases: [{ id: 'bye', say: 'Bye.', end: 'completed' }] },
  ],
  ...(release ? { release } : {}),
});

eachDatabase('release records against a database writer ($name)', (database) => {
  let db: Database;
  let app: App;
  let drop: () => Promise<void>;
  const logs: Record<string, unknown>[] = [];
  beforeAll(async () => {
    const created = await database.create();
    db = created.db;
    drop = created.drop;
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    app = createApp(testConfig({ auditChainKey: KEY }), { db, logger: pino({ level: 'info' }, sink), actionRetryBaseMs: 5 });
  });
  afterAll(async () => {
    await app?.close();
    await drop?.();
  });
  const api = () => request(app.app);
  const verify = async (head?: string) =>
    (
      await api()
        .get(`/api/v1/agents/${SLUG}/releases/verify${head ? `?head=${head}` : ''}`)
        .set(T)
        .expect(200)
    ).body as Record<string, unknown>;
  const agentId = async () => ((await db.knex('agents').where({ tenant_id: 'acme', slug: SLUG }).first('id')) as { id: string }).id;
  const step = async (sequence: number) => db.knex('release_records').where({ tenant_id: 'acme', sequence }).first();

  it('publishes every new head to the log stream, signed with the key, and verifies keyed from the first step', async () => {
    expect((await api().put(`/api/v1/agents/${SLUG}`).set(T).send(desk('one'))).status).toBe(200);
    // Version 2 is stored and never released: what a forged rollback would reach for.
    expect((await api().put(`/api/v1/agents/${SLUG}?activate=false`).set(T).send(desk('two'))).status).toBe(200);
    const three = await api().put(`/api/v1/agents/${SLUG}`).set(T).send(desk('three'));
    expect(three.status).toBe(200);
    expect(three.body.release).toMatchObject({ sequence: 2, action: 'activate', version: 3, evaluation_id: expect.any(String) });
    expect(await verify()).toEqual({ entries: 2, keyed_entries: 2, keyed_from: 1, valid: true, first_broken: null });

    const heads = logs.filter((l) => l.event === 'release.head');
    expect(heads.map((h) => h.sequence)).toEqual([1, 2]);
    const id = await agentId();
    for (const h of heads) {
      const row = await step(h.sequence as number);
      expect(h).toMatchObject({ tenant: 'acme', agent: SLUG, agent_id: id, hash: row.hash, head: `${h.sequence}:${row.hash}` });
      const signature = createHmac('sha256', KEY)
        .update(`release-head\n${JSON.stringify(['acme', id, h.sequence, row.hash])}`)
        .digest('hex');
      expect(h.signature).toBe(signature);
    }
    expect(await verify(heads[1].head as string)).toMatchObject({ valid: true, head: heads[1].head });
  });

  it('keeps the evaluation a step cites as long as the step, and finds it edited or deleted', async () => {
    const cited = (await api().get(`/api/v1/agents/${SLUG}/releases`).set(T).expect(200)).body.data[0].evaluation_id as string;
    const evaluation = await db.knex('evaluations').where({ id: cited }).first();
    expect(evaluation.expires_at).toBe('9999-12-31T23:59:59.999Z');
    // The figures the gate was judged on, made better after the fact.
    const result = JSON.parse(evaluation.result);
    result.draft.cross_validation.accuracy = 0.01;
    await db
      .knex('evaluations')
      .where({ id: cited })
      .update({ result: JSON.stringify(result) });
    expect(await verify()).toMatchObject({ valid: false, first_broken: { sequence: 2, reason: 'evidence_mismatch' } });
    await db.knex('evaluations').where({ id: cited }).delete();
    expect(await verify()).toMatchObject({ valid: false, first_broken: { sequence: 2, reason: 'evidence_missing' } });
    await db.knex('evaluations').insert(evaluation);
    expect(await verify()).toMatchObject({ valid: true });
  });

  it('finds the served version or split changed with no step', async () => {
    const id = await agentId();
    await db.knex('agents').where({ id }).update({ current_version: 2 });
    expect(await verify()).toMatchObject({ valid: false, first_broken: { sequence: 2, reason: 'state_mismatch' } });
    await db.knex('agents').where({ id }).update({ current_version: 3, split_version: 2, split_share: 5000 });
    expect(await verify()).toMatchObject({ valid: false, first_broken: { sequence: 2, reason: 'state_mismatch' } });
    await db.knex('agents').where({ id }).update({ split_version: null, split_share: null });
    expect(await verify()).toMatchObject({ valid: true });
  });

  it('finds a version column that is not the chained one, and never takes it for a release: the version is judged', async () => {
    const first = await step(1);
    await db.knex('release_records').where({ id: first.id }).update({ version: 2 });
    expect(await verify()).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'data_mismatch' } });
    // Version 2 was never released: activating it is no rollback, whatever the column says.
    const r = await api().post(`/api/v1/agents/${SLUG}/versions/2/activate`).set(T);
    expect(r.status).toBe(200);
    expect(r.body.release).toMatchObject({ action: 'activate', version: 2, evaluation_id: expect.any(String) });
    expect(r.body.release.gates.length).toBeGreaterThan(0);
    await db.knex('release_records').where({ id: first.id }).update({ version: 1 });
    expect(await verify()).toMatchObject({ valid: true, entries: 3 });
  });

  it('finds steps cut off the end with the head moved back, given a head published before', async () => {
    const id = await agentId();
    const newest = logs.filter((l) => l.event === 'release.head').at(-1)!;
    expect(newest.sequence).toBe(3);
    const before = await step(2);
    await db.knex('release_records').where({ tenant_id: 'acme', agent_id: id, sequence: 3 }).delete();
    await db.knex('agents').where({ id }).update({ release_seq: 2, release_hash: before.hash, current_version: 3 });
    // From inside the database alone, a shorter record is a consistent one.
    expect(await verify()).toMatchObject({ valid: true, entries: 2 });
    expect(await verify(newest.head as string)).toMatchObject({ valid: false, first_broken: { sequence: 3, reason: 'anchor_missing' } });
    expect((await api().get(`/api/v1/agents/${SLUG}/releases/verify?head=3:nothex`).set(T)).status).toBe(400);
  });

  it('never verifies a record rebuilt without the key', async () => {
    const id = await agentId();
    // The writer makes a forced step look gated and rechains the whole record unkeyed, head included.
    const rows = await db.knex('release_records').where({ tenant_id: 'acme', agent_id: id }).orderBy('sequence');
    let previous: string | null = null;
    for (const r of rows) {
      const data = JSON.stringify({ ...JSON.parse(r.data), forced: false, reason: null });
      const fields = {
        id: r.id,
        conversation_id: id,
        sequence: Number(r.sequence),
        turn_index: null,
        type: r.action,
        request_id: r.request_id,
        timestamp: r.created_at,
        duration_ms: null,
      };
      previous = entryHash(previous, fields, dataHash(data));
      await db
        .knex('release_records')
        .where({ id: r.id })
        .update({ data, data_hash: dataHash(data), hash: previous });
    }
    await db.knex('agents').where({ id }).update({ release_hash: previous });
    expect(await verify()).toMatchObject({ valid: false, keyed_entries: 0, keyed_from: null, first_broken: { sequence: 1, reason: 'not_keyed' } });
  });
});
