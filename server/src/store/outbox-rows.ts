// The outbox tables' shared queries (service/outbox/outbox.ts works them): which rows are due,
// in order per key and fairly per tenant, and the claim that leases them.
import type { Knex } from 'knex';

export interface OutboxTable {
  table: string;
  /** Rows of one key go out in `seq` order: a row waits while an earlier one of its key is pending. */
  orderKey: readonly string[];
  seq: string;
}

/**
 * Due rows that have no earlier pending row of their key, at most `perTenant` of each tenant
 * (ranked by due time), oldest due first.
 */
export async function dueInOrder(knex: Knex, t: OutboxTable, now: string, perTenant: number, limit: number): Promise<{ id: unknown; tenant_id: string }[]> {
  const ranked = knex(`${t.table} as d`)
    .where('d.status', 'pending')
    .andWhere('d.next_attempt_at', '<=', now)
    .whereNotExists((sub) => {
      sub.select(knex.raw('1')).from(`${t.table} as e`);
      for (const col of t.orderKey) sub.whereRaw(`e.${col} = d.${col}`);
      sub.andWhere('e.status', 'pending').andWhereRaw(`e.${t.seq} < d.${t.seq}`);
    })
    .select('d.id', 'd.tenant_id', 'd.next_attempt_at', knex.raw(`row_number() over (partition by d.tenant_id order by d.next_attempt_at, d.${t.seq}) as rn`));
  return knex.from(ranked.as('r')).where('r.rn', '<=', perTenant).orderBy('r.next_attempt_at').limit(limit).select('r.id', 'r.tenant_id');
}

/** Leases rows by moving their next attempt to `until`: only rows still due move, so of two processes one gets each. */
export function claimDue(knex: Knex, table: string, ids: readonly (string | number)[], now: string, until: string) {
  return knex(table).whereIn('id', ids).andWhere('status', 'pending').andWhere('next_attempt_at', '<=', now).update({ next_attempt_at: until });
}
