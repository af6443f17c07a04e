// Delivers webhook events from the durable outbox (webhook_deliveries, written in the same
// transaction as the status change): signed per the Standard Webhooks specification, in order
// per conversation and URL, at least once, retried with exponential backoff for over 24 hours,
// every attempt recorded. The same address rules as HTTP actions apply.
import { Webhook } from 'standardwebhooks';
import type { Knex } from 'knex';
import { request, type Dispatcher } from 'undici';
import { guardedDispatcher } from '../actions/ssrf.js';
import { iso, type Clock } from '../lib/clock.js';
import { decodeCursor, encodeCursor, isTimeAndId } from '../lib/cursor.js';
import type { Database } from '../store/db.js';

/** Seconds to wait after the 1st, 2nd, … failed attempt; about 40 hours in all, then the delivery fails. */
export const BACKOFF_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 43_200, 43_200];

export interface WebhookOptions {
  allowedHosts: readonly string[];
  secrets: Readonly<Record<string, string>>;
  timeoutMs?: number;
  batch?: number;
}

interface DeliveryRow {
  id: string;
  tenant_id: string;
  conversation_id: string;
  url: string;
  secret_name: string | null;
  payload: string;
  attempts: number;
}

export class WebhookDispatcher {
  private readonly dispatcher: Dispatcher;
  private running: Promise<unknown> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly opts: WebhookOptions,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
  ) {
    this.dispatcher = guardedDispatcher(opts.allowedHosts);
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (!this.running) void this.runOnce().catch((err) => this.log.warn({ err }, 'webhook delivery pass failed'));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
    await this.dispatcher.close();
  }

  /** One pass: attempts every due delivery that has no earlier pending one for its conversation and URL. */
  async runOnce(): Promise<{ delivered: number; retried: number; failed: number }> {
    const pass = this.pass();
    this.running = pass;
    try {
      return await pass;
    } finally {
      this.running = null;
    }
  }

  private async pass(): Promise<{ delivered: number; retried: number; failed: number }> {
    const counts = { delivered: 0, retried: 0, failed: 0 };
    const now = iso(this.clock.now());
    const due = (q: Knex | Knex.Transaction) => {
      const query = q('webhook_deliveries as d')
        .where('d.status', 'pending')
        .andWhere('d.next_attempt_at', '<=', now)
        .whereNotExists((sub) =>
          sub
            .select(q.raw('1'))
            .from('webhook_deliveries as e')
            .whereRaw('e.conversation_id = d.conversation_id')
            .andWhereRaw('e.url = d.url')
            .andWhere('e.status', 'pending')
            .andWhereRaw('e.seq < d.seq'),
        )
        .orderBy('d.next_attempt_at')
        .limit(this.opts.batch ?? 20)
        .select('d.id', 'd.tenant_id', 'd.conversation_id', 'd.url', 'd.secret_name', 'd.payload', 'd.attempts');
      // Another process's claimed deliveries are skipped, not waited for.
      return (this.db.dialect === 'postgres' ? query.forUpdate('d').skipLocked() : query) as unknown as Promise<DeliveryRow[]>;
    };
    if (this.db.dialect === 'postgres') {
      // The claimed rows stay locked until their attempts are recorded.
      await this.db.knex.transaction(async (trx) => {
        for (const row of await due(trx)) counts[await this.attempt(row, (write) => write(trx))]++;
      });
    } else {
      // One process owns an SQLite file: no claim needed, and no transaction held across HTTP calls.
      for (const row of await due(this.db.knex)) counts[await this.attempt(row, (write) => this.db.knex.transaction(write))]++;
    }
    return counts;
  }

  private async attempt(
    row: DeliveryRow,
    persist: (write: (trx: Knex.Transaction) => Promise<void>) => Promise<void>,
  ): Promise<'delivered' | 'retried' | 'failed'> {
    const attempt = Number(row.attempts) + 1;
    const sentAt = this.clock.now();
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'switchboard-webhooks/1',
        'webhook-id': row.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      };
      if (row.secret_name) {
        const secret = this.opts.secrets[row.secret_name];
        if (!secret) throw new Error(`secret ${row.secret_name} is not configured (SWITCHBOARD_SECRET_${row.secret_name})`);
        const wh = secret.startsWith('whsec_') ? new Webhook(secret) : new Webhook(new TextEncoder().encode(secret));
        headers['webhook-signature'] = wh.sign(row.id, sentAt, row.payload);
      }
      const res = await request(row.url, {
        method: 'POST',
        headers,
        body: row.payload,
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
      status = res.statusCode;
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (err) {
      const e = err as Error;
      error = e.name === 'TimeoutError' ? 'timed out' : e.message.slice(0, 500);
    }
    const durationMs = Math.round((performance.now() - started) * 100) / 100;
    const at = iso(sentAt);
    let outcome: 'delivered' | 'retried' | 'failed';
    let update: Record<string, unknown>;
    if (!error) {
      outcome = 'delivered';
      update = { status: 'delivered', delivered_at: at, next_attempt_at: null };
    } else if (attempt > BACKOFF_SECONDS.length) {
      outcome = 'failed';
      update = { status: 'failed', next_attempt_at: null };
    } else {
      outcome = 'retried';
      update = { next_attempt_at: iso(new Date(sentAt.getTime() + BACKOFF_SECONDS[attempt - 1] * 1000)) };
    }
    await persist(async (trx) => {
      await trx('webhook_attempts').insert({ delivery_id: row.id, attempt, tenant_id: row.tenant_id, at, status, error, duration_ms: durationMs });
      await trx('webhook_deliveries').where({ id: row.id }).update({ ...update, attempts: attempt, last_status: status, last_error: error });
    });
    if (outcome !== 'delivered') this.log.warn({ delivery: row.id, attempt, status, error, outcome }, 'webhook delivery failed');
    return outcome;
  }
}

/** An agent's deliveries, newest first, each with its attempts, a page at a time. */
export async function listDeliveries(
  db: Database,
  tenantId: string,
  agentId: string,
  q: { status?: string; conversation_id?: string; limit: number; cursor?: string },
) {
  const position = decodeCursor(q.cursor, isTimeAndId);
  const after = position ? { createdAt: position[0], id: position[1] } : null;
  const query = db.knex('webhook_deliveries').where({ tenant_id: tenantId, agent_id: agentId });
  if (q.status) query.andWhere('status', q.status);
  if (q.conversation_id) query.andWhere('conversation_id', q.conversation_id);
  if (after) {
    const a = after;
    query.andWhere((w) => w.where('created_at', '<', a.createdAt).orWhere((w2) => w2.where('created_at', '=', a.createdAt).andWhere('id', '<', a.id)));
  }
  const rows = await query.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit + 1);
  const page = rows.slice(0, q.limit);
  const attempts = page.length
    ? await db.knex('webhook_attempts').where({ tenant_id: tenantId }).whereIn('delivery_id', page.map((r) => r.id)).orderBy(['delivery_id', 'attempt'])
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
