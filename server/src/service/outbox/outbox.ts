// The one outbox engine: rows written durably (in the same transaction as whatever caused them)
// and worked here, at least once. A kind (webhook deliveries, channel replies) supplies its due
// query, its claim and its attempt; the engine supplies the rest, once for every kind:
//
// - a claim is a lease: a due row is claimed by moving its next attempt past the kind's lease
//   (a short write, no connection held during the call), so of two replicas only one gets it, and
//   a process that dies mid-attempt leaves the row due again after the lease;
// - fairness: at most `total` attempts in flight in this process and `perTenant` of one tenant, and
//   the due query ranks candidates per tenant, so a tenant with a slow endpoint or a long queue
//   fills only its own share and every other tenant's oldest rows are in every pass;
// - backoff: `retryAt` gives the next attempt's time from the kind's schedule and the receiver's
//   Retry-After, or none when the schedule is spent;
// - passes: one at a time, started by a timer, by `kick` (a row was written) and when an attempt
//   ends (the next row of the same order key, or one left for want of room, goes at once);
// - every outcome is counted per queue in the metrics and logged by the kind.
//
// No library fits: the job queues for Node (BullMQ, pg-boss, graphile-worker) each run on one
// backend (Redis or PostgreSQL), while these rows must live in either database, beside the write
// that caused them, and keep per-key order.
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { Lane } from '../../lib/lane.js';
import { Passes } from '../../lib/passes.js';

/** How one attempt ended. `again`: the row has more to do at once; `postponed`: it was put off without an attempt. */
export type Outcome = 'delivered' | 'retried' | 'failed' | 'refused' | 'again' | 'postponed';
export type OutcomeCounts = Record<Outcome, number>;

/** What the due query answers: a row's id and its tenant. */
export interface Candidate<Id> {
  id: Id;
  tenant_id: string;
}

export interface OutboxKind<Id extends string | number, Row extends Candidate<Id>> {
  /** The queue's name in logs and metrics. */
  readonly name: string;
  /** How long a claim holds a row: the attempt's longest duration and some. */
  readonly leaseMs: number;
  /** Due rows that have no earlier pending row of their order key, at most `perTenant` of each tenant, oldest due first. */
  due(now: string, perTenant: number, limit: number): Promise<Candidate<Id>[]>;
  /** Moves the rows still due to `until` and answers them (the others were taken meanwhile). */
  claim(ids: Id[], now: string, until: string): Promise<Row[]>;
  /** One attempt at a claimed row, its outcome recorded by the kind. */
  attempt(row: Row): Promise<Outcome>;
}

export interface OutboxOptions {
  concurrency: { total: number; perTenant: number };
  clock: Clock;
  log: { warn(o: object, m: string): void };
  /** Counts an outcome (metrics). */
  onOutcome?: (queue: string, outcome: Outcome) => void;
}

/**
 * When a row that failed its `attempt`-th attempt is tried again: after the schedule's wait for
 * that attempt, or the receiver's Retry-After when longer (at most `maxRetryAfterS`); null when
 * the schedule is spent and the row fails.
 */
export function retryAt(now: Date, attempt: number, schedule: readonly number[], retryAfterS?: number, maxRetryAfterS = 3600): Date | null {
  if (attempt > schedule.length) return null;
  const wait = Math.max(schedule[attempt - 1], Math.min(maxRetryAfterS, retryAfterS ?? 0));
  return new Date(now.getTime() + wait * 1000);
}

const zero = (): OutcomeCounts => ({ delivered: 0, retried: 0, failed: 0, refused: 0, again: 0, postponed: 0 });

export class Outbox<Id extends string | number, Row extends Candidate<Id>> {
  private readonly lane: Lane;
  private timer: NodeJS.Timeout | null = null;
  private readonly passes: Passes;
  private stopped = false;
  private readonly counts = zero();

  constructor(
    private readonly kind: OutboxKind<Id, Row>,
    private readonly opts: OutboxOptions,
  ) {
    this.lane = new Lane(opts.concurrency);
    this.passes = new Passes(
      () => this.tick(),
      (err) => opts.log.warn({ err, queue: kind.name }, 'outbox pass failed'),
    );
  }

  /** Attempts under way in this process. */
  get inFlight(): number {
    return this.lane.jobs.size;
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer || this.stopped) return;
    this.timer = setInterval(() => this.kick(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.passes.stop();
    await Promise.allSettled(this.lane.jobs.values());
  }

  /** Starts a pass soon: one at a time, and another after it when asked meanwhile. */
  kick(): void {
    this.passes.kick();
  }

  /** Attempts everything due now, and what those attempts make due, and waits for it (tests, CLIs). */
  async runOnce(): Promise<OutcomeCounts> {
    const before = { ...this.counts };
    for (;;) {
      await this.passes.running;
      const started = await this.tick();
      if (!started && !this.lane.jobs.size && !this.passes.running) break;
      await Promise.allSettled(this.lane.jobs.values());
    }
    const out = zero();
    for (const k of Object.keys(out) as Outcome[]) out[k] = this.counts[k] - before[k];
    return out;
  }

  /** Claims due rows up to the free room, fairly across tenants, and starts them; answers how many. */
  private async tick(): Promise<number> {
    const free = this.lane.free;
    if (free <= 0 || this.stopped) return 0;
    const { perTenant } = this.opts.concurrency;
    const now = this.opts.clock.now();
    const candidates = await this.kind.due(iso(now), perTenant, free + this.lane.jobs.size + perTenant);
    const busy = this.lane.counts();
    const picked: Id[] = [];
    for (const c of candidates) {
      if (picked.length >= free) break;
      if (this.lane.jobs.has(String(c.id))) continue;
      const n = busy.get(c.tenant_id) ?? 0;
      if (n >= perTenant) continue;
      busy.set(c.tenant_id, n + 1);
      picked.push(c.id);
    }
    if (!picked.length) return 0;
    const rows = await this.kind.claim(picked, iso(now), iso(new Date(now.getTime() + this.kind.leaseMs)));
    for (const row of rows) {
      this.lane.run(
        String(row.id),
        row.tenant_id,
        async () => {
          const outcome = await this.kind.attempt(row).catch((err: unknown): Outcome => {
            // Not recorded: the claim runs out and the row is due again.
            this.opts.log.warn({ err, queue: this.kind.name, id: row.id }, 'outbox attempt could not be recorded');
            return 'retried';
          });
          this.counts[outcome]++;
          this.opts.onOutcome?.(this.kind.name, outcome);
        },
        () => this.kick(),
      );
    }
    return rows.length;
  }
}
