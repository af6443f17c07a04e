// A continuing turn's update of its conversation changes no indexed column (migration 023): on
// PostgreSQL that is what makes it a heap-only (HOT) update, with no index entry written, and on
// SQLite it spares the indexes' rewrite. And the sweeps that read those indexes still find every
// conversation due, including rows a release before 023 wrote during a rolling upgrade.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Conversation } from '../../server/src/domain.js';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import { ConversationStore } from '../../server/src/store/conversations/conversation-store.js';
import type { Database } from '../../server/src/store/db.js';
import { conversation as aConversation, commitTurn } from '../helpers/conversations.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const at = (minute: number, second = 0) => new Date(Date.UTC(2026, 10, 22, 10, minute, second)).toISOString();
const inHalfAnHour = (t: string) => new Date(Date.parse(t) + 30 * 60_000).toISOString();

/** A turn on `c` at `now` (a new conversation when `stored` is absent), its deadline half an hour on. */
async function turn(store: ConversationStore, c: Conversation, now: string, stored?: Conversation, over: Partial<Conversation> = {}): Promise<Conversation> {
  const next: Conversation = {
    ...(stored ?? c),
    turnCount: (stored?.turnCount ?? 0) + 2,
    auditSeq: (stored?.auditSeq ?? 0) + 1,
    updatedAt: now,
    lastUserTurnAt: now,
    inactiveAfter: inHalfAnHour(now),
    flow: { slots: { n: now }, actions: {}, attempts: 0, wait: 'open' },
    ...over,
  };
  return commitTurn(store, next, now, stored);
}

eachDatabase('turn updates on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let store: ConversationStore;
  let agentId: string;

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    store = new ConversationStore(db);
    agentId = (await new AgentStore(db).put('t', 'bot', { name: 'b' }, 'd1', at(0))).agent.id;
  });
  afterAll(async () => drop?.());

  const fresh = (now: string) => aConversation('t', agentId, { turnCount: 0, auditSeq: 0, createdAt: now, updatedAt: now, lastUserTurnAt: now });
  const row = async (id: string): Promise<Record<string, unknown>> => ({ ...(await db.knex('conversations').where({ id }).first()) });

  /** The columns of conversations that any index names, in its key or its condition. */
  async function indexedColumns(): Promise<string[]> {
    const columns = Object.keys(await db.knex('conversations').columnInfo());
    const defs =
      database.name === 'sqlite'
        ? ((await db.knex.raw("select sql from sqlite_master where type = 'index' and tbl_name = 'conversations' and sql is not null")) as { sql: string }[])
            .map((r) => r.sql)
            .concat('(id)') // the primary key's own index
        : (await db.knex.raw<{ rows: { def: string }[] }>("select indexdef as def from pg_indexes where tablename = 'conversations'")).rows.map((r) => r.def);
    return columns.filter((c) => defs.some((d) => new RegExp(`[\\s("\x60]${c}[\\s)",\x60]`).test(d.slice(d.indexOf('('))))).sort();
  }

  it('changes no indexed column with a turn that stays within ten minutes of the deadline', async () => {
    const indexed = await indexedColumns();
    // The sweeps' keys and conditions, and the lists' keys, are among them.
    expect(indexed).toEqual(expect.arrayContaining(['inactive_bucket', 'completed_at', 'status', 'erased_at', 'created_at', 'tenant_id', 'id']));
    const c = fresh(at(1));
    const first = await turn(store, c, at(1));
    const before = await row(c.id);
    await turn(store, c, at(8, 30), first);
    const after = await row(c.id);
    // The turn moved what a turn moves…
    for (const moved of ['updated_at', 'inactive_after', 'last_user_turn_at', 'audit_seq', 'state']) expect(after[moved], moved).not.toEqual(before[moved]);
    // …and nothing any index reads.
    for (const col of indexed) expect(after[col], col).toEqual(before[col]);
    expect(after.inactive_bucket).toBe(inHalfAnHour(at(8)).slice(0, 15));
  });

  it('moves the deadline bucket when a turn crosses ten minutes, and the sweep finds the conversation then', async () => {
    const c = fresh(at(1));
    const first = await turn(store, c, at(1));
    const second = await turn(store, c, at(12), first);
    expect((await row(c.id)).inactive_bucket).toBe(inHalfAnHour(at(12)).slice(0, 15));
    const due = async (now: string) => (await store.dueForAbandonment(now, 100)).map((r) => r.id);
    // Not at the first deadline any more, nor a second before the second; at it, yes.
    expect(await due(inHalfAnHour(at(5)))).not.toContain(c.id);
    expect(await due(inHalfAnHour(at(11, 59)))).not.toContain(c.id);
    expect(await due(inHalfAnHour(at(12)))).toContain(c.id);
    expect(second.inactiveAfter).toBe(inHalfAnHour(at(12)));
  });

  it('files the deadlines a release before it left unfiled or stale, and abandons none early or late', async () => {
    // What an older release's writes leave: an insert without the column (its default, ''), and
    // a turn that moved the deadline but not the bucket.
    const unfiled = fresh(at(20));
    const a = await turn(store, unfiled, at(20));
    await db.knex('conversations').where({ id: unfiled.id }).update({ inactive_bucket: '' });
    const stale = fresh(at(20));
    const b = await turn(store, stale, at(20));
    await db
      .knex('conversations')
      .where({ id: stale.id })
      .update({ inactive_after: inHalfAnHour(at(45)) });
    const noDeadline = fresh(at(20));
    await turn(store, noDeadline, at(20), undefined, { inactiveAfter: null });
    await db.knex('conversations').where({ id: noDeadline.id }).update({ inactive_bucket: '' });

    const mine = (ids: { id: string }[]) => ids.map((r) => r.id).filter((id) => [unfiled.id, stale.id, noDeadline.id].includes(id));
    // 10:40: nothing is due yet, though the unfiled rows are read as candidates.
    expect(mine(await store.dueForAbandonment(at(40), 100))).toEqual([]);
    expect(await store.fileDeadlines(at(40), 100)).toBeGreaterThanOrEqual(2);
    expect((await row(unfiled.id)).inactive_bucket).toBe(a.inactiveAfter!.slice(0, 15));
    expect((await row(noDeadline.id)).inactive_bucket).toBeNull();
    // The stale row's bucket (10:50) is not past yet: it is filed once it is, before its deadline.
    expect((await row(stale.id)).inactive_bucket).toBe(b.inactiveAfter!.slice(0, 15));
    // 10:50, the unfiled row's deadline: it alone is due.
    expect(mine(await store.dueForAbandonment(a.inactiveAfter!, 100))).toEqual([unfiled.id]);
    // 11:05: the stale row is filed under its own deadline (11:15), and due only then.
    expect(mine(await store.dueForAbandonment(at(65), 100))).toEqual([unfiled.id]);
    expect(await store.fileDeadlines(at(65), 100)).toBeGreaterThanOrEqual(1);
    expect((await row(stale.id)).inactive_bucket).toBe(inHalfAnHour(at(45)).slice(0, 15));
    expect(mine(await store.dueForAbandonment(at(75, -1), 100))).toEqual([unfiled.id]);
    expect(mine(await store.dueForAbandonment(at(75), 100)).sort()).toEqual([unfiled.id, stale.id].sort());
    expect(mine(await store.dueForAbandonment('2027-01-01T00:00:00.000Z', 1000))).not.toContain(noDeadline.id);
  });

  it('finds closed conversations for retention by when they closed, and not once erased', async () => {
    const c = fresh(at(30));
    const first = await turn(store, c, at(30));
    await turn(store, c, at(31), first, { status: 'completed', completedAt: at(31), inactiveAfter: null });
    const due = async (before: string) => (await store.dueForRetention({ before, limit: 1000, tenantId: 't' })).map((r) => r.id);
    expect(await due(at(31))).not.toContain(c.id);
    expect(await due(at(31, 1))).toContain(c.id);
    await db
      .knex('conversations')
      .where({ id: c.id })
      .update({ erased_at: at(40) });
    expect(await due(at(59))).not.toContain(c.id);
  });
});
