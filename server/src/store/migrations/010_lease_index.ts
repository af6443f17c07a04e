// The conversations a lease holds, by lease id: renewing and releasing a batch's lease (a user's
// erasure, leases.ts holdMany) is one statement by lease_id, which without this index read every
// conversation row (about 400 ms a batch at a million conversations on PostgreSQL). Partial: only
// the few rows that hold a lease are in it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.index(['lease_id'], 'conversations_lease_idx', { predicate: knex.whereNotNull('lease_id') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_lease_idx');
  });
}
