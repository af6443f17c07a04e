// Conversation leases on a database several processes share: a call takes its conversation's row
// in one short statement (lease_id, lease_until), renews it while it works, and gives it up with
// its write, so that no connection is held while actions run. A process that dies lets others in
// once its lease runs out; a waiter wakes on the release notice (event-log.ts) or polls.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import { UnavailableError } from '../errors.js';
import type { ConversationTableRow } from './rows.js';
import type { TurnWriter } from './writer.js';

/** A conversation by its tenant and id. */
export interface ConversationRef {
  tenantId: string;
  id: string;
}

/** A lease a call holds; `held` turns false once a write has released it. */
export interface Lease {
  id: string;
  held: boolean;
  /** The row as taking the lease returned it, for the call's first load (one round trip for both). */
  row?: ConversationTableRow;
}

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
    const renew = lease.held ? setInterval(() => void this.renew(target, lease), Math.max(500, Math.floor(this.leaseMs / 3))) : null;
    renew?.unref();
    try {
      return await fn(lease);
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
    const renew = setInterval(
      () => {
        void this.knex('conversations')
          .where('lease_id', leaseId)
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
      await this.knex('conversations')
        .where('lease_id', leaseId)
        .update({ lease_id: null, lease_until: null })
        .catch(() => undefined); // an unreleased lease runs out by itself
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
      const held = await this.knex('conversations').where({ id: target.id, tenant_id: target.tenantId }).first('lease_until');
      if (!held) return 'absent';
      if (skipIfBusy) return 'busy';
      if (Date.now() > giveUpAt) throw new UnavailableError('The conversation is busy with another request; try again shortly');
      const until = Date.parse(held.lease_until ?? now) - Date.now();
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
