// Conversations, turns, audit entries and idempotency records, over Knex (SQLite or PostgreSQL).
// Every query filters by tenant_id.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { AuditType, ConversationStatus, Option } from '@switchboard/contract';
import type { AuditDraft, AuditRow, Conversation, ErasureRules, EventDraft, TurnRow, WebhookDraft } from '../domain.js';
import { KeyedLock } from '../lib/keyed-lock.js';
import { UnavailableError } from '../errors.js';
import { isUniqueViolation, type Database } from './db.js';
import type { AuditTableRow, ConversationTableRow, TurnTableRow } from './rows.js';
import { EventLog, type EventPosition } from './event-log.js';

export { parseEventId, type EventPosition } from './event-log.js';
import { sqliteParams, type HotStatements, type SqliteHotPath } from './sqlite-hot-path.js';
import { dataHash, entryHash, verifyChain, type ChainReport } from '../lib/audit-chain.js';

export interface ListFilters {
  status?: ConversationStatus;
  userId?: string;
  capability?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export interface TurnWrite {
  conversation: Conversation;
  isNew: boolean;
  /** The audit sequence the stored row had when it was read; guards against a lost update. */
  expectedAuditSeq: number;
  /** The audit chain head the stored row had when it was read (null before the first entry). */
  previousAuditHash: string | null;
  turns: TurnRow[];
  audit: AuditDraft[];
  requestId: string;
  idempotency?: { agentId: string; key: string; requestHash: string; response: unknown };
  events?: EventDraft[];
  webhooks?: WebhookDraft[];
}

export interface IdempotencyRecord {
  requestHash: string;
  conversationId: string;
  response: unknown;
}

/** Reads and the one write of a call on a conversation, under that conversation's lock. */
export interface ConversationUnit {
  /** `agentId` null: any agent of the tenant. */
  load(tenantId: string, agentId: string | null, id: string): Promise<Conversation | null>;
  commit(write: TurnWrite): Promise<void>;
  /** Erases what the conversation says about a person, keeping what `rules` say (service/erasure.ts). */
  erase(conversation: Conversation, now: string, rules: ErasureRules): Promise<void>;
}

/** The conversation changed (or its lease was lost) between the read and the write: nothing was written; a retry is safe. */
export class ConcurrentUpdateError extends UnavailableError {
  constructor(detail: string) {
    super(`The conversation was changed by another request; try again (${detail})`);
  }
}

export class DuplicateIdempotencyKeyError extends Error {}

const toJson = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

function rowToConversation(r: ConversationTableRow): Conversation {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    agentId: r.agent_id,
    agentVersion: Number(r.agent_version),
    userId: r.user_id,
    status: r.status,
    outcome: r.outcome,
    capability: r.capability,
    capabilityId: r.capability_id,
    phase: r.phase,
    awaitingInput: Boolean(r.awaiting_input),
    flow: JSON.parse(r.state),
    context: r.context ? JSON.parse(r.context) : null,
    turnCount: Number(r.turn_count),
    auditSeq: Number(r.audit_seq),
    auditHash: r.audit_hash ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    lastUserTurnAt: r.last_user_turn_at,
    inactiveAfter: r.inactive_after ?? null,
    erasedAt: r.erased_at ?? null,
    eventSeq: Number(r.event_seq ?? 0),
  };
}

function conversationToRow(c: Conversation) {
  return {
    id: c.id,
    tenant_id: c.tenantId,
    agent_id: c.agentId,
    agent_version: c.agentVersion,
    user_id: c.userId,
    status: c.status,
    outcome: c.outcome,
    capability: c.capability,
    capability_id: c.capabilityId,
    phase: c.phase,
    awaiting_input: c.awaitingInput,
    state: JSON.stringify(c.flow),
    context: toJson(c.context),
    turn_count: c.turnCount,
    audit_seq: c.auditSeq,
    audit_hash: c.auditHash,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
    completed_at: c.completedAt,
    last_user_turn_at: c.lastUserTurnAt,
    inactive_after: c.inactiveAfter,
    erased_at: c.erasedAt,
    event_seq: c.eventSeq,
  };
}

function rowToTurn(r: TurnTableRow): TurnRow {
  return {
    idx: Number(r.idx),
    role: r.role,
    message: r.message,
    timestamp: r.timestamp,
    phase: r.phase,
    options: r.options ? (JSON.parse(r.options) as Option[]) : null,
    author: r.author,
  };
}

function rowToAudit(r: AuditTableRow): AuditRow {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    sequence: Number(r.sequence),
    turnIndex: r.turn_index === null ? null : Number(r.turn_index),
    type: r.type,
    requestId: r.request_id,
    timestamp: r.timestamp,
    durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
    data: JSON.parse(r.data),
    hash: r.hash ?? null,
  };
}

function turnRows(w: TurnWrite) {
  const c = w.conversation;
  return w.turns.map((t) => ({
    conversation_id: c.id,
    idx: t.idx,
    tenant_id: c.tenantId,
    role: t.role,
    message: t.message,
    phase: t.phase ?? null,
    options: t.options ? JSON.stringify(t.options) : null,
    author: t.author ?? null,
    timestamp: t.timestamp,
  }));
}

/** The write's audit rows, chained onto the conversation's previous head; the row's new head is the last hash. */
function auditRows(w: TurnWrite) {
  const c = w.conversation;
  let seq = w.expectedAuditSeq;
  let previous = w.previousAuditHash;
  const rows = w.audit.map((a) => {
    const fields = {
      id: randomUUID(),
      conversation_id: c.id,
      sequence: ++seq,
      turn_index: a.turnIndex,
      type: a.type,
      request_id: w.requestId,
      timestamp: a.timestamp,
      duration_ms: a.durationMs,
    };
    const data = JSON.stringify(a.data);
    const data_hash = dataHash(data);
    const hash = entryHash(previous, fields, data_hash);
    previous = hash;
    return { ...fields, tenant_id: c.tenantId, data, data_hash, hash };
  });
  return { rows, head: previous };
}

function idempotencyRow(w: TurnWrite) {
  const i = w.idempotency!;
  return {
    tenant_id: w.conversation.tenantId,
    agent_id: i.agentId,
    key: i.key,
    request_hash: i.requestHash,
    conversation_id: w.conversation.id,
    response: JSON.stringify(i.response),
    created_at: w.conversation.updatedAt,
  };
}

/** The event row of a write (numbered per conversation), and the conversation's new event number. */
function eventRows(w: TurnWrite): { rows: Record<string, unknown>[]; seq: number } {
  const c = w.conversation;
  if (!w.events?.length) return { rows: [], seq: c.eventSeq };
  const seq = c.eventSeq + 1;
  return {
    rows: [
      {
        tenant_id: c.tenantId,
        conversation_id: c.id,
        seq,
        events: JSON.stringify(w.events.map((e) => ({ type: e.type, data: e.data }))),
        created_at: c.updatedAt,
      },
    ],
    seq,
  };
}

/** A conversation `exclusive` works on: its tenant and id. */
export interface ConversationRef {
  tenantId: string;
  id: string;
}

function webhookRows(w: TurnWrite) {
  return (w.webhooks ?? []).map((h) => ({
    id: h.id,
    tenant_id: w.conversation.tenantId,
    agent_id: h.agentId,
    conversation_id: w.conversation.id,
    event: h.event,
    url: h.url,
    secret_name: h.secretName,
    payload: JSON.stringify(h.payload),
    status: 'pending',
    attempts: 0,
    next_attempt_at: h.createdAt,
    created_at: h.createdAt,
    seq: h.seq,
  }));
}

/** How long a waiter sleeps between looks at a busy conversation when no release notice comes. */
const LEASE_POLL_MS = 250;

export class ConversationStore {
  private readonly knex: Knex;
  private readonly locks = new KeyedLock();
  private readonly hot: SqliteHotPath | null;
  /** The events committed with conversations, and the notices of other processes' commits and releases. */
  readonly eventLog: EventLog;

  constructor(
    private readonly db: Database,
    private readonly opts: { leaseMs?: number } = {},
  ) {
    this.knex = db.knex;
    this.hot = db.hot;
    this.eventLog = new EventLog(db);
  }

  /** Emits 'event' with a conversation id whenever events of that conversation were committed, by any process. */
  get changes(): EventEmitter {
    return this.eventLog.changes;
  }

  listen(log: { warn(o: object, m: string): void }): Promise<void> {
    return this.eventLog.listen(log);
  }

  stopListening(): Promise<void> {
    return this.eventLog.stopListening();
  }

  events(...args: Parameters<EventLog['events']>) {
    return this.eventLog.events(...args);
  }

  lastEventPosition(tenantId: string, conversationId: string): Promise<EventPosition> {
    return this.eventLog.lastEventPosition(tenantId, conversationId);
  }

  /**
   * Runs `fn` with the conversation to itself: one call at a time per conversation in this
   * process (first come, first served), and on PostgreSQL across processes by a lease on the
   * conversation row, taken and released in short statements, so that no database connection
   * is held while `fn` calls actions. `target` null is a new conversation: nothing to hold.
   * With `skipIfBusy`, a conversation another process holds is skipped (resolves undefined).
   */
  async exclusive<T>(
    lockKey: string,
    target: ConversationRef | null,
    fn: (unit: ConversationUnit) => Promise<T>,
    opts: { skipIfBusy?: boolean } = {},
  ): Promise<T | undefined> {
    this.busy++;
    try {
      return await this.locks.run(lockKey, async () => {
        if (this.db.adapter.shared && target) return this.withLease(target, fn, opts.skipIfBusy ?? false);
        return fn(this.unit(null));
      });
    } finally {
      this.busy--;
    }
  }

  /** Conversation calls under way; shutdown waits for them to finish before closing the database. */
  busy = 0;

  private get leaseMs(): number {
    return this.opts.leaseMs ?? 60_000;
  }

  private async withLease<T>(target: ConversationRef, fn: (unit: ConversationUnit) => Promise<T>, skipIfBusy: boolean): Promise<T | undefined> {
    const lease = { id: randomUUID(), held: false };
    const acquired = await this.acquireLease(target, lease.id, skipIfBusy);
    if (acquired === 'busy') return undefined;
    lease.held = acquired === 'held';
    // Renewed while the call works, so a slow action never lets another process in; a process
    // that dies lets others in once the lease runs out.
    const renew = lease.held
      ? setInterval(
          () => {
            void this.knex('conversations')
              .where({ id: target.id, lease_id: lease.id })
              .update({ lease_until: new Date(Date.now() + this.leaseMs).toISOString() })
              .catch(() => undefined);
          },
          Math.max(500, Math.floor(this.leaseMs / 3)),
        )
      : null;
    renew?.unref();
    try {
      return await fn(this.unit(lease));
    } finally {
      if (renew) clearInterval(renew);
      if (lease.held) {
        await this.knex('conversations')
          .where({ id: target.id, lease_id: lease.id })
          .update({ lease_id: null, lease_until: null })
          .catch(() => undefined); // an unreleased lease runs out by itself
      }
    }
  }

  /** 'held': the lease is ours; 'absent': no such conversation (the load says so); 'busy': skipped. */
  private async acquireLease(target: ConversationRef, leaseId: string, skipIfBusy: boolean): Promise<'held' | 'absent' | 'busy'> {
    const giveUpAt = Date.now() + this.leaseMs * 2;
    for (;;) {
      const now = new Date().toISOString();
      const taken = await this.knex('conversations')
        .where({ id: target.id, tenant_id: target.tenantId })
        .andWhere((w) => w.whereNull('lease_id').orWhere('lease_until', '<', now))
        .update({ lease_id: leaseId, lease_until: new Date(Date.now() + this.leaseMs).toISOString() });
      if (taken === 1) return 'held';
      const row = await this.knex('conversations').where({ id: target.id, tenant_id: target.tenantId }).first('lease_until');
      if (!row) return 'absent';
      if (skipIfBusy) return 'busy';
      if (Date.now() > giveUpAt) throw new UnavailableError('The conversation is busy with another request; try again shortly');
      const until = Date.parse(row.lease_until ?? now) - Date.now();
      await this.waitForRelease(target.id, Math.max(10, Math.min(LEASE_POLL_MS, until + 5)));
    }
  }

  private waitForRelease(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (released: string) => {
        if (released !== id) return;
        clearTimeout(timer);
        this.eventLog.released.off('released', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.eventLog.released.off('released', done);
        resolve();
      }, ms);
      this.eventLog.released.on('released', done);
    });
  }

  private unit(lease: { id: string; held: boolean } | null): ConversationUnit {
    const hot = this.hot;
    const afterCommit = (w: TurnWrite) => {
      // A shared database announces commits to every process (NOTIFY); otherwise the commit tells this one.
      if (!this.db.adapter.shared && w.events?.length) this.eventLog.changes.emit('event', w.conversation.id);
    };
    const erase = async (c: Conversation, now: string, rules: ErasureRules) => {
      await this.db.adapter.secureErase(this.knex, (trx) => this.eraseRows(trx, { conversation: c, now, rules }, lease));
      if (lease) lease.held = false;
    };
    if (hot) {
      return {
        load: async (tenantId, agentId, id) => {
          const row = agentId
            ? await hot.run((s) => s.conversation.get({ id, tenant_id: tenantId, agent_id: agentId }))
            : await this.knex('conversations').where({ id, tenant_id: tenantId }).first();
          return row ? rowToConversation(row) : null;
        },
        commit: async (write) => {
          await hot.run((s, conn) => conn.transaction(() => this.writeSqlite(s, write))());
          afterCommit(write);
        },
        erase,
      };
    }
    return {
      load: async (tenantId, agentId, id) => {
        let query = this.knex('conversations').where({ id, tenant_id: tenantId }).first();
        if (agentId) query = query.andWhere({ agent_id: agentId });
        const row = await query;
        return row ? rowToConversation(row) : null;
      },
      commit: async (write) => {
        await this.knex.transaction((trx) => this.write(trx, write, lease));
        // The commit released the lease with its update.
        if (lease) lease.held = false;
        afterCommit(write);
      },
      erase,
    };
  }

  /**
   * Erases what a conversation says about a person: its turns, slots, action results, context,
   * user id, event log and idempotency records; audit entries and webhook payloads keep what
   * the rules say, marked with the erasure time, and a chained `erasure` entry records which
   * entries it reduced.
   * The dialect's secureErase leaves nothing of it in free pages or a write-ahead log.
   */
  private async eraseRows(
    trx: Knex.Transaction,
    e: { conversation: Conversation; now: string; rules: ErasureRules },
    lease: { id: string } | null,
  ): Promise<void> {
    const { conversation: c, now, rules } = e;
    const where = { conversation_id: c.id, tenant_id: c.tenantId };
    await trx('turns').where(where).delete();
    await trx('conversation_events').where(where).delete();
    const audit = await trx('audit_entries').where(where).whereIn('type', rules.auditTypes).select('sequence', 'type', 'data');
    for (const a of audit) {
      const skeleton = rules.skeleton(a.type, JSON.parse(a.data));
      await trx('audit_entries')
        .where({ ...where, sequence: a.sequence })
        .update({ data: JSON.stringify(skeleton), erased_at: now });
    }
    const hooks = await trx('webhook_deliveries').where(where).select('id', 'payload');
    for (const h of hooks) {
      await trx('webhook_deliveries')
        .where({ id: h.id })
        .update({ payload: JSON.stringify(rules.webhookPayload(JSON.parse(h.payload))) });
    }
    await trx('idempotency_keys').where({ tenant_id: c.tenantId, conversation_id: c.id }).delete();
    const record = auditRows({
      conversation: c,
      isNew: false,
      expectedAuditSeq: c.auditSeq,
      previousAuditHash: c.auditHash,
      turns: [],
      audit: [{ type: 'erasure', turnIndex: null, timestamp: now, durationMs: null, data: { erased_at: now, through_sequence: c.auditSeq } }],
      requestId: `erasure:${now}`,
    });
    await trx('audit_entries').insert(record.rows);
    const n = await trx('conversations')
      .where({ id: c.id, tenant_id: c.tenantId, audit_seq: c.auditSeq })
      .update({
        user_id: null,
        context: null,
        state: JSON.stringify({ slots: {}, actions: {}, attempts: c.flow.attempts, wait: c.flow.wait }),
        erased_at: now,
        updated_at: now,
        audit_seq: c.auditSeq + 1,
        audit_hash: record.head,
        ...(lease ? { lease_id: null, lease_until: null } : {}),
      });
    if (n !== 1) throw new ConcurrentUpdateError(`conversation ${c.id} changed underneath its erasure`);
  }

  private async write(trx: Knex.Transaction, w: TurnWrite, lease: { id: string } | null = null): Promise<void> {
    const audit = auditRows(w);
    const events = eventRows(w);
    const row = { ...conversationToRow(w.conversation), audit_hash: audit.head, event_seq: events.seq };
    if (w.isNew) {
      await trx('conversations').insert(row);
    } else {
      const { id, tenant_id, agent_id, created_at, ...changes } = row;
      const q = trx('conversations').where({ id, tenant_id, audit_seq: w.expectedAuditSeq });
      // Only the holder of the lease may write, and its write releases the lease.
      if (lease) q.andWhere({ lease_id: lease.id });
      const n = await q.update(lease ? { ...changes, lease_id: null, lease_until: null } : changes);
      if (n !== 1) throw new ConcurrentUpdateError(`conversation ${id} changed underneath this turn`);
    }
    if (w.turns.length) await trx('turns').insert(turnRows(w));
    if (audit.rows.length) await trx('audit_entries').insert(audit.rows);
    // On PostgreSQL a trigger announces the row to every listening process when this commits.
    if (events.rows.length) await trx('conversation_events').insert(events.rows);
    if (w.webhooks?.length) await trx('webhook_deliveries').insert(webhookRows(w));
    if (w.idempotency) {
      try {
        await trx('idempotency_keys').insert(idempotencyRow(w));
      } catch (err) {
        if (isUniqueViolation(err)) throw new DuplicateIdempotencyKeyError();
        throw err;
      }
    }
  }

  /** The same write as `write`, with prepared statements, inside a better-sqlite3 transaction. */
  private writeSqlite(s: HotStatements, w: TurnWrite): void {
    const audit = auditRows(w);
    const events = eventRows(w);
    const row = sqliteParams({ ...conversationToRow(w.conversation), audit_hash: audit.head, event_seq: events.seq });
    if (w.isNew) s.insertConversation.run(row);
    else if (s.updateConversation.run({ ...row, expected_audit_seq: w.expectedAuditSeq }).changes !== 1) {
      throw new ConcurrentUpdateError(`conversation ${w.conversation.id} changed underneath this turn`);
    }
    for (const t of turnRows(w)) s.insertTurn.run(t);
    for (const a of audit.rows) s.insertAudit.run(a);
    for (const e of events.rows) s.insertEvent.run(e);
    for (const h of webhookRows(w)) s.insertWebhook.run(h);
    if (w.idempotency) {
      try {
        s.insertIdempotency.run(idempotencyRow(w));
      } catch (err) {
        if (isUniqueViolation(err)) throw new DuplicateIdempotencyKeyError();
        throw err;
      }
    }
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

  async turns(tenantId: string, conversationId: string): Promise<TurnRow[]> {
    const rows = await this.knex('turns').where({ conversation_id: conversationId, tenant_id: tenantId }).orderBy('idx', 'asc');
    return rows.map(rowToTurn);
  }

  /** Newest first by (created_at, id); `after` is the last (created_at, id) of the previous page. */
  async list(tenantId: string, agentId: string, f: ListFilters, limit: number, after: { createdAt: string; id: string } | null): Promise<Conversation[]> {
    const q = this.knex('conversations').where({ tenant_id: tenantId, agent_id: agentId });
    if (f.status) q.andWhere('status', f.status);
    if (f.userId) q.andWhere('user_id', f.userId);
    if (f.capability) q.andWhere('capability', f.capability);
    if (f.createdAfter) q.andWhere('created_at', '>', f.createdAfter);
    if (f.createdBefore) q.andWhere('created_at', '<', f.createdBefore);
    if (after) {
      q.andWhere((w) =>
        w.where('created_at', '<', after.createdAt).orWhere((w2) => w2.where('created_at', '=', after.createdAt).andWhere('id', '<', after.id)),
      );
    }
    const rows = await q
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit);
    return rows.map(rowToConversation);
  }

  async audit(tenantId: string, conversationId: string, type: AuditType | undefined, limit: number, afterSeq: number): Promise<AuditRow[]> {
    const q = this.knex('audit_entries').where({ conversation_id: conversationId, tenant_id: tenantId }).andWhere('sequence', '>', afterSeq);
    if (type) q.andWhere('type', type);
    const rows = await q.orderBy('sequence', 'asc').limit(limit);
    return rows.map(rowToAudit);
  }

  /** Conversations whose inactivity deadline has passed, oldest deadline first. */
  async dueForAbandonment(now: string, limit: number): Promise<{ id: string; tenantId: string }[]> {
    const rows = await this.knex('conversations')
      .whereIn('status', ['active', 'paused'])
      .andWhere('inactive_after', '<=', now)
      .orderBy('inactive_after')
      .limit(limit)
      .select('id', 'tenant_id');
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  /** Closed, not yet erased conversations last changed before `before` (of one tenant, or of all). */
  async dueForRetention(before: string, limit: number, tenantId?: string, excludeTenants: string[] = []): Promise<{ id: string; tenantId: string }[]> {
    const q = this.knex('conversations').whereIn('status', ['completed', 'abandoned']).whereNull('erased_at').andWhere('updated_at', '<', before);
    if (tenantId) q.andWhere('tenant_id', tenantId);
    if (excludeTenants.length) q.whereNotIn('tenant_id', excludeTenants);
    const rows = await q.orderBy('updated_at').limit(limit).select('id', 'tenant_id');
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  async idsOfUser(tenantId: string, userId: string): Promise<string[]> {
    const rows = await this.knex('conversations').where({ tenant_id: tenantId, user_id: userId }).select('id');
    return rows.map((r) => r.id);
  }

  /** Recomputes a conversation's audit chain, and its turns' hashes, and reports the first broken link. */
  async verifyAudit(tenantId: string, conversationId: string): Promise<ChainReport> {
    const head = await this.knex('conversations').where({ id: conversationId, tenant_id: tenantId }).first('audit_hash', 'erased_at');
    const rows = await this.knex('audit_entries').where({ conversation_id: conversationId, tenant_id: tenantId }).orderBy('sequence', 'asc');
    const turns = head?.erased_at ? undefined : await this.turns(tenantId, conversationId);
    return verifyChain(
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
    );
  }

  async ping(): Promise<void> {
    await this.knex.raw('select 1');
  }
}
