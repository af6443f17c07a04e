// API keys, stored only as hashes of their secret part.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.string('name', 100).nullable();
    t.string('prefix', 16).notNullable();
    t.string('secret_hash', 64).notNullable();
    t.string('scopes', 64).notNullable();
    t.string('created_at', 30).notNullable();
    t.string('revoked_at', 30).nullable();
    t.index(['tenant_id', 'created_at'], 'api_keys_tenant_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('api_keys');
}
