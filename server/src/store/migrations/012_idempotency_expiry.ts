// Idempotency records are kept for IDEMPOTENCY_TTL_HOURS and then deleted by the sweeper, oldest
// first: this index lets it find them without reading the table.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.index(['created_at'], 'idempotency_keys_created_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropIndex([], 'idempotency_keys_created_idx');
  });
}
