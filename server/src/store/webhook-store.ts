// The webhook outbox as an agent's owner reads it: deliveries with their attempts, a page at a time.
// Every query filters by tenant_id.
import type { Knex } from 'knex';
import { decodeCursor, encodeCursor, isTimeAndId } from '../lib/cursor.js';
import type { Database } from './db.js';
import { claimDue, dueInOrder, type OutboxTable } from './outbox-rows.js';

const WEBHOOK_OUTBOX: OutboxTable = { table: 'webhook_deliveries', orderKey: ['conversation_id', 'url'], seq: 'seq' };

/** A delivery as the dispatcher attempts it. */
export interface DeliveryRow {
  id: string;
  tenant_id: string;
  conversation_id: string;
  url: string;
  secret_name: string | null;
  payload: string;
  attempts: number;
  /** Its partition's key on PostgreSQL (store/partitions.ts): an update names it, and reads one month's index. */
  created_at: string;
}

/** The outbox as the dispatcher works it: due deliveries, claims, attempts. */
export class WebhookStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  /** Due deliveries, in order per conversation and URL, at most `perTenant` of each tenant. */
  async due(now: string, perTenant: number, limit: number): Promise<{ id: string; tenant_id: string }[]> {
    return (await dueInOrder(this.knex, WEBHOOK_OUTBOX, now, perTenant, limit)) as { id: string; tenant_id: string }[];
  }

  /** Deliveries still to be made (or retried), from webhook_deliveries_due_idx. */
  async pending(): Promise<number> {
    const row = (await this.knex('webhook_deliveries').where('status', 'pending').count({ n: '*' }).first()) as { n: unknown } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Claims deliveries by moving their next attempt to `until`: only rows still due move, so of two processes one gets each. */
  async claim(ids: string[], now: string, until: string): Promise<DeliveryRow[]> {
    return claimDue(this.knex, 'webhook_deliveries', ids, now, until).returning<DeliveryRow[]>([
      'id',
      'tenant_id',
      'conversation_id',
      'url',
      'secret_name',
      'payload',
      'attempts',
      'created_at',
    ]);
  }

  /** Records one attempt and the delivery's new state together. */
  async recordAttempt(
    row: DeliveryRow,
    a: { attempt: number; at: string; status: number | null; error: string | null; durationMs: number; update: Record<string, unknown> },
  ): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('webhook_attempts').insert({
        delivery_id: row.id,
        attempt: a.attempt,
        tenant_id: row.tenant_id,
        at: a.at,
        status: a.status,
        error: a.error,
        duration_ms: a.durationMs,
      });
      await trx('webhook_deliveries')
        .where({ id: row.id, created_at: row.created_at })
        .update({ ...a.update, attempts: a.attempt, last_status: a.status, last_error: a.error });
    });
  }
}

/** An agent's deliveries, newest first, each with its attempts, a page at a time. */
export async function listDeliveries(
  knex: Knex,
  tenantId: string,
  agentId: string,
  q: { status?: string; conversation_id?: string; limit: number; cursor?: string },
) {
  const position = decodeCursor(q.cursor, isTimeAndId);
  const after = position ? { createdAt: position[0], id: position[1] } : null;
  const query = knex('webhook_deliveries').where({ tenant_id: tenantId, agent_id: agentId });
  if (q.status) query.andWhere('status', q.status);
  if (q.conversation_id) query.andWhere('conversation_id', q.conversation_id);
  if (after) {
    const a = after;
    query.andWhereRaw('(created_at, id) < (?, ?)', [a.createdAt, a.id]);
  }
  const rows = await query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const attempts = page.length
    ? await knex('webhook_attempts')
        .where({ tenant_id: tenantId })
        .whereIn(
          'delivery_id',
          page.map((r) => r.id),
        )
        .orderBy(['delivery_id', 'attempt'])
    : [];
  const last = page.at(-1);
  return {
    next_cursor: rows.length > q.limit && last ? encodeCursor([last.created_at, last.id]) : null,
    data: page.map((r) => ({
      id: r.id,
      conversation_id: r.conversation_id,
      event: r.event,
      url: r.url,
      status: r.status,
      attempts: Number(r.attempts),
      next_attempt_at: r.next_attempt_at,
      created_at: r.created_at,
      delivered_at: r.delivered_at,
      last_status: r.last_status === null ? null : Number(r.last_status),
      last_error: r.last_error,
      history: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({
          attempt: Number(a.attempt),
          at: a.at,
          status: a.status === null ? null : Number(a.status),
          error: a.error,
          duration_ms: Number(a.duration_ms),
        })),
    })),
  };
}
