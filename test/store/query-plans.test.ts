// The queries whose cost must stay flat as tables grow are answered from an index, on both
// databases: each store call runs, its SQL is captured, and the database's own plan for it must
// not scan a whole table. On PostgreSQL the planner is told to avoid sequential scans, so that a
// small test table still shows whether an index *can* answer the query; a dropped index fails here.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { encodeCursor } from '../../server/src/lib/cursor.js';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import { AnalyticsStore } from '../../server/src/store/analytics-store.js';
import { ConversationStore } from '../../server/src/store/conversations/conversation-store.js';
import type { Database } from '../../server/src/store/db.js';
import { withPooledConnection } from '../../server/src/store/knex-adapter.js';
import { ReplayStore } from '../../server/src/store/review/replay-store.js';
import { ReleaseStore } from '../../server/src/store/release-store.js';
import { ReviewStore, type ReviewGroupRow } from '../../server/src/store/review/review-store.js';
import { EvaluationStore } from '../../server/src/store/review/evaluation-store.js';
import { listDeliveries, WebhookStore } from '../../server/src/store/webhook-store.js';
import { monthStart, partitionName } from '../../server/src/store/partitions.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const T0 = '2026-11-22T10:00:00.000Z';

interface Captured {
  sql: string;
  bindings: unknown[];
}

interface PgConn {
  query(text: string, values?: unknown[]): Promise<{ rows: { 'QUERY PLAN': string }[] }>;
}

eachDatabase('query plans on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let store: ConversationStore;
  let agentId: string;
  const id = randomUUID();

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    store = new ConversationStore(db);
    agentId = (await new AgentStore(db).put('t', 'bot', { name: 'b' }, 'd1', T0)).agent.id;
  });
  afterAll(async () => drop?.());

  /** The SQL statements `fn` sends through Knex. */
  async function capture(fn: () => Promise<unknown>): Promise<Captured[]> {
    const seen: Captured[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) => seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
    db.knex.on('query', listener);
    try {
      await fn();
    } finally {
      db.knex.off('query', listener);
    }
    expect(seen.length).toBeGreaterThan(0);
    return seen;
  }

  /** The plan's text, one line per node. */
  async function plan(q: Captured): Promise<string> {
    if (database.name === 'sqlite') {
      const rows = (await db.knex.raw(`explain query plan ${q.sql}`, q.bindings as never[])) as { detail: string }[];
      return rows.map((r) => r.detail).join('\n');
    }
    return withPooledConnection(db.knex, async (conn: PgConn) => {
      await conn.query('set enable_seqscan = off');
      try {
        const r = await conn.query(`explain ${q.sql}`, q.bindings);
        return r.rows.map((row) => row['QUERY PLAN']).join('\n');
      } finally {
        await conn.query('reset enable_seqscan');
      }
    });
  }

  /**
   * The indexes that serve as `index`: itself, and on PostgreSQL, where `index` is on a
   * partitioned table, each partition's index attached to it (store/partitions.ts).
   */
  async function servingAs(index: string): Promise<Set<string>> {
    if (database.name === 'sqlite') return new Set([index]);
    const r = await db.knex.raw<{ rows: { name: string }[] }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = to_regclass(?)`,
      [index],
    );
    return new Set([index, ...r.rows.map((x) => x.name)]);
  }

  /**
   * Every statement of `fn` reads `table` (on PostgreSQL each of its partitions, when partitioned)
   * through an index (through `index`, when named).
   */
  async function indexed(table: string, fn: () => Promise<unknown>, index?: string): Promise<void> {
    const serving = index ? await servingAs(index) : null;
    for (const q of await capture(fn)) {
      const text = await plan(q);
      const scan =
        database.name === 'sqlite' ? new RegExp(`SCAN ${table}\\b(?! USING)`) : new RegExp(`Seq Scan on ${table}(_legacy|_default|_p\\d{4}_\\d{2})?\\b`);
      expect(text, `${q.sql}\n${text}`).not.toMatch(scan);
      // Statements on other tables (a conversation's head, read beside its entries) are not this index's.
      if (!serving || !new RegExp(`["\\x60\\s]${table}["\\x60\\s]`).test(q.sql)) continue;
      if (database.name === 'sqlite') {
        expect(text, `${q.sql}\n${text}`).toMatch(new RegExp(`\\b${index}\\b`));
        continue;
      }
      // Each scan of the table or one of its partitions goes through the index or its partition's.
      const used = [...text.matchAll(new RegExp(`using (\\S+) on ${table}(_legacy|_default|_p\\d{4}_\\d{2})?\\b`, 'g'))].map((m) => m[1]);
      expect(used.length, `${q.sql}\n${text}`).toBeGreaterThan(0);
      for (const u of used) expect(serving.has(u), `${q.sql}\n${text}\n${u} is not ${index}`).toBe(true);
    }
  }

  /** A table's primary key index, as each database names it. */
  const pk = (table: string) => (database.name === 'sqlite' ? `sqlite_autoindex_${table}_1` : `${table}_pkey`);

  const after = { createdAt: T0, id };
  // A filter that matches few rows is answered by an index that starts with it, not by reading
  // every conversation of the tenant in list order to fill a page.
  const filters = [
    { f: {}, index: 'conversations_list_idx' },
    { f: { status: 'active' as const }, index: 'conversations_status_idx' },
    { f: { userId: 'u1' }, index: 'conversations_agent_user_idx' },
    { f: { capability: 'c' }, index: 'conversations_capability_idx' },
    { f: { createdAfter: T0, createdBefore: T0 }, index: 'conversations_list_idx' },
  ];

  it.each(filters)("lists an agent's conversations with $f, from a cursor, through $index", async ({ f, index }) => {
    await indexed('conversations', () => store.list({ tenantId: 't', agentId }, f, { limit: 21, after }), index);
  });

  it('reads a conversation, its turns, its audit entries and its events by index', async () => {
    await indexed('conversations', () => store.get('t', agentId, id));
    await indexed('turns', () => store.turns('t', id), pk('turns'));
    await indexed('audit_entries', () => store.audit({ tenantId: 't', id }, { limit: 50, afterSeq: 1000 }), pk('audit_entries'));
    await indexed('audit_entries', () => store.verifyAudit('t', id), pk('audit_entries'));
    await indexed('conversation_events', () => store.eventLog.events('t', id, { row: 0, index: 0 }), 'conversation_events_seq_idx');
    await indexed('conversation_events', () => store.eventLog.lastEventPosition('t', id), 'conversation_events_seq_idx');
  });

  if (database.name === 'postgres')
    it("reads a conversation's history from the months since it began only", async () => {
      const createdAt = new Date(Date.parse(monthStart(Date.now(), 1)) + 4 * 86_400_000).toISOString();
      for (const [table, read] of [
        ['turns', () => store.turns('t', id, createdAt)],
        ['turns', () => store.recentTurns('t', id, 10, createdAt)],
        ['audit_entries', () => store.audit({ tenantId: 't', id, createdAt }, { limit: 50, afterSeq: 0 })],
        ['conversation_events', () => store.eventLog.events('t', id, { row: 0, index: 0 }, { createdAt })],
        ['conversation_events', () => store.eventLog.lastEventPosition('t', id, createdAt)],
      ] as const) {
        for (const q of await capture(read)) {
          const text = await plan(q);
          expect(text).toContain(`${table}_default`);
          expect(text).toContain(partitionName(table, monthStart(Date.now(), 1)));
          expect(text).not.toContain(`${table}_legacy`);
        }
      }
    });

  it("finds one user's conversations, and those due for abandonment or erasure, by index", async () => {
    await indexed('conversations', () => store.idsOfUser('t', 'u1'));
    await indexed('conversations', () => store.dueForAbandonment(T0, 100), 'conversations_due_idx');
    await indexed('conversations', () => store.fileDeadlines(T0, 100));
    await indexed('conversations', () => store.dueForRetention({ before: T0, limit: 100 }), 'conversations_retention_idx');
    await indexed('conversations', () => store.dueForRetention({ before: T0, limit: 100, tenantId: 't' }));
  });

  it("renews and releases a batch's lease through the primary key, by the ids it took", async () => {
    await indexed('conversations', () =>
      db
        .knex('conversations')
        .where('tenant_id', 't')
        .whereIn('id', [id, randomUUID()])
        .andWhere('lease_id', randomUUID())
        .update({ lease_id: null, lease_until: null }),
    );
  });

  it("reads an agent's analytics by index", async () => {
    const analytics = new AnalyticsStore(db);
    const window = { tenantId: 't', agentId, fromHour: '2026-11-01T00', toHour: '2026-11-22T00' };
    await indexed('agent_stats', () => analytics.byCapability(window));
    await indexed('agent_stats', () => analytics.byOutcome(window));
    await indexed('agent_stats', () => analytics.byVersion(window));
    await indexed('agent_stats', () => analytics.series(window, 10));
    const span = { tenantId: 't', agentId, from: '2026-11-01T00:00:00.000Z', to: T0 };
    await indexed('conversations', () => analytics.stillOpen(span));
    await indexed('agent_closes', () => analytics.closedMedians(window));
  });

  it('lists webhook deliveries from a cursor, and finds due ones, by index', async () => {
    await indexed(
      'webhook_deliveries',
      () => listDeliveries(db.knex, 't', agentId, { limit: 20, cursor: encodeCursor([T0, id]) }),
      'webhook_deliveries_list_idx',
    );
    await indexed('webhook_deliveries', () => new WebhookStore(db).due(T0, 4, 100), 'webhook_deliveries_due_idx');
  });

  it("reads an agent's review inbox, its counts, its items' newest messages, and its evaluations by index", async () => {
    const review = new ReviewStore(db);
    for (const reason of [undefined, 'low_margin']) {
      const f = { status: 'open', ...(reason ? { reason } : {}) };
      await indexed(
        'review_groups',
        () => review.list('t', agentId, f, { limit: 21, after: [T0, id] }),
        reason ? 'review_groups_reason_idx' : 'review_groups_list_idx',
      );
    }
    await indexed('review_groups', () => review.list('t', agentId, { status: 'open', since: T0, until: T0 }, { limit: 21, after: null }));
    await indexed('review_groups', () => review.counts('t', agentId, { status: 'open', since: T0 }), 'review_groups_reason_idx');
    const group = (status: string): ReviewGroupRow => ({
      id: randomUUID(),
      reason: 'fallback',
      groupKey: 'k',
      count: 1,
      firstSeenAt: T0,
      lastSeenAt: T0,
      status,
      action: null,
      actedBy: null,
      actedAt: null,
    });
    await indexed('review_occurrences', () => review.occurrences('t', agentId, [group('open'), group('added')], 3));
    await indexed('evaluations', () => new EvaluationStore(db).list('t', agentId, { limit: 21, after: [T0, id], now: T0 }), 'evaluations_agent_idx');
  });

  it("reads an agent's release record, and an evaluation of the same versions and inputs, by index", async () => {
    const releases = new ReleaseStore(db);
    await indexed('release_records', () => releases.list('t', agentId, { limit: 21, before: 40 }), 'release_records_seq');
    await indexed('release_records', () => releases.wasReleased('t', agentId, 3), 'release_records_seq');
    const digests = { digest: 'a'.repeat(64), baseline: 'b'.repeat(64), inputs: 'c'.repeat(64) };
    await indexed('evaluations', () => new EvaluationStore(db).sameEvaluation('t', agentId, digests, T0), 'evaluations_digest_idx');
  });

  it("lists an agent's replays from a cursor by index", async () => {
    await indexed('replays', () => new ReplayStore(db).list('t', agentId, { limit: 21, after: [T0, id], now: T0 }), 'replays_agent_idx');
  });
});
