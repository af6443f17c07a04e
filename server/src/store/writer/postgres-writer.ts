// The converse path's statements on PostgreSQL, each one round trip: named prepared statements
// (parsed and planned once per connection) on a connection from Knex's pool. The write of a
// turn is one statement: data-modifying CTEs update (or insert) the conversation and insert the
// turns, audit entries, event row, webhook outbox rows and idempotency record from JSON arrays
// (json_populate_recordset), each insert guarded by the conversation's update having matched;
// a table the turn has no rows for has no insert in the statement (one statement per shape).
// One statement is atomic by itself, so no BEGIN/COMMIT round trips; a refused update writes
// nothing. The writes that reach the writer within one turn of the event loop share a statement
// (batchStatement), each still applied or refused on its own conditions. The statements' text is
// made in postgres-sql.ts; this file runs them, queues writes and settles their answers.
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db-errors.js';
import { withPooledConnection } from '../knex-adapter.js';
import type { AgentTableRow, ConversationTableRow } from '../rows.js';
import type { WriteRows } from './turn-rows.js';
import { batchStatement, BATCHED, FOLLOWING, STATEMENTS, turnStatement, turnStatementNamed, type Following } from './postgres-sql.js';
import { KeptRows } from './kept-rows.js';
import { ConcurrentUpdateError, DuplicateIdempotencyKeyError, StaleRead, type TurnWriter } from './writer.js';

interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }, cb: (err: Error | null, res: { rows: unknown[] }) => void): void;
}

export class PostgresWriter implements TurnWriter {
  /**
   * `prepared`: run the statements as named prepared statements, parsed and planned once per
   * connection. Off behind a pooler in transaction mode that does not keep them (PgBouncer before
   * 1.21): each is then parsed and planned on every call.
   */
  /** The rows this process wrote last, for the next call on each conversation (kept-rows.ts). */
  readonly kept: KeptRows;
  /** Turn writes that went in batches of several, the statements that carried them, and the batch statements PostgreSQL refused whole. */
  readonly batches = { writes: 0, statements: 0, refused: 0 };
  /** How many more writes the next flush waits for (gather); 0: a flush each turn of the event loop. */
  private gathering = 0;
  /** Turn writes waiting for the end of this turn of the event loop (flush). */
  private queue: PendingWrite[] = [];

  /**
   * `keptBytes`: memory for kept rows (0: none kept, every call reads). `batches` false: every
   * turn write in a statement of its own.
   */
  constructor(
    private readonly knex: Knex,
    private readonly opts: { prepared: boolean; keptBytes?: number; batches?: boolean } = { prepared: true },
  ) {
    this.kept = new KeptRows(opts.keptBytes ?? 0);
  }

  /** Runs a statement; pg prepares a named one on the connection's first use of the name. */
  private run<T>(name: keyof typeof STATEMENTS, values: unknown[]): Promise<T[]> {
    return this.runText(name, STATEMENTS[name], values);
  }

  private runText<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const query = this.opts.prepared ? { name, text, values } : { text, values };
    return withPooledConnection(
      this.knex,
      (conn: PgConnection) =>
        // The callback form: db.ts's time-out guard wraps it.
        new Promise<T[]>((resolve, reject) => {
          conn.query(query, (err, res) => (err ? reject(err) : resolve(res.rows as T[])));
        }),
    );
  }

  async agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined> {
    const agent = (await this.run<AgentTableRow>('agentBySlug', [tenantId, slug])).at(0);
    this.kept.agent(agent);
    return agent;
  }

  async agentWithConversation(tenantId: string, slug: string, conversationId: string): Promise<{ agent?: AgentTableRow; conversation?: ConversationTableRow }> {
    const kept = this.kept.lend(tenantId, slug, conversationId);
    if (kept) return kept;
    const row = (
      await this.run<{ agent: AgentTableRow; conversation: ConversationTableRow | null }>('agentWithConversation', [tenantId, slug, conversationId])
    ).at(0);
    this.kept.agent(row?.agent);
    return row ? { agent: row.agent, conversation: row.conversation ?? undefined } : {};
  }

  async conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined> {
    const rows = agentId
      ? await this.run<ConversationTableRow>('conversationOfAgent', [id, tenantId, agentId])
      : await this.run<ConversationTableRow>('conversation', [id, tenantId]);
    return rows.at(0);
  }

  async takeLease(
    ref: { tenantId: string; id: string },
    lease: { id: string; until: string; now: string; auditSeq?: number; version?: string },
  ): Promise<ConversationTableRow | undefined> {
    const values = [ref.id, ref.tenantId, lease.id, lease.until, lease.now];
    // Taking the lease makes another row version: what is kept is not the stored row any more.
    this.kept.forget(ref.id);
    if (lease.version !== undefined && lease.auditSeq !== undefined) {
      const row = (await this.run<ConversationTableRow>('takeLeaseKept', [...values, lease.auditSeq, lease.version])).at(0);
      if (!row) {
        this.kept.stale(ref.id);
        throw new StaleRead(ref.id);
      }
      return row;
    }
    const rows =
      lease.auditSeq === undefined
        ? await this.run<ConversationTableRow>('takeLease', values)
        : await this.run<ConversationTableRow>('takeLeaseAt', [...values, lease.auditSeq]);
    return rows.at(0);
  }

  async commit(w: WriteRows, lease: { id: string } | null): Promise<void> {
    const rows = tableRows(w);
    // An idempotency key (which another write may hold) and review findings (whose groups a batch
    // would have to merge) go alone.
    if (this.opts.batches === false || FOLLOWING.some((t) => rows[t].length > 0 && !BATCHED.includes(t))) return this.commitOne(w, lease, rows);
    return new Promise<void>((resolve, reject) => this.enqueue({ w, lease, rows, resolve, reject }));
  }

  /** Queues a write for the batch of this turn of the event loop, sent when the loop's I/O is done. */
  private enqueue(p: PendingWrite): void {
    this.queue.push(p);
    if (this.gathering > 0) {
      if (this.queue.length < this.gathering) return;
      this.gathering = 0;
      setImmediate(() => this.flush());
    } else if (this.queue.length === 1) setImmediate(() => this.flush());
  }

  /**
   * The next `n` turn writes wait for one another and go in one flush, as writes that met in one
   * turn of the event loop do: the seam that lets a test form a batch however the event loop
   * interleaves the calls (test/store/turn-batches.test.ts). Nothing in the service calls it.
   * Writes that never come (one that goes alone, a call that failed first) hold the others five
   * seconds at most: then what has come goes.
   */
  gather(n: number): void {
    this.gathering = n;
    setTimeout(() => {
      if (this.gathering !== n) return;
      this.gathering = 0;
      if (this.queue.length) this.flush();
    }, 5000).unref();
  }

  /**
   * The turn writes that reached the writer within one turn of the event loop, in statements of
   * up to MAX_BATCH writes each: a write alone goes as it always did. A process writes one turn at
   * a time per conversation (ConversationStore.exclusive), so a batch never holds two writes of one
   * conversation; should it, the second waits for the next batch.
   */
  private flush(): void {
    const waiting = this.queue.splice(0);
    const seen = new Set<string>();
    // New conversations' writes and updates in batches of their own: each kind has its statements.
    const batches = { new: [] as PendingWrite[], update: [] as PendingWrite[] };
    const send = (kind: keyof typeof batches) => {
      const batch = batches[kind];
      if (batch.length === 1) settleWith(batch[0], this.commitOne(batch[0].w, batch[0].lease, batch[0].rows));
      else if (batch.length > 1) void this.commitBatch(batch, kind === 'new');
      batches[kind] = [];
    };
    for (const p of waiting) {
      if (seen.has(p.w.conversation.id)) {
        this.enqueue(p);
        continue;
      }
      seen.add(p.w.conversation.id);
      const kind = p.w.isNew ? 'new' : 'update';
      batches[kind].push(p);
      if (batches[kind].length === MAX_BATCH) send(kind);
    }
    send('new');
    send('update');
  }

  /**
   * Several turn writes in one statement (batchStatement), each applied or refused on its own
   * conditions, as its own statement would be. A statement PostgreSQL refused wrote nothing, and
   * each write then goes on its own, so that one write's fault (a row a constraint refuses, a
   * deadlock with another process's batch) is that write's alone. A statement whose fate is not
   * known (the connection failed, the time-out) fails every write of it, as it would one write:
   * it may have committed, and a write made again on top of itself would store its turn twice.
   */
  private async commitBatch(waiting: PendingWrite[], isNew: boolean): Promise<void> {
    // In the order of their conversations' ids, so that two processes' batches lock shared rows in
    // the same order and cannot deadlock on them.
    const batch = waiting.sort((a, b) => (a.w.conversation.id < b.w.conversation.id ? -1 : 1));
    const size = 2 ** Math.ceil(Math.log2(batch.length));
    const present = FOLLOWING.filter((t) => batch.some((p) => p.rows[t].length > 0));
    const { name, text } = turnStatementNamed(`${isNew ? 'batchNew' : 'batchTurn'}${size}`, present, () => batchStatement(size, present, isNew));
    const now = new Date().toISOString();
    const values: unknown[] = isNew ? [] : [now];
    // Up to a power of two, so that a handful of statements serve every batch: the rest match no row.
    for (let k = 0; k < size; k++) {
      const p = batch.at(k);
      const row = p ? JSON.stringify(p.w.conversation) : '{}';
      if (isNew) values.push(row);
      else values.push(row, p?.w.expectedAuditSeq ?? -1, p?.lease?.id ?? null, p?.w.readVersion ?? null);
    }
    for (const t of present) values.push(JSON.stringify(batch.map((p) => p.rows[t])));
    let answer: Record<string, unknown> | undefined;
    try {
      answer = (await this.runText<Record<string, unknown>>(name, text, values)).at(0);
    } catch (err) {
      if (refusedWhole(err)) {
        this.batches.refused++;
        for (const p of batch) settleWith(p, this.commitOne(p.w, p.lease, p.rows));
      } else
        for (const p of batch) {
          this.kept.forget(p.w.conversation.id);
          p.reject(err);
        }
      return;
    }
    this.batches.writes += batch.length;
    this.batches.statements++;
    batch.forEach((p, k) => {
      const version = (answer?.[`v${k}`] as string | null | undefined) ?? null;
      try {
        this.settle(
          p.w,
          {
            version,
            watched_until: answer?.[`w${k}`] as string | null,
            current: answer?.[`cur${k}`] as ConversationTableRow | null,
            current_agent: answer?.[`agent${k}`] as AgentTableRow | null,
          },
          now,
        );
        p.resolve();
      } catch (err) {
        p.reject(err);
      }
    });
  }

  private async commitOne(w: WriteRows, lease: { id: string } | null, rows: Record<Following, readonly unknown[]>): Promise<void> {
    const id = w.conversation.id;
    const kept = !w.isNew && w.readVersion !== undefined;
    const present = FOLLOWING.filter((t) => rows[t].length > 0);
    const { name, text } = turnStatementNamed(w.isNew ? 'insertTurn' : kept ? 'updateKeptTurn' : 'updateTurn', present, () =>
      turnStatement(w.isNew, present, kept),
    );
    const tables = present.map((t) => JSON.stringify(rows[t]));
    const row = JSON.stringify(w.conversation);
    const now = new Date().toISOString();
    let answer: Answer | undefined;
    try {
      answer = (
        w.isNew
          ? await this.runText<Answer>(name, text, [row, ...tables])
          : await this.runText<Answer>(name, text, [row, w.expectedAuditSeq, lease?.id ?? null, now, ...(kept ? [w.readVersion] : []), ...tables])
      ).at(0);
    } catch (err) {
      this.kept.forget(id);
      if (isUniqueViolation(err) && (err as { table?: string }).table === 'idempotency_keys') throw new DuplicateIdempotencyKeyError();
      throw err;
    }
    this.settle(w, answer, now);
  }

  /** What a write's answer means for its caller and for the row kept of its conversation. */
  private settle(w: WriteRows, answer: Answer | undefined, now: string): void {
    const id = w.conversation.id;
    if (!answer?.version) {
      if (!w.isNew && w.readVersion !== undefined) {
        this.kept.stale(id, { agent: answer?.current_agent ?? null, conversation: answer?.current ?? null });
        throw new StaleRead(id);
      }
      this.kept.forget(id);
      throw new ConcurrentUpdateError(`conversation ${id} changed underneath this turn`);
    }
    // The row as stored now (a write releases the lease it held, and one without leaves none live).
    // Not one an event stream follows: the stream's mark, renewed with each heartbeat, makes
    // another row version, which would refuse most next calls and cost each an engine run more.
    if (!(answer.watched_until && answer.watched_until >= now)) this.kept.keep({ ...w.conversation, lease_id: null, lease_until: null }, answer.version);
    else this.kept.forget(id);
  }
}

/** A turn write's answer: the new row's version (null: refused), and for a refused kept write the current rows. */
type Answer = {
  version: string | null;
  watched_until?: string | null;
  current?: ConversationTableRow | null;
  current_agent?: AgentTableRow | null;
};

/** A turn write waiting for its batch. */
interface PendingWrite {
  w: WriteRows;
  lease: { id: string } | null;
  rows: Record<Following, readonly unknown[]>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The most writes one batch statement carries (a power of two). */
const MAX_BATCH = 16;

const settleWith = (p: PendingWrite, done: Promise<void>) => void done.then(p.resolve, p.reject);

/**
 * Whether PostgreSQL answered the statement with an error, so that it wrote nothing: an error
 * message from the server (pg's DatabaseError, with a severity and a SQLSTATE), other than a lost
 * connection (class 08), a shutdown or crash (57P) or an internal error (XX), after which the
 * statement's fate is not known. A socket's error (`EPIPE`, `ECONNRESET`) or the client's time-out
 * has no severity.
 */
function refusedWhole(err: unknown): boolean {
  const { code, severity } = (err ?? {}) as { code?: unknown; severity?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57P|XX)/.test(code);
}

/** A write's rows by the table they go to. */
function tableRows(w: WriteRows): Record<Following, readonly unknown[]> {
  return {
    turns: w.turns,
    audit_entries: w.audit,
    conversation_events: w.events,
    webhook_deliveries: w.webhooks,
    idempotency_keys: w.idempotency ? [w.idempotency] : [],
    agent_stats: w.stats,
    agent_closes: w.closes,
    knowledge_stats: w.knowledgeStats,
    review_groups: w.reviewGroups,
    review_occurrences: w.reviewOccurrences,
  };
}
