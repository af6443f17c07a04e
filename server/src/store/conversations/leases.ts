// Conversation leases on a database several processes share: a call takes its conversation's row
// in one short statement (lease_id, lease_until), renews it while it works, and gives it up with
// its write, so that no connection is held while actions run. A process that dies lets others in
// once its lease runs out; a waiter wakes on the release notice (event-log.ts) or polls.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import { UnavailableError } from '../../errors.js';
import type { ConversationTableRow } from '../rows.js';
import { ConcurrentUpdateError, type TurnWriter } from '../writer/writer.js';

/** A conversation by its tenant and id. */
export interface ConversationRef {
  tenantId: string;
  id: string;
}

/** A lease a call holds; `held` turns false once a write has released it. */
export interface Lease {
  id: string;
  held: boolean;
  /** The row as taking the lease returned it, or as read with the agent (optimistic), for the call's first load (one round trip for both). */
  row?: ConversationTableRow;
  /**
   * A call that runs before taking the lease (Leases.optimistic): it takes it before its first
   * effect, at the audit sequence it read, and a write without it succeeds only on a row nobody
   * holds or changed meanwhile.
   */
  pending?: PendingLease;
}

/** The state of an optimistic call's lease: what it read, and whether it has written or taken the lease yet. */
export interface PendingLease {
  /** The audit sequence of the row the call read (null before it read one). */
  readSeq: number | null;
  /** The version of the row the call read, when it was one this process kept (kept-rows.ts). */
  readVersion?: string;
  /** Whether the call has committed a write or taken the lease: from then on it cannot start again. */
  settled: boolean;
  /** Takes the lease at `readSeq`; throws LeaseFirst when the row changed or is held. */
  take(): Promise<void>;
}

/**
 * The optimistic way cannot go on: the row is held by another call, or changed since it was read.
 * Nothing was written or sent yet; the call starts again holding the lease.
 */
export class LeaseFirst extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'LeaseFirst';
  }
}

/** Whether a lease read on a row is live: held by some call and not run out at `now`. */
export const leaseIsLive = (row: Pick<ConversationTableRow, 'lease_id' | 'lease_until'>, now: string): boolean =>
  row.lease_id !== null && row.lease_id !== undefined && (row.lease_until ?? '') >= now;

/** How long a waiter sleeps between looks at a busy conversation when no release notice comes. */
const LEASE_POLL_MS = 250;

export class Leases {
  private readonly knex: Knex;
  private readonly writer: Pick<TurnWriter, 'takeLease'>;
  /** Emits 'released' with a conversation id when another process gave up its lease. */
  private readonly released: EventEmitter;
  private readonly leaseMs: number;

  constructor(o: { knex: Knex; writer: Pick<TurnWriter, 'takeLease'>; released: EventEmitter; leaseMs: number }) {
    ({ knex: this.knex, writer: this.writer, released: this.released, leaseMs: this.leaseMs } = o);
  }

  /**
   * Runs `fn` holding the lease on `target`'s row (a row that does not exist needs none: `fn`
   * runs with a lease not held and its load finds nothing). With `skipIfBusy`, a conversation
   * another process holds is skipped (resolves undefined); otherwise the call waits up to twice
   * the lease time, then answers 503.
   */
  async hold<T>(target: ConversationRef, fn: (lease: Lease) => Promise<T>, skipIfBusy: boolean): Promise<T | undefined> {
    const lease: Lease = { id: randomUUID(), held: false };
    const acquired = await this.acquire(target, lease.id, skipIfBusy);
    if (acquired === 'busy') return undefined;
    if (acquired !== 'absent') {
      lease.held = true;
      lease.row = acquired;
    }
    // Renewed while the call works, so a slow action never lets another process in.
    const renew = lease.held ? this.renewing(target, lease) : null;
    try {
      return await fn(lease);
    } finally {
      if (renew) clearInterval(renew);
      if (lease.held) await this.release(target, lease);
    }
  }

  /** Renews `lease` every third of the lease time while a call holds it; the caller clears the timer. */
  private renewing(target: ConversationRef, lease: Lease): NodeJS.Timeout {
    const timer = setInterval(() => void this.renew(target, lease), Math.max(500, Math.floor(this.leaseMs / 3)));
    timer.unref();
    return timer;
  }

  private release(target: ConversationRef, lease: Lease): Promise<unknown> {
    return this.knex('conversations')
      .where({ id: target.id, lease_id: lease.id })
      .update({ lease_id: null, lease_until: null })
      .catch(() => undefined); // an unreleased lease runs out by itself
  }

  /**
   * Runs `fn` on `target` without taking its lease first (`read`: its row, when the caller has just read it): a turn that calls nothing outside the
   * process is then one read and one write, the write conditioned on the row being unchanged and
   * not held (postgres-writer.ts). Before its first effect (an action, a model call) the call takes
   * the lease at the audit sequence it read (`lease.pending.take`). Resolves null, with nothing
   * written or sent, when that cannot be done: the row was held or changed meanwhile; the caller
   * then runs `fn` again holding the lease (hold).
   */
  async optimistic<T>(target: ConversationRef, read: ConversationTableRow | undefined, fn: (lease: Lease) => Promise<T>): Promise<{ value: T } | null> {
    // `read`: the row as read just before, which the call's first load takes instead of reading it again.
    const lease: Lease = { id: randomUUID(), held: false, row: read };
    // Set by take(), from inside the call.
    const timer: { renew?: NodeJS.Timeout } = {};
    const pending: PendingLease = {
      readSeq: null,
      settled: false,
      take: async () => {
        if (lease.held || pending.settled) return;
        if (pending.readSeq === null) throw new LeaseFirst('no row was read');
        const now = new Date().toISOString();
        const row = await this.writer.takeLease(target, {
          id: lease.id,
          until: new Date(Date.now() + this.leaseMs).toISOString(),
          now,
          auditSeq: pending.readSeq,
          ...(pending.readVersion !== undefined ? { version: pending.readVersion } : {}),
        });
        if (!row) throw new LeaseFirst('the conversation was held or changed since it was read');
        lease.held = true;
        pending.settled = true;
        timer.renew = this.renewing(target, lease);
      },
    };
    lease.pending = pending;
    try {
      return { value: await fn(lease) };
    } catch (err) {
      if (!pending.settled && (err instanceof LeaseFirst || err instanceof ConcurrentUpdateError)) return null;
      throw err;
    } finally {
      if (timer.renew) clearInterval(timer.renew);
      if (lease.held) await this.release(target, lease);
    }
  }

  /**
   * Runs `fn` holding the leases of those of a tenant's conversations `ids` that no other call
   * holds, all taken in one statement under one lease id and renewed together; `fn` gets their
   * rows. Whatever `fn` leaves held is released after it. The ids not taken (held elsewhere, or
   * absent) are returned with `fn`'s result.
   */
  async holdMany<T>(
    tenantId: string,
    ids: string[],
    fn: (rows: ConversationTableRow[], leaseId: string) => Promise<T>,
  ): Promise<{ result: T; notTaken: string[] }> {
    const leaseId = randomUUID();
    const until = () => new Date(Date.now() + this.leaseMs).toISOString();
    const rows = await this.knex('conversations')
      .where('tenant_id', tenantId)
      .whereIn('id', ids)
      .andWhere((q) => q.whereNull('lease_id').orWhere('lease_until', '<', new Date().toISOString()))
      .update({ lease_id: leaseId, lease_until: until() })
      .returning<ConversationTableRow[]>('*');
    const taken = new Set(rows.map((r) => r.id));
    // Renewed and released through the primary key: by the ids taken, where the lease is still this one.
    const mine = () =>
      this.knex('conversations')
        .where('tenant_id', tenantId)
        .whereIn('id', [...taken])
        .andWhere('lease_id', leaseId);
    const renew = setInterval(
      () => {
        void mine()
          .update({ lease_until: until() })
          .catch(() => undefined);
      },
      Math.max(500, Math.floor(this.leaseMs / 3)),
    );
    renew.unref();
    try {
      return { result: await fn(rows, leaseId), notTaken: ids.filter((id) => !taken.has(id)) };
    } finally {
      clearInterval(renew);
      if (taken.size) {
        await mine()
          .update({ lease_id: null, lease_until: null })
          .catch(() => undefined); // an unreleased lease runs out by itself
      }
    }
  }

  private renew(target: ConversationRef, lease: Lease): Promise<unknown> {
    return this.knex('conversations')
      .where({ id: target.id, lease_id: lease.id })
      .update({ lease_until: new Date(Date.now() + this.leaseMs).toISOString() })
      .catch(() => undefined);
  }

  /** The row, when the lease is ours; 'absent': no such conversation (the load says so); 'busy': skipped. */
  private async acquire(target: ConversationRef, leaseId: string, skipIfBusy: boolean): Promise<ConversationTableRow | 'absent' | 'busy'> {
    const giveUpAt = Date.now() + this.leaseMs * 2;
    for (;;) {
      const now = new Date().toISOString();
      const row = await this.writer.takeLease(target, { id: leaseId, until: new Date(Date.now() + this.leaseMs).toISOString(), now });
      if (row) return row;
      if (skipIfBusy) {
        const exists = await this.knex('conversations').where({ id: target.id, tenant_id: target.tenantId }).first('id');
        return exists ? 'busy' : 'absent';
      }
      // Asks the holder for a notice on release (the trigger fires only for rows so marked), while
      // the lease is still held: marked after a release, the row would wait for a notice that never comes.
      const marked = await this.knex('conversations')
        .where({ id: target.id, tenant_id: target.tenantId })
        .whereNotNull('lease_id')
        .andWhere('lease_until', '>=', now)
        .update({ lease_wanted: true })
        .returning<{ lease_until: string }[]>('lease_until');
      const held = marked.at(0);
      if (Date.now() > giveUpAt) throw new UnavailableError('The conversation is busy with another request; try again shortly');
      if (!held) {
        // Released or run out since, or no such conversation: look again at once.
        const exists = await this.knex('conversations').where({ id: target.id, tenant_id: target.tenantId }).first('id');
        if (!exists) return 'absent';
        continue;
      }
      const until = Date.parse(held.lease_until) - Date.now();
      await this.waitForRelease(target.id, Math.max(10, Math.min(LEASE_POLL_MS, until + 5)));
    }
  }

  private waitForRelease(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (released: string) => {
        if (released !== id) return;
        clearTimeout(timer);
        this.released.off('released', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.released.off('released', done);
        resolve();
      }, ms);
      this.released.on('released', done);
    });
  }
}
