// Conversations, turns, audit entries and idempotency records, over Knex (SQLite or PostgreSQL).
// Every query filters by tenant_id.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AuditType, ConversationStatus, Option } from '@switchboard/contract';
import type { AuditDraft, AuditRow, Conversation, TurnRow } from '../domain.js';
import { UnavailableError } from '../errors.js';
import { KeyedLock } from '../lib/keyed-lock.js';
import type { Database } from './db.js';
import { sqliteParams, type HotStatements, type SqliteHotPath } from './sqlite-hot-path.js';

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
  turns: TurnRow[];
  audit: AuditDraft[];
  requestId: string;
  idempotency?: { agentId: string; key: string; requestHash: string; response: unknown };
}

export interface IdempotencyRecord {
  requestHash: string;
  conversationId: string;
  response: unknown;
}

/** Reads and the one write of a converse call, under that conversation's lock. */
export interface ConversationUnit {
  load(tenantId: string, agentId: string, id: string): Promise<Conversation | null>;
  commit(write: TurnWrite): Promise<void>;
}

export class ConcurrentUpdateError extends Error {}
export class DuplicateIdempotencyKeyError extends Error {}

const toJson = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

function rowToConversation(r: any): Conversation {
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
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    lastUserTurnAt: r.last_user_turn_at,
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
    created_at: c.createdAt,
    updated_at: c.updatedAt,
    completed_at: c.completedAt,
    last_user_turn_at: c.lastUserTurnAt,
  };
}

function rowToTurn(r: any): TurnRow {
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

function rowToAudit(r: any): AuditRow {
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
  };
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** Connection failures become 503 `unavailable`; everything else passes through. */
export function mapDbError(err: unknown): unknown {
  const e = err as { code?: string; name?: string; message?: string };
  const code = e?.code ?? '';
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', '57P01', '57P03', '08006', '08001', '08003', 'SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_IOERR'].includes(code) ||
    e?.name === 'KnexTimeoutError' ||
    /Connection terminated|connect ECONNREFUSED|Client was closed|pool is probably full|Unable to acquire a connection|database is locked/i.test(e?.message ?? '')
  ) {
    return new UnavailableError();
  }
  return err;
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

function auditRows(w: TurnWrite) {
  const c = w.conversation;
  let seq = w.expectedAuditSeq;
  return w.audit.map((a) => ({
    id: randomUUID(),
    conversation_id: c.id,
    sequence: ++seq,
    tenant_id: c.tenantId,
    turn_index: a.turnIndex,
    type: a.type,
    request_id: w.requestId,
    timestamp: a.timestamp,
    duration_ms: a.durationMs,
    data: JSON.stringify(a.data),
  }));
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

export class ConversationStore {
  private readonly knex: Knex;
  private readonly locks = new KeyedLock();
  private readonly hot: SqliteHotPath | null;

  constructor(private readonly db: Database) {
    this.knex = db.knex;
    this.hot = db.hot;
  }

  /**
   * Runs `fn` with the conversation locked: one at a time per conversation in this process
   * (first come, first served), and on PostgreSQL also across processes, by a row lock held
   * from the load to the commit. `conversationId` null is a new conversation: nothing to lock.
   */
  async exclusive<T>(lockKey: string, conversationId: string | null, fn: (unit: ConversationUnit) => Promise<T>): Promise<T> {
    this.busy++;
    try {
      return await this.exclusiveLocked(lockKey, conversationId, fn);
    } finally {
      this.busy--;
    }
  }

  /** Conversation calls under way; shutdown waits for them to finish before closing the database. */
  busy = 0;

  private exclusiveLocked<T>(lockKey: string, conversationId: string | null, fn: (unit: ConversationUnit) => Promise<T>): Promise<T> {
    return this.locks.run(lockKey, async () => {
      if (this.db.dialect === 'postgres' && conversationId) {
        return this.knex.transaction(async (trx) => fn(this.unit(trx, true)));
      }
      return fn(this.unit(this.knex, false));
    });
  }

  private unit(q: Knex | Knex.Transaction, inTransaction: boolean): ConversationUnit {
    const hot = this.hot;
    if (hot) {
      return {
        load: async (tenantId, agentId, id) => {
          const row = await hot.run((s) => s.conversation.get({ id, tenant_id: tenantId, agent_id: agentId }));
          return row ? rowToConversation(row) : null;
        },
        commit: (write) => hot.run((s, conn) => conn.transaction(() => this.writeSqlite(s, write))()),
      };
    }
    return {
      load: async (tenantId, agentId, id) => {
        let query = q('conversations').where({ id, tenant_id: tenantId, agent_id: agentId }).first();
        if (inTransaction) query = query.forUpdate();
        const row = await query;
        return row ? rowToConversation(row) : null;
      },
      commit: async (write) => {
        if (inTransaction) await this.write(q as Knex.Transaction, write);
        else await this.knex.transaction((trx) => this.write(trx, write));
      },
    };
  }

  private async write(trx: Knex.Transaction, w: TurnWrite): Promise<void> {
    const row = conversationToRow(w.conversation);
    if (w.isNew) {
      await trx('conversations').insert(row);
    } else {
      const { id, tenant_id, agent_id, created_at, ...changes } = row;
      const n = await trx('conversations').where({ id, tenant_id, audit_seq: w.expectedAuditSeq }).update(changes);
      if (n !== 1) throw new ConcurrentUpdateError(`conversation ${id} changed underneath this turn`);
    }
    if (w.turns.length) await trx('turns').insert(turnRows(w));
    if (w.audit.length) await trx('audit_entries').insert(auditRows(w));
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
    const row = sqliteParams(conversationToRow(w.conversation));
    if (w.isNew) s.insertConversation.run(row);
    else if (s.updateConversation.run({ ...row, expected_audit_seq: w.expectedAuditSeq }).changes !== 1) {
      throw new ConcurrentUpdateError(`conversation ${w.conversation.id} changed underneath this turn`);
    }
    for (const t of turnRows(w)) s.insertTurn.run(t);
    for (const a of auditRows(w)) s.insertAudit.run(a);
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
    const rows = await this.knex('turns')
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .orderBy('idx', 'asc');
    return rows.map(rowToTurn);
  }

  /** Newest first by (created_at, id); `after` is the last (created_at, id) of the previous page. */
  async list(
    tenantId: string,
    agentId: string,
    f: ListFilters,
    limit: number,
    after: { createdAt: string; id: string } | null,
  ): Promise<Conversation[]> {
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
    const rows = await q.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
    return rows.map(rowToConversation);
  }

  async audit(tenantId: string, conversationId: string, type: AuditType | undefined, limit: number, afterSeq: number): Promise<AuditRow[]> {
    const q = this.knex('audit_entries')
      .where({ conversation_id: conversationId, tenant_id: tenantId })
      .andWhere('sequence', '>', afterSeq);
    if (type) q.andWhere('type', type);
    const rows = await q.orderBy('sequence', 'asc').limit(limit);
    return rows.map(rowToAudit);
  }

  async ping(): Promise<void> {
    await this.knex.raw('select 1');
  }
}
