// The converse path's statements on SQLite: prepared once per connection and run on Knex's own
// connection (taken from Knex's pool, so never inside another Knex transaction). Knex builds and
// prepares every statement anew; on a converse call that was about half of the server's CPU time
// (docs/performance.md), so the few statements of that path are kept prepared here.
//
// Turn writes are group-committed: the writes that arrive within one turn of the event loop are
// run in one transaction, each inside its own savepoint, so one write that fails (a conversation
// changed underneath it, a duplicate idempotency key) rolls back alone and the others commit.
// Every caller is answered only after the transaction that holds its write has committed. The
// commit (writing the WAL frames of every page the turn touched, and now and then a checkpoint)
// was the largest single cost of a converse call; a batch shares the pages its writes touch.
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db-errors.js';
import { withPooledConnection } from '../knex-adapter.js';
import type { AgentTableRow, ConversationTableRow } from '../rows.js';
import {
  CLOSE_UPSERT_TAIL,
  KNOWLEDGE_STAT_UPSERT_TAIL,
  COLUMNS,
  INSERT_ONLY_COLUMNS,
  REVIEW_GROUP_UPSERT_TAIL,
  STABLE_INDEXED,
  STAT_UPSERT_TAIL,
  type StableIndexed,
  type WriteRows,
} from './turn-rows.js';
import { ConcurrentUpdateError, DuplicateIdempotencyKeyError, type TurnWriter } from './writer.js';

type Params = Record<string, unknown>;

interface Statement {
  run(params?: Params): { changes: number };
  get(params?: Params): unknown;
}

type Transaction<A extends unknown[], R> = ((...args: A) => R) & { immediate(...args: A): R };

interface Connection {
  readonly inTransaction: boolean;
  prepare(sql: string): Statement;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): Transaction<A, R>;
}

const insertSql = (table: string, columns: readonly string[]) =>
  `insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`;

const UPDATABLE = COLUMNS.conversations.filter((c) => !INSERT_ONLY_COLUMNS.includes(c));
/** The columns every update sets: all but the indexed ones a write may leave unchanged (turn-rows.ts, STABLE_INDEXED). */
const ALWAYS_SET = UPDATABLE.filter((c) => !(STABLE_INDEXED as readonly string[]).includes(c));

/** The update of a conversation that sets ALWAYS_SET and `indexed`: one statement per subset, prepared when first used. */
const updateSql = (indexed: readonly StableIndexed[]) =>
  `update conversations set ${[...ALWAYS_SET, ...indexed].map((c) => `${c} = @${c}`).join(', ')} where id = @id and tenant_id = @tenant_id and audit_seq = @expected_audit_seq`;

function prepareStatements(conn: Connection) {
  return {
    agentBySlug: conn.prepare('select * from agents where tenant_id = @tenant_id and slug = @slug'),
    conversation: conn.prepare('select * from conversations where id = @id and tenant_id = @tenant_id and agent_id = @agent_id'),
    insertConversation: conn.prepare(insertSql('conversations', COLUMNS.conversations)),
    updateConversation: (() => {
      const bySubset = new Map<string, Statement>();
      return (indexed: readonly StableIndexed[]) => {
        const key = indexed.join(',');
        let st = bySubset.get(key);
        if (!st) bySubset.set(key, (st = conn.prepare(updateSql(indexed))));
        return st;
      };
    })(),
    insertTurn: conn.prepare(insertSql('turns', COLUMNS.turns)),
    insertAudit: conn.prepare(insertSql('audit_entries', COLUMNS.audit_entries)),
    insertIdempotency: conn.prepare(insertSql('idempotency_keys', COLUMNS.idempotency_keys)),
    insertEvent: conn.prepare(insertSql('conversation_events', COLUMNS.conversation_events)),
    insertWebhook: conn.prepare(insertSql('webhook_deliveries', COLUMNS.webhook_deliveries)),
    addStats: conn.prepare(`${insertSql('agent_stats', COLUMNS.agent_stats)} ${STAT_UPSERT_TAIL}`),
    addCloses: conn.prepare(`${insertSql('agent_closes', COLUMNS.agent_closes)} ${CLOSE_UPSERT_TAIL}`),
    addKnowledgeStats: conn.prepare(`${insertSql('knowledge_stats', COLUMNS.knowledge_stats)} ${KNOWLEDGE_STAT_UPSERT_TAIL}`),
    addReviewGroup: conn.prepare(`${insertSql('review_groups', COLUMNS.review_groups)} ${REVIEW_GROUP_UPSERT_TAIL}`),
    insertReviewOccurrence: conn.prepare(insertSql('review_occurrences', COLUMNS.review_occurrences)),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

interface Prepared extends Statements {
  writeOne: Transaction<[WriteRows], void>;
  writeMany: Transaction<[Pending[]], unknown[]>;
}

function prepareAll(conn: Connection): Prepared {
  const statements = prepareStatements(conn);
  // Called inside another transaction function, a transaction function runs as a savepoint.
  const writeOne = conn.transaction((rows: WriteRows) => write(statements, rows));
  const writeMany = conn.transaction((batch: Pending[]) =>
    batch.map((p) => {
      try {
        writeOne(p.rows);
        return undefined;
      } catch (err) {
        // An error SQLite answers by rolling back the whole transaction (a full disk, say) ends
        // the batch: nothing of it is written, and every caller in it is told so.
        if (!conn.inTransaction) throw err;
        return err;
      }
    }),
  );
  return { ...statements, writeOne, writeMany };
}

/** Writes per group commit at most: bounds the time one transaction holds the connection. */
const MAX_BATCH = 64;

interface Pending {
  rows: WriteRows;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class SqliteWriter implements TurnWriter {
  private readonly prepared = new WeakMap<Connection, Prepared>();
  private queue: Pending[] = [];
  private scheduled = false;

  constructor(private readonly knex: Knex) {}

  /** Runs `fn` synchronously on a pooled connection with its prepared statements. */
  private run<T>(fn: (s: Prepared) => T): Promise<T> {
    return withPooledConnection(this.knex, (conn: Connection) => {
      let s = this.prepared.get(conn);
      if (!s) {
        s = prepareAll(conn);
        this.prepared.set(conn, s);
      }
      return fn(s);
    });
  }

  agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined> {
    return this.run((s) => s.agentBySlug.get({ tenant_id: tenantId, slug }) as AgentTableRow | undefined);
  }

  /** The agent alone: a conversation's read is a prepared statement in this process, as cheap later as now. */
  async agentWithConversation(tenantId: string, slug: string): Promise<{ agent?: AgentTableRow; conversation?: ConversationTableRow }> {
    return { agent: await this.agentBySlug(tenantId, slug) };
  }

  async conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined> {
    // Without an agent (operator and sweeper paths, off the hot path) Knex builds the query.
    if (!agentId) return this.knex<ConversationTableRow>('conversations').where({ id, tenant_id: tenantId }).first();
    return this.run((s) => s.conversation.get({ id, tenant_id: tenantId, agent_id: agentId }) as ConversationTableRow | undefined);
  }

  /** Leases are for databases several processes share; through Knex, for completeness. */
  async takeLease(
    ref: { tenantId: string; id: string },
    lease: { id: string; until: string; now: string; auditSeq?: number },
  ): Promise<ConversationTableRow | undefined> {
    const q = this.knex('conversations')
      .where({ id: ref.id, tenant_id: ref.tenantId })
      .andWhere((w) => w.whereNull('lease_id').orWhere('lease_until', '<', lease.now));
    if (lease.auditSeq !== undefined) q.andWhere('audit_seq', lease.auditSeq);
    const rows = await q.update({ lease_id: lease.id, lease_until: lease.until }).returning('*');
    return rows.at(0);
  }

  /** SQLite has one writer at a time; `lease` is for databases several processes share, and unused here. */
  commit(rows: WriteRows, _lease: { id: string } | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.queue.splice(0, MAX_BATCH);
      this.schedule();
      this.run((s) => writeBatch(s, batch)).then(
        (outcomes) => outcomes.forEach((err, i) => (err === undefined ? batch[i].resolve() : batch[i].reject(err))),
        (err: unknown) => batch.forEach((p) => p.reject(err)),
      );
    });
  }
}

/**
 * Runs each write in its own savepoint inside one transaction (BEGIN IMMEDIATE: the write lock is
 * taken once, up front); answers, per write, undefined when it was written or the error that
 * rolled it back. A batch of one is a plain transaction.
 */
function writeBatch(s: Prepared, batch: Pending[]): unknown[] {
  if (batch.length === 1) {
    s.writeOne.immediate(batch[0].rows);
    return [undefined];
  }
  return s.writeMany.immediate(batch);
}

function write(s: Statements, w: WriteRows): void {
  const row = sqliteParams(w.conversation);
  if (w.isNew) s.insertConversation.run(row);
  else if (s.updateConversation(w.setIndexed).run(Object.assign(row, { expected_audit_seq: w.expectedAuditSeq })).changes !== 1) {
    throw new ConcurrentUpdateError(`conversation ${w.conversation.id} changed underneath this turn`);
  }
  for (const t of w.turns) s.insertTurn.run(t);
  for (const a of w.audit) s.insertAudit.run(a);
  for (const e of w.events) s.insertEvent.run(e);
  for (const h of w.webhooks) s.insertWebhook.run(h);
  for (const r of w.stats) s.addStats.run(r);
  for (const r of w.closes) s.addCloses.run(r);
  for (const r of w.knowledgeStats) s.addKnowledgeStats.run(r);
  for (const r of w.reviewGroups) s.addReviewGroup.run(r);
  for (const r of w.reviewOccurrences) s.insertReviewOccurrence.run(r);
  if (w.idempotency) {
    try {
      s.insertIdempotency.run(w.idempotency);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateIdempotencyKeyError();
      throw err;
    }
  }
}

/** better-sqlite3 binds numbers, strings, bigints, buffers and null; booleans become 0/1. */
function sqliteParams(row: Params): Params {
  const out: Params = {};
  for (const k in row) {
    const v = row[k];
    out[k] = typeof v === 'boolean' ? (v ? 1 : 0) : v === undefined ? null : v;
  }
  return out;
}
