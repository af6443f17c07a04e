// The history's layout (store/partitions.ts, migration 022): on PostgreSQL, a populated database
// is converted in place with every row and read kept; months get partitions ahead of time, and a
// row no partition covers is moved into its month's when that is made; on both databases the
// history horizon deletes what was written before it (on PostgreSQL by dropping whole months),
// and an audit chain it cut verifies from its first kept entry, while a chain cut by anything
// else still does not.
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import type { Conversation, WebhookDraft } from '../../server/src/domain.js';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import { ConversationStore } from '../../server/src/store/conversations/conversation-store.js';
import { migrateUpTo, type Database } from '../../server/src/store/db.js';
import { up as createKnowledgeStats } from '../../server/src/store/migrations/032_knowledge_stats.js';
import { dropHistoryBefore, ensurePartitions, listPartitions, monthStart, partitionName, PARTITIONED } from '../../server/src/store/partitions.js';
import { conversation as aConversation, commitTurn } from '../helpers/conversations.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const NOW = Date.now();
/** Days into the month `add` months from this one. */
const inMonth = (add: number, day = 5) => new Date(Date.parse(monthStart(NOW, add)) + (day - 1) * 86_400_000).toISOString();

/** A conversation begun at `at`, nothing written yet. */
const conversation = (tenantId: string, agentId: string, at: string): Conversation =>
  aConversation(tenantId, agentId, { turnCount: 0, auditSeq: 0, createdAt: at, updatedAt: at, lastUserTurnAt: at });

/** One call's rows, written at `at`: two turns, an audit entry, an event row and a webhook delivery. */
async function talk(store: ConversationStore, c: Conversation, at: string, stored?: Conversation): Promise<Conversation> {
  const next: Conversation = { ...(stored ?? c), turnCount: (stored?.turnCount ?? 0) + 2, auditSeq: (stored?.auditSeq ?? 0) + 1, updatedAt: at };
  const webhooks: WebhookDraft[] = [
    {
      id: randomUUID(),
      agentId: c.agentId,
      event: 'conversation.completed',
      url: 'http://127.0.0.1:9/hook',
      secretName: null,
      payload: { at },
      seq: next.auditSeq,
      createdAt: at,
    },
  ];
  return commitTurn(store, next, at, stored, { webhooks });
}

/** Everything the store reads of a conversation. */
async function readAll(store: ConversationStore, c: Conversation) {
  return {
    turns: await store.turns(c.tenantId, c.id),
    audit: await store.audit({ tenantId: c.tenantId, id: c.id }, { limit: 100, afterSeq: 0 }),
    verified: await store.verifyAudit(c.tenantId, c.id),
    events: await store.eventLog.events(c.tenantId, c.id, { row: 0, index: 0 }),
  };
}

async function counts(db: Database): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { table } of PARTITIONED) out[table] = Number(((await db.knex(table).count({ n: '*' }).first()) as { n: unknown }).n);
  return out;
}

/** The partition a turn row is stored in. */
async function partitionOf(db: Database, conversationId: string, idx: number): Promise<string> {
  const r = await db.knex.raw<{ rows: { p: string }[] }>('select tableoid::regclass::text as p from turns where conversation_id = ? and idx = ?', [
    conversationId,
    idx,
  ]);
  return r.rows[0].p;
}

eachDatabase('history layout on $name', (database) => {
  let cleanup: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await cleanup?.();
    cleanup = null;
  });

  async function open(opts?: { migratedTo?: string }) {
    const { db, drop } = await database.create(opts);
    cleanup = drop;
    const agentId = (await new AgentStore(db).put('t', 'bot', { name: 'b' }, 'd1', inMonth(0, 1))).agent.id;
    return { db, agentId };
  }

  it('converts a populated database in place: every row and every read the same, new rows in their month', async () => {
    const { db, agentId } = await open({ migratedTo: '021_lighter_postgres_turns' });
    // This store writes columns and tables later migrations add (023's inactive_bucket, 029's turn
    // citations, 032's knowledge counters): the release that wrote this database had its own, which
    // left the history tables as these rows do.
    await db.knex.schema.alterTable('conversations', (t) => t.string('inactive_bucket', 15).nullable());
    await db.knex.schema.alterTable('turns', (t) => t.text('citations'));
    await createKnowledgeStats(db.knex);
    const store = new ConversationStore(db);
    const before = inMonth(0, 1);
    const convs: Conversation[] = [];
    for (let i = 0; i < 5; i++) {
      const c = conversation('t', agentId, before);
      convs.push(await talk(store, c, before, await talk(store, c, before)));
    }
    const delivery = (await db.knex('webhook_deliveries').first('id')) as { id: string };
    await db.knex('webhook_attempts').insert({ delivery_id: delivery.id, attempt: 1, tenant_id: 't', at: before, status: 500, error: null, duration_ms: 3 });
    const was = await Promise.all(convs.map((c) => readAll(store, c)));
    const rows = await counts(db);
    expect(rows).toEqual({ turns: 20, audit_entries: 10, conversation_events: 10, webhook_deliveries: 10, webhook_attempts: 1 });

    // An operator's index built beforehand, without blocking writes, becomes the legacy partition's key.
    let prebuilt: unknown = null;
    if (database.name === 'postgres') {
      await db.knex.raw('create unique index concurrently turns_pkey_by_month on turns (conversation_id, idx, "timestamp")');
      prebuilt = (await db.knex.raw<{ rows: { oid: number }[] }>("select 'turns_pkey_by_month'::regclass::oid as oid")).rows;
    }
    await migrateUpTo(db, '022_partitioned_history');
    if (database.name === 'postgres') {
      const key = await db.knex.raw<{ rows: { oid: number }[] }>("select 'turns_legacy_pkey'::regclass::oid as oid");
      expect(key.rows).toEqual(prebuilt);
    }
    const after = new ConversationStore(db);
    expect(await counts(db)).toEqual(rows);
    expect(await Promise.all(convs.map((c) => readAll(after, c)))).toEqual(was);
    for (const w of was) expect(w.verified).toMatchObject({ valid: true, entries: 2 });

    if (database.name === 'postgres') {
      const next = monthStart(NOW, 1);
      for (const { table } of PARTITIONED) {
        expect(await listPartitions(db.knex, table)).toEqual([
          { name: `${table}_legacy`, from: null, to: next, isDefault: false },
          { name: partitionName(table, next), from: next, to: monthStart(NOW, 2), isDefault: false },
          { name: partitionName(table, monthStart(NOW, 2)), from: monthStart(NOW, 2), to: monthStart(NOW, 3), isDefault: false },
          { name: `${table}_default`, from: null, to: null, isDefault: true },
        ]);
      }
      expect(await partitionOf(db, convs[0].id, 0)).toBe('turns_legacy');
    }

    // The conversations go on; a row of next month lands in next month's partition.
    const later = await talk(after, convs[0], inMonth(1), convs[0]);
    expect(later.turnCount).toBe(6);
    expect((await readAll(after, later)).verified).toMatchObject({ valid: true, entries: 3 });
    if (database.name === 'postgres') expect(await partitionOf(db, convs[0].id, 4)).toBe(partitionName('turns', monthStart(NOW, 1)));
  });

  if (database.name === 'postgres')
    it("keeps a row no month covers in the default partition, and moves it into its month's when that is made", async () => {
      const { db, agentId } = await open();
      const store = new ConversationStore(db);
      const far = inMonth(7);
      const c = await talk(store, conversation('t', agentId, far), far);
      expect(await partitionOf(db, c.id, 0)).toBe('turns_default');

      // Several processes at once: each month is made once.
      const made = (await Promise.all([ensurePartitions(db.knex, Date.parse(far)), ensurePartitions(db.knex, Date.parse(far))])).flat();
      expect(made.filter((n) => n.startsWith('turns_'))).toEqual([3, 4, 5, 6, 7, 8, 9].map((m) => partitionName('turns', monthStart(NOW, m))));
      expect(await partitionOf(db, c.id, 0)).toBe(partitionName('turns', monthStart(NOW, 7)));
      expect(Number(((await db.knex('turns_default').count({ n: '*' }).first()) as { n: unknown }).n)).toBe(0);
      expect((await readAll(store, c)).verified).toMatchObject({ valid: true, entries: 1 });
      expect(await ensurePartitions(db.knex, Date.parse(far))).toEqual([]);
    });

  if (database.name === 'postgres')
    it("makes the other tables' months when one table is busy past its lock timeout, and says which failed", async () => {
      const { db } = await open();
      const far = Date.parse(inMonth(4));
      const holder = await db.knex.transaction();
      try {
        await holder.raw('lock table turns in access exclusive mode');
        const upkeep = await ensurePartitions(db.knex, far).then(
          () => null,
          (err: unknown) => err,
        );
        expect(upkeep).toBeInstanceOf(AggregateError);
        expect((upkeep as AggregateError).message).toMatch(/failed on 1 of 5 tables/);
        expect(String((upkeep as AggregateError).errors[0])).toMatch(/lock timeout/);
      } finally {
        await holder.rollback();
      }
      const months = [3, 4, 5, 6].map((m) => monthStart(NOW, m));
      expect((await listPartitions(db.knex, 'audit_entries')).map((p) => p.name)).toEqual(
        expect.arrayContaining(months.map((m) => partitionName('audit_entries', m))),
      );
      expect((await listPartitions(db.knex, 'turns')).map((p) => p.name)).not.toContain(partitionName('turns', months[0]));
      // The next sweep makes what the busy table missed.
      expect(await ensurePartitions(db.knex, far)).toEqual(months.map((m) => partitionName('turns', m)));
    });

  it('deletes the history before the horizon, months whole on PostgreSQL; a chain it cut verifies from its first kept entry, one cut otherwise does not', async () => {
    const { db, agentId } = await open();
    const store = new ConversationStore(db);
    // Begun next month, continued the month after; another begun in the month after.
    const old = conversation('t', agentId, inMonth(1));
    let spans = await talk(store, old, inMonth(1));
    spans = await talk(store, old, inMonth(2), spans);
    const young = conversation('t', agentId, inMonth(2));
    let tampered = await talk(store, young, inMonth(2));
    tampered = await talk(store, young, inMonth(2, 6), tampered);

    const horizon = monthStart(NOW, 2);
    const dropped = await dropHistoryBefore(db.knex, horizon, 1000);
    if (database.name === 'postgres') {
      expect(dropped.partitions.sort()).toEqual(PARTITIONED.flatMap(({ table }) => [`${table}_legacy`, partitionName(table, monthStart(NOW, 1))]).sort());
      expect(dropped.rows).toBe(0);
    } else {
      // Two turns, an audit entry, an event row and a webhook delivery.
      expect(dropped).toEqual({ partitions: [], rows: 5 });
    }

    const kept = await readAll(store, spans);
    expect(kept.turns.map((t) => t.idx)).toEqual([2, 3]);
    expect(kept.audit.map((a) => a.sequence)).toEqual([2]);
    expect(kept.events.map((e) => e.id)).toEqual(['2-0']);
    expect(kept.verified).toEqual({ entries: 1, keyed_entries: 0, valid: true, first_broken: null, first_sequence: 2 });

    // It goes on, and verifies from the same entry.
    spans = await talk(store, old, inMonth(2, 10), spans);
    expect(await store.verifyAudit('t', old.id)).toMatchObject({ valid: true, entries: 2, first_sequence: 2 });

    // A conversation begun after the horizon has nothing the horizon took: a missing start is a gap.
    expect(await store.verifyAudit('t', young.id)).toMatchObject({ valid: true, entries: 2 });
    await db.knex('audit_entries').where({ conversation_id: young.id, sequence: 1 }).delete();
    expect(await store.verifyAudit('t', young.id)).toMatchObject({ valid: false, first_broken: { sequence: 1, reason: 'sequence_gap' } });

    // Again: nothing more to drop.
    expect(await dropHistoryBefore(db.knex, horizon, 1000)).toEqual({ partitions: [], rows: 0 });

    if (database.name === 'postgres') {
      // A month a pass detached and did not live to drop is dropped by the next one.
      const month = partitionName('turns', monthStart(NOW, 2));
      await db.knex.raw(`alter table turns detach partition ${month}`);
      expect((await dropHistoryBefore(db.knex, horizon, 1000)).partitions).toEqual([month]);
      expect((await db.knex.raw<{ rows: { r: unknown }[] }>('select to_regclass(?) as r', [month])).rows[0].r).toBeNull();
    }
  });

  if (database.name === 'sqlite')
    it('deletes old history in batches, oldest first, reading no further than it deletes', async () => {
      const { db, agentId } = await open();
      const store = new ConversationStore(db);
      const c = conversation('t', agentId, inMonth(1, 1));
      let s = await talk(store, c, inMonth(1, 1));
      for (let d = 2; d <= 6; d++) s = await talk(store, c, inMonth(1, d), s);
      const horizon = inMonth(1, 4);
      // The first delivery was retried after the horizon: its attempt goes with it.
      const first = (await db.knex('webhook_deliveries').orderBy('created_at').first('id')) as { id: string };
      await db
        .knex('webhook_attempts')
        .insert({ delivery_id: first.id, attempt: 1, tenant_id: 't', at: inMonth(1, 5), status: 500, error: null, duration_ms: 3 });
      // Three calls before the horizon: six turns, three audit entries, event rows and deliveries, and the attempt.
      for (const rows of [9, 5, 2, 0]) expect(await dropHistoryBefore(db.knex, horizon, 2)).toEqual({ partitions: [], rows });
      expect((await store.turns('t', c.id)).map((t) => t.idx)).toEqual([6, 7, 8, 9, 10, 11]);
      expect(await store.verifyAudit('t', c.id)).toMatchObject({ valid: true, entries: 3, first_sequence: 4 });
    });
});
