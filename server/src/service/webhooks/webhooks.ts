// Delivers webhook events from the durable outbox (webhook_deliveries, written in the same
// transaction as the status change): signed per the Standard Webhooks specification, in order
// per conversation and URL, at least once, retried with exponential backoff for over 24 hours,
// every attempt recorded. The same address rules as HTTP actions apply, per tenant.
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { DispatcherPool, type HostGrants } from '../../actions/http-action.js';
import { BlockedAddressError } from '../../actions/ssrf.js';
import type { SecretService } from '../secrets.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { Database } from '../../store/db.js';
import { WebhookStore, type DeliveryRow } from '../../store/webhook-store.js';
import { Outbox, retryAt, type Outcome, type OutboxKind, type OutboxOptions } from '../outbox/outbox.js';

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

/**
 * The webhook queue on the outbox (outbox/outbox.ts): at most `total` deliveries at once and
 * `perTenant` of one tenant, so a tenant with slow endpoints fills only its own share.
 */
export class WebhookDispatcher implements OutboxKind<string, DeliveryRow> {
  readonly name = 'webhooks';
  readonly leaseMs: number;
  private readonly dispatchers: DispatcherPool;
  private readonly store: WebhookStore;
  private readonly outbox: Outbox<string, DeliveryRow>;
  private readonly timeoutMs: number;

  constructor(
    db: Database,
    private readonly clock: Clock,
    private readonly opts: WebhookOptions,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
    onOutcome?: OutboxOptions['onOutcome'],
  ) {
    this.dispatchers = new DispatcherPool(opts.allowedHosts);
    this.store = new WebhookStore(db);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.leaseMs = this.timeoutMs * 2 + 30_000;
    this.outbox = new Outbox(this, { concurrency: opts.concurrency ?? { total: 16, perTenant: 4 }, clock, log, onOutcome });
  }

  start(intervalMs: number): void {
    this.outbox.start(intervalMs);
  }

  async stop(): Promise<void> {
    await this.outbox.stop();
    await this.dispatchers.close();
  }

  /** Attempts every delivery due now, within the concurrency limits, and waits for them (tests, CLIs). */
  async runOnce(): Promise<{ delivered: number; retried: number; failed: number }> {
    const { delivered, retried, failed } = await this.outbox.runOnce();
    return { delivered, retried, failed };
  }

  due(now: string, perTenant: number, limit: number) {
    return this.store.due(now, perTenant, limit);
  }

  claim(ids: string[], now: string, until: string) {
    return this.store.claim(ids, now, until);
  }

  async attempt(row: DeliveryRow): Promise<Outcome> {
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
    } else {
      const next = retryAt(sentAt, attempt, BACKOFF_SECONDS);
      outcome = next ? 'retried' : 'failed';
      update = next ? { next_attempt_at: iso(next) } : { status: 'failed', next_attempt_at: null };
    }
    await this.store.recordAttempt(row, { attempt, at, status, error, durationMs, update });
    if (outcome !== 'delivered') this.log.warn({ delivery: row.id, tenant: row.tenant_id, attempt, status, error, outcome }, 'webhook delivery failed');
    return outcome;
  }
}
