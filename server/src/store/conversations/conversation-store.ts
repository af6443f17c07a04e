// Conversations, turns, audit entries and idempotency records (SQLite or PostgreSQL): calls on
// one conversation run one at a time (exclusive), each with one write through the database's
// writer (writer.ts). Every query filters by tenant_id.
import type { Knex } from 'knex';
import type { AuditType, ConversationStatus } from '@switchboard/contract';
import type { AuditRow, Channel, Conversation, ErasureRules, TurnRow } from '../../domain.js';
import { KeyedLock } from '../../lib/keyed-lock.js';
import { stateHash, verifyChain, type ChainKeys, type ChainReport } from '../../lib/audit-chain.js';
import { readSeal } from './chain-seals.js';
import type { Database } from '../db.js';
import { eraseConversationRows } from './erase-rows.js';
import { EventLog } from './event-log.js';
import { LeaseFirst, Leases, leaseIsLive, type ConversationRef, type Lease } from './leases.js';
import { conversationHistory, dropHistoryBefore, ensurePartitions, historyHorizon, partitionedUntil, type HistoryDropped } from '../partitions.js';
import type { ConversationTableRow } from '../rows.js';
import { bucketOf, rowToAudit, rowToConversation, rowToTurn, writeRows, type TurnWrite } from '../writer/turn-rows.js';
import type { TurnWriter } from '../writer/writer.js';

export type { TurnWrite } from '../writer/turn-rows.js';
export type { ConversationRef };
export { ConcurrentUpdateError, DuplicateIdempotencyKeyError, StaleRead } from '../writer/writer.js';

export interface ListFilters {
  status?: ConversationStatus;
  userId?: string;
  capability?: string;
  /** web: conversations of the web chat widget; api: the others. */
  channel?: 'api' | Channel['kind'];
  createdAfter?: string;
  createdBefore?: string;
}

export interface IdempotencyRecord {
  requestHash: string;
  conversationId: string;
  response: unknown;
}

/** A conversation's row as read with its agent (AgentStore.bySlugWithConversation), for exclusive's `read`. */
export type PrefetchedConversation = ConversationTableRow;

/** Reads and the one write of a call on a conversation, under that conversation's lock. */
export interface ConversationUnit {
  /** `agentId` null: any agent of the tenant. */
  load(tenantId: string, agentId: string | null, id: string): Promise<Conversation | null>;
  commit(write: TurnWrite): Promise<void>;
  /** Erases what the conversation says about a person, keeping what `rules` say (service/erasure.ts). */
  erase(conversation: Conversation, now: string, rules: ErasureRules): Promise<void>;
  /**
   * Before the call's first effect outside the process (an action, a model call): an optimistic
   * call takes the conversation's lease here, or starts again holding it (exclusive).
   */
  beforeEffect(): Promise<void>;
}

/** What a turn read returns: its keys are known already. */
const TURN_FIELDS = ['idx', 'role', 'message', 'timestamp', 'phase', 'options', 'author', 'citations'] as const;

/** The partial indexes' conditions (migration 023): open conversations, and closed ones not yet erased. */
const OPEN_CONDITION = "status in ('active', 'paused')";
const CLOSED_CONDITION = "status in ('completed', 'abandoned') and erased_at is null";

/** Conversations erased per transaction by eraseMany. */
const ERASE_BATCH = 100;

export class ConversationStore {
  private readonly knex: Knex;
  private readonly writer: TurnWriter;
  private readonly locks = new KeyedLock();
  private readonly leases: Leases;
  /** The events committed with conversations, and the notices of other processes' commits and releases. */
  readonly eventLog: EventLog;
  /** Conversation calls under way; shutdown waits for them to finish before closing the database. */
  busy = 0;
  /** Where the last successful upkeep left every table's months ending (maintainHistory). */
  private partitionedUntil = '';

  /** The operator's audit chain key (AUDIT_CHAIN_KEY): entries are then HMAC-chained. */
  private readonly chainKey?: Buffer;
  private readonly keys?: ChainKeys;

  constructor(
    private readonly db: Database,
    opts: { leaseMs?: number; chainKey?: Buffer; previousKeys?: readonly Buffer[] } = {},
  ) {
    this.chainKey = opts.chainKey;
    this.keys = opts.chainKey ? { current: opts.chainKey, previous: opts.previousKeys ?? [] } : undefined;
    this.knex = db.knex;
    this.writer = db.writer;
    this.eventLog = new EventLog(db);
    this.leases = new Leases({ knex: db.knex, writer: db.writer, released: this.eventLog.released, leaseMs: opts.leaseMs ?? 60_000 });
  }

  private readonly committed: ((write: TurnWrite) => void | Promise<void>)[] = [];

  /**
   * Calls `fn` with each write once it is committed (metrics). The write is stored by then, so
   * nothing `fn` does may fail the call or reach the process: a throw or a rejection goes to
   * `onHookError` (logged and counted by the app).
   */
  onCommit(fn: (write: TurnWrite) => void | Promise<void>): void {
    this.committed.push(fn);
  }

  /** Receives what a commit hook threw or rejected with. */
  onHookError: (err: unknown) => void = () => {};

  private afterCommit(write: TurnWrite): void {
    for (const fn of this.committed) {
      try {
        const r = fn(write);
        if (r) r.catch((err: unknown) => this.hookFailed(err));
      } catch (err) {
        this.hookFailed(err);
      }
    }
  }

  private hookFailed(err: unknown): void {
    try {
      this.onHookError(err);
    } catch {
      /* the reporter itself failed: nothing else can be told */
    }
  }

  /**
   * Runs `fn` with the conversation to itself: one call at a time per conversation in this
   * process (first come, first served), and, on a database several processes share, across
   * processes by a lease on the conversation row (leases.ts). `target` null is a new
   * conversation: nothing to hold. With `skipIfBusy`, a conversation another process holds is
   * skipped (resolves undefined). With `optimistic`, `fn` first runs without the lease (one read
   * and one conditioned write, leases.ts optimistic) and, should the row be held or change
   * meanwhile before `fn` wrote or called out, once more holding it: `fn` must be safe to run
   * again up to its first `beforeEffect` or commit. `read`: the conversation's row as read before
   * (with its agent), for an optimistic call's first load when no other call of this process on
   * the conversation came first (one that did may have changed it).
   */
  async exclusive<T>(
    lockKey: string,
    target: ConversationRef | null,
    fn: (unit: ConversationUnit) => Promise<T>,
    opts: { skipIfBusy?: boolean; optimistic?: boolean; read?: PrefetchedConversation } = {},
  ): Promise<T | undefined> {
    this.busy++;
    const read = this.locks.isHeld(lockKey) ? undefined : opts.read;
    try {
      return await this.locks.run(lockKey, async () => {
        if (this.db.adapter.shared && target) {
          if (opts.optimistic && !opts.skipIfBusy) {
            const done = await this.leases.optimistic(target, read, (lease) => fn(this.unit(lease)));
            if (done) return done.value;
          }
          return this.leases.hold(target, (lease) => fn(this.unit(lease)), opts.skipIfBusy ?? false);
        }
        return fn(this.unit(null));
      });
    } finally {
      this.busy--;
    }
  }

  /** The row taking the lease returned, once, when it is the one asked for (a later load reads again). */
  private leasedRow(lease: Lease | null, q: { tenantId: string; agentId: string | null; id: string }): ConversationTableRow | undefined {
    const row = lease?.row;
    if (!row) return undefined;
    lease.row = undefined;
    if (row.id !== q.id || row.tenant_id !== q.tenantId) return undefined;
    // Of another agent: as the query with the agent would, nothing.
    return q.agentId && row.agent_id !== q.agentId ? undefined : row;
  }

  private unit(lease: Lease | null): ConversationUnit {
    // An optimistic call before it took its lease or wrote (leases.ts).
    const unsettled = () => (lease?.pending && !lease.pending.settled ? lease.pending : null);
    return {
      load: async (tenantId, agentId, id) => {
        const row = this.leasedRow(lease, { tenantId, agentId, id }) ?? (await this.writer.conversation(tenantId, agentId, id));
        const pending = unsettled();
        if (pending && row) {
          // Another call is answering it: wait for it, holding the lease, rather than work on a row about to change.
          if (leaseIsLive(row, new Date().toISOString())) throw new LeaseFirst('the conversation is held by another call');
          pending.readSeq = Number(row.audit_seq);
          pending.readVersion = row.row_version;
        }
        return row ? rowToConversation(row) : null;
      },
      beforeEffect: async () => {
        await unsettled()?.take();
      },
      commit: async (write) => {
        const pending = unsettled();
        const rows = writeRows(write, this.chainKey);
        // A kept row (kept-rows.ts) is written on only while the stored row is still that version.
        if (pending?.readVersion !== undefined && pending.readSeq === write.expectedAuditSeq) rows.readVersion = pending.readVersion;
        await this.writer.commit(rows, pending ? null : lease);
        if (pending) pending.settled = true;
        this.afterCommit(write);
        // The commit released the lease with its update.
        if (lease) lease.held = false;
        // A shared database announces commits to every process (NOTIFY); otherwise the commit tells this one.
        if (!this.db.adapter.shared && write.events?.length) this.eventLog.changes.emit('event', write.conversation.id);
      },
      erase: async (c, now, rules) => {
        await unsettled()?.take();
        const adapter = this.db.adapter;
        await adapter.secureErase(this.knex, (trx) =>
          eraseConversationRows(trx, adapter, { conversations: [c], now, rules, leased: lease !== null, chainKey: this.chainKey }),
        );
        if (lease) lease.held = false;
      },
    };
  }

  /**
   * Erases those of a tenant's conversations `ids` that `accept` still accepts once held,
   * ERASE_BATCH to a transaction whose statements each cover the whole batch (erase-rows.ts).
   * A batch holds its conversations' locks in this process and, on a shared database, their
   * leases, taken in one statement; a conversation another process holds is then erased on its
   * own after the batches (waited for, or skipped with `skipIfBusy`). Returns how many were erased.
   */
  async eraseMany(
    tenantId: string,
    ids: string[],
    o: { accept: (c: Conversation) => boolean; now: () => string; rules: ErasureRules; skipIfBusy?: boolean },
  ): Promise<number> {
    const adapter = this.db.adapter;
    const eraseRows = async (rows: ConversationTableRow[]) => {
      const conversations = rows.map(rowToConversation).filter(o.accept);
      const leased = adapter.shared;
      await adapter.secureErase(this.knex, (trx) =>
        eraseConversationRows(trx, adapter, { conversations, now: o.now(), rules: o.rules, leased, chainKey: this.chainKey }),
      );
      return conversations.length;
    };
    let erased = 0;
    const elsewhere: string[] = [];
    for (let i = 0; i < ids.length; i += ERASE_BATCH) {
      const batch = ids.slice(i, i + ERASE_BATCH);
      this.busy++;
      try {
        erased += await this.locks.runAll(
          batch.map((id) => `conv:${id}`),
          async () => {
            if (!adapter.shared) return eraseRows(await this.knex('conversations').where('tenant_id', tenantId).whereIn('id', batch));
            const { result, notTaken } = await this.leases.holdMany(tenantId, batch, eraseRows);
            elsewhere.push(...notTaken);
            return result;
          },
        );
      } finally {
        this.busy--;
      }
    }
    for (const id of elsewhere) {
      const done = await this.exclusive(
        `conv:${id}`,
        { tenantId, id },
        async (unit) => {
          const c = await unit.load(tenantId, null, id);
          if (!c || !o.accept(c)) return false;
          await unit.erase(c, o.now(), o.rules);
          return true;
        },
        { skipIfBusy: o.skipIfBusy },
      );
      if (done) erased++;
    }
    return erased;
  }

  /** Serialises work on one idempotency key in this process. */
  withKeyLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(key, fn);
  }

  async findIdempotency(tenantId: string, agentId: string, key: string): Promise<IdempotencyRecord | null> {
    const r = await this.knex('idempotency_keys').where({ tenant_id: tenantId, agent_id: agentId, key }).first();
    return r ? { requestHash: r.request_hash, conversationId: r.conversation_id, response: JSON.parse(r.response) } : null;
  }

  async get(tenantId: string, agentId: string, id: string): Promise<Conversation | null> {
    const row = await this.knex('conversations').where({ id, tenant_id: tenantId, agent_id: agentId }).first();
    return row ? rowToConversation(row) : null;
  }

  /** Deletes up to `limit` idempotency records created before `before`, oldest first; answers how many. */
  async deleteIdempotencyBefore(before: string, limit: number): Promise<number> {
    const oldest = this.knex('idempotency_keys').where('created_at', '<', before).orderBy('created_at').limit(limit).select('tenant_id', 'agent_id', 'key');
    return this.knex('idempotency_keys').whereIn(['tenant_id', 'agent_id', 'key'], oldest).delete();
  }

  /** Which of these conversations of the tenant have been erased. */
  async erasedAmong(tenantId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.knex('conversations').where('tenant_id', tenantId).whereIn('id', ids).whereNotNull('erased_at').select('id');
    return new Set(rows.map((r: { id: string }) => r.id));
  }

  /**
   * `createdAt`, the conversation's creation time, where the caller has it: on PostgreSQL the read
   * then skips the months before it (store/partitions.ts, historySince).
   */
  async turns(tenantId: string, conversationId: string, createdAt?: string): Promise<TurnRow[]> {
    const rows = await conversationHistory(this.knex, 'turns', createdAt)
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .orderBy('idx', 'asc')
      .select(...TURN_FIELDS);
    return rows.map(rowToTurn);
  }

  /** The last `n` turns, oldest first (what a generative phase sends the model). */
  async recentTurns(tenantId: string, conversationId: string, n: number, createdAt?: string): Promise<TurnRow[]> {
    if (n <= 0) return [];
    const rows = await conversationHistory(this.knex, 'turns', createdAt)
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .orderBy('idx', 'desc')
      .limit(n)
      .select(...TURN_FIELDS);
    return rows.map(rowToTurn).reverse();
  }

  /** Newest first by (created_at, id); `page.after` is the last (created_at, id) of the previous page. */
  async list(
    of: { tenantId: string; agentId: string },
    f: ListFilters,
    page: { limit: number; after: { createdAt: string; id: string } | null },
  ): Promise<Conversation[]> {
    const { tenantId, agentId } = of;
    const { limit, after } = page;
    const q = this.knex('conversations').where({ tenant_id: tenantId, agent_id: agentId });
    if (f.status) q.andWhere('status', f.status);
    if (f.userId) q.andWhere('user_id', f.userId);
    if (f.capability) q.andWhere('capability', f.capability);
    if (f.channel === 'api') q.whereNull('channel');
    else if (f.channel) q.andWhere('channel', f.channel);
    if (f.createdAfter) q.andWhere('created_at', '>', f.createdAfter);
    if (f.createdBefore) q.andWhere('created_at', '<', f.createdBefore);
    // A row-value comparison, which both databases answer with one range of the index.
    if (after) q.andWhereRaw('(created_at, id) < (?, ?)', [after.createdAt, after.id]);
    const rows = await q
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit);
    return rows.map(rowToConversation);
  }

  /** A conversation's audit entries after sequence `q.afterSeq`, oldest first. */
  async audit(of: ConversationRef & { createdAt?: string }, page: { type?: AuditType; limit: number; afterSeq: number }): Promise<AuditRow[]> {
    const { tenantId, id: conversationId } = of;
    const { type, limit, afterSeq } = page;
    const q = conversationHistory(this.knex, 'audit_entries', of.createdAt)
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .andWhere('sequence', '>', afterSeq);
    if (type) q.andWhere('type', type);
    const rows = await q.orderBy('sequence', 'asc').limit(limit);
    return rows.map(rowToAudit);
  }

  /**
   * Conversations whose inactivity deadline has passed, earliest ten minutes first. Read through
   * the deadline's ten-minute bucket (migration 023), up to the bucket `now` is in, and judged by
   * the deadline itself; rows not filed yet ('') come first.
   */
  async dueForAbandonment(now: string, limit: number): Promise<ConversationRef[]> {
    // The condition of conversations_due_idx, word for word, so that planners match it.
    const rows = await this.knex('conversations')
      .whereRaw(OPEN_CONDITION)
      .andWhere('inactive_bucket', '<=', bucketOf(now))
      .andWhere('inactive_after', '<=', now)
      .orderBy('inactive_bucket')
      .limit(limit)
      .select('id', 'tenant_id');
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  /**
   * Files open conversations whose deadline is not in the bucket it is indexed under and has not
   * passed: rows a version before migration 023 wrote ('', or a bucket its turns did not move).
   * Each sweep files up to `limit`; returns how many it filed.
   */
  async fileDeadlines(now: string, limit: number): Promise<number> {
    // Checked again on the row updated: a turn may have moved its deadline meanwhile.
    const notDue = (q: Knex.QueryBuilder) => q.whereNull('inactive_after').orWhere('inactive_after', '>', now);
    const misfiled = this.knex('conversations')
      .whereRaw(OPEN_CONDITION)
      .andWhere('inactive_bucket', '<', bucketOf(now))
      .andWhere(notDue)
      .limit(limit)
      .select('id');
    return this.knex('conversations')
      .whereIn('id', misfiled)
      .andWhere(notDue)
      .update({ inactive_bucket: this.knex.raw('substr(inactive_after, 1, 15)') });
  }

  /** Closed, not yet erased conversations closed before `before` (of one tenant, or of all). */
  async dueForRetention(due: { before: string; limit: number; tenantId?: string; excludeTenants?: string[] }): Promise<ConversationRef[]> {
    const { before, limit, tenantId, excludeTenants = [] } = due;
    // The condition of conversations_retention_idx, word for word (migration 023), so that planners match it.
    // A closed conversation changes no more once closed (completed and abandoned are final).
    const q = this.knex('conversations').whereRaw(CLOSED_CONDITION).andWhere('completed_at', '<', before);
    if (tenantId) q.andWhere('tenant_id', tenantId);
    if (excludeTenants.length) q.whereNotIn('tenant_id', excludeTenants);
    const rows = await q.orderBy('completed_at').limit(limit).select('id', 'tenant_id');
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  async idsOfUser(tenantId: string, userId: string): Promise<string[]> {
    const rows = await this.knex('conversations').where({ tenant_id: tenantId, user_id: userId }).select('id');
    return rows.map((r) => r.id);
  }

  /** Recomputes a conversation's audit chain, and its turns' hashes, and reports the first broken link. */
  async verifyAudit(tenantId: string, conversationId: string): Promise<ChainReport> {
    const head = await this.knex('conversations').where({ id: conversationId, tenant_id: tenantId }).first();
    const rows = await conversationHistory(this.knex, 'audit_entries', head?.created_at)
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .orderBy('sequence', 'asc');
    const turns = head?.erased_at ? undefined : await this.turns(tenantId, conversationId, head?.created_at);
    // A chain may start late only where the history horizon dropped its start: in a conversation
    // begun before the horizon.
    const horizon = rows.length > 0 && Number(rows[0].sequence) > 1 ? await historyHorizon(this.knex, 'audit_entries') : null;
    const truncated = horizon !== null && head !== undefined && head.created_at < horizon;
    const report = verifyChain(
      rows.map((r) => ({
        id: r.id,
        conversation_id: r.conversation_id,
        sequence: Number(r.sequence),
        turn_index: r.turn_index === null ? null : Number(r.turn_index),
        type: r.type,
        request_id: r.request_id,
        timestamp: r.timestamp,
        duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
        data: r.data,
        data_hash: r.data_hash,
        hash: r.hash,
        erased_at: r.erased_at ?? null,
      })),
      head?.audit_hash ?? null,
      turns,
      this.keys,
      truncated,
      this.keys ? { kind: 'conversation', chainId: conversationId, seal: await readSeal(this.knex, 'conversation', conversationId) } : undefined,
    );
    // The state the conversation decides by must be the one its newest turn chained (when the
    // newest entry is that turn's; a later write of another kind, such as erasure, ends the check).
    const newest = rows.at(-1);
    if (head && !head.erased_at && newest?.type === 'turn_timing' && (report.valid || report.first_broken?.reason === 'not_keyed')) {
      const chained = (JSON.parse(newest.data) as { state?: unknown }).state;
      if (typeof chained === 'string' && chained !== stateHash(rowToConversation(head))) {
        return { ...report, valid: false, first_broken: { sequence: Number(newest.sequence), reason: 'state_mismatch' } };
      }
    }
    return report;
  }

  /**
   * The history's upkeep, from the sweeper: on PostgreSQL the months ahead of `now` get their
   * partitions; with `before`, history written before it is deleted (store/partitions.ts).
   */
  async maintainHistory(now: number, before: string | null, limit: number): Promise<{ made: string[] } & HistoryDropped> {
    // The months ahead are looked for once a month, not at every sweep: after a pass that made
    // them all, nothing is missing until the month turns.
    const until = partitionedUntil(now);
    const made = until > this.partitionedUntil ? await ensurePartitions(this.knex, now) : [];
    this.partitionedUntil = until;
    const dropped = before ? await dropHistoryBefore(this.knex, before, limit) : { partitions: [], rows: 0 };
    return { made, ...dropped };
  }

  async ping(): Promise<void> {
    await this.knex.raw('select 1');
  }
}
