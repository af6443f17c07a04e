// The webhook outbox as an agent's owner reads it: deliveries with their attempts, a page at a time.
// Every query filters by tenant_id.
import type { Knex } from 'knex';
import { decodeCursor, encodeCursor, isTimeAndId } from '../lib/cursor.js';

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
    query.andWhere((w) => w.where('created_at', '<', a.createdAt).orWhere((w2) => w2.where('created_at', '=', a.createdAt).andWhere('id', '<', a.id)));
  }
  const rows = await query.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const attempts = page.length
    ? await knex('webhook_attempts').where({ tenant_id: tenantId }).whereIn('delivery_id', page.map((r) => r.id)).orderBy(['delivery_id', 'attempt'])
    : [];
  const last = page[page.length - 1];
  return {
    next_cursor: rows.length > q.limit && last ? encodeCursor([last.created_at, last.id]) : null,
    data: page.map((r) => ({
      id: r.id as string,
      conversation_id: r.conversation_id as string,
      event: r.event as string,
      url: r.url as string,
      status: r.status as 'pending' | 'delivered' | 'failed',
      attempts: Number(r.attempts),
      next_attempt_at: r.next_attempt_at as string | null,
      created_at: r.created_at as string,
      delivered_at: r.delivered_at as string | null,
      last_status: r.last_status === null ? null : Number(r.last_status),
      last_error: r.last_error as string | null,
      history: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({
          attempt: Number(a.attempt),
          at: a.at as string,
          status: a.status === null ? null : Number(a.status),
          error: a.error as string | null,
          duration_ms: Number(a.duration_ms),
        })),
    })),
  };
}
