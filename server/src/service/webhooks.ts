// Delivers webhook events from the durable outbox (webhook_deliveries, written in the same
// transaction as the status change): signed per the Standard Webhooks specification, in order
// per conversation and URL, at least once, retried with exponential backoff for over 24 hours,
// every attempt recorded. The same address rules as HTTP actions apply, per tenant.
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { DispatcherPool, type HostGrants } from '../actions/http-action.js';
import { BlockedAddressError } from '../actions/ssrf.js';
import type { SecretService } from './secrets.js';
import { iso, type Clock } from '../lib/clock.js';
import type { Database } from '../store/db.js';
import { WebhookStore, type DeliveryRow } from '../store/webhook-store.js';

/** Seconds to wait after the 1st, 2nd, … failed attempt; about 40 hours in all, then the delivery fails. */
const BACKOFF_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 43_200, 43_200];

export interface WebhookOptions {
  /** Hosts each tenant may reach although they are private, as for HTTP actions. */
  allowedHosts: HostGrants;
  /** Resolves `secret_name` among the secrets granted to the delivery's tenant. */
  secrets: Pick<SecretService, 'forTenant'>;
  /** Deliveries under way at once, in all and per tenant. */
  concurrency?: { total: number; perTenant: number };
  timeoutMs?: number;
}

type Outcome = 'delivered' | 'retried' | 'failed';

/**
 * Deliveries run concurrently: at most `total` at once, and at most `perTenant` of one tenant,
 * so a tenant with slow endpoints fills only its own share. A delivery is claimed by moving
 * its next attempt past its time-out (a short write, no connection held during the call); a
 * process that dies mid-call leaves it due again after that.
 */
export class WebhookDispatcher {
  private readonly dispatchers: DispatcherPool;
  private readonly store: WebhookStore;
  private readonly inFlight = new Map<string, { tenant: string; done: Promise<Outcome> }>();
  private readonly perTenant = new Map<string, number>();
  private ticking: Promise<number> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly total: number;
  private readonly tenantShare: number;
  private readonly timeoutMs: number;

  constructor(
    db: Database,
    private readonly clock: Clock,
    private readonly opts: WebhookOptions,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
  ) {
    this.dispatchers = new DispatcherPool(opts.allowedHosts);
    this.store = new WebhookStore(db);
    this.total = opts.concurrency?.total ?? 16;
    this.tenantShare = opts.concurrency?.perTenant ?? 4;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (!this.ticking) void this.tick().catch((err: unknown) => this.log.warn({ err }, 'webhook delivery pass failed'));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
    await this.dispatchers.close();
  }

  /** Attempts every delivery due now, within the concurrency limits, and waits for them (tests, CLIs). */
  async runOnce(): Promise<{ delivered: number; retried: number; failed: number }> {
    const counts = { delivered: 0, retried: 0, failed: 0 };
    for (;;) {
      const started = await this.tick();
      // A timer's pass still claiming holds rows not yet in flight here: wait for it too.
      if (!started && !this.inFlight.size && !this.ticking) return counts;
      for (const outcome of await Promise.all([...this.inFlight.values()].map((f) => f.done))) counts[outcome]++;
    }
  }

  /**
   * Claims due deliveries up to the free capacity (fairly across tenants) and starts them; does
   * not wait for them. Passes run one after another, so a pass sees what the one before started.
   */
  private tick(): Promise<number> {
    const before = this.ticking?.catch(() => 0) ?? Promise.resolve(0);
    const run = before.then(async () => {
      const room = this.total - this.inFlight.size;
      if (room <= 0) return 0;
      const rows = await this.claim(room);
      for (const row of rows) {
        this.perTenant.set(row.tenant_id, (this.perTenant.get(row.tenant_id) ?? 0) + 1);
        const done = this.attempt(row)
          .catch((err: unknown): Outcome => {
            this.log.warn({ err, delivery: row.id }, 'webhook delivery could not be recorded');
            return 'retried';
          })
          .finally(() => {
            this.inFlight.delete(row.id);
            const n = (this.perTenant.get(row.tenant_id) ?? 1) - 1;
            if (n > 0) this.perTenant.set(row.tenant_id, n);
            else this.perTenant.delete(row.tenant_id);
          });
        this.inFlight.set(row.id, { tenant: row.tenant_id, done });
      }
      return rows.length;
    });
    this.ticking = run;
    return run.finally(() => {
      if (this.ticking === run) this.ticking = null;
    });
  }

  /**
   * Due deliveries that have no earlier pending one for their conversation and URL, at most
   * `perTenant` per tenant (less what each tenant has under way here), claimed atomically.
   */
  private async claim(room: number): Promise<DeliveryRow[]> {
    const now = iso(this.clock.now());
    const candidates = await this.store.dueCandidates(now, this.tenantShare, room + this.inFlight.size + this.tenantShare);
    const busy = new Map(this.perTenant);
    const picked: string[] = [];
    for (const c of candidates) {
      if (picked.length >= room) break;
      if (this.inFlight.has(c.id)) continue;
      const n = busy.get(c.tenant_id) ?? 0;
      if (n >= this.tenantShare) continue;
      busy.set(c.tenant_id, n + 1);
      picked.push(c.id);
    }
    if (!picked.length) return [];
    // The claim: only rows still due move, so of two processes only one gets each.
    const until = iso(new Date(this.clock.now().getTime() + this.timeoutMs * 2 + 30_000));
    return this.store.claim(picked, now, until);
  }

  private async attempt(row: DeliveryRow): Promise<Outcome> {
    const attempt = row.attempts + 1;
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
        const secret = (await this.opts.secrets.forTenant(row.tenant_id, [row.secret_name]))[row.secret_name];
        if (!secret) throw new Error(`secret "${row.secret_name}" is not available to this tenant`);
        // A whsec_ secret is base64 (the Standard Webhooks form); any other text is the key itself.
        const wh = secret.startsWith('whsec_') ? new Webhook(secret) : new Webhook(new TextEncoder().encode(secret), { format: 'raw' });
        headers['webhook-signature'] = wh.sign(row.id, sentAt, row.payload);
      }
      const res = await request(row.url, {
        method: 'POST',
        headers,
        body: row.payload,
        dispatcher: this.dispatchers.for(row.tenant_id),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.statusCode;
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (err) {
      const e = err as Error;
      error = e.name === 'TimeoutError' ? 'timed out' : (e instanceof BlockedAddressError ? e.message : e.message || String(e)).slice(0, 500);
    }
    const durationMs = Math.round((performance.now() - started) * 100) / 100;
    const at = iso(sentAt);
    let outcome: Outcome;
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
    await this.store.recordAttempt(row, { attempt, at, status, error, durationMs, update });
    if (outcome !== 'delivered') this.log.warn({ delivery: row.id, tenant: row.tenant_id, attempt, status, error, outcome }, 'webhook delivery failed');
    return outcome;
  }
}
