// A tenant's privacy policy (docs/privacy.md): one row per tenant, the policy as JSON. Its
// revision tells replicas holding it whether the one they hold is still the one set.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tenant_privacy', (t) => {
    t.string('tenant_id', 128).notNullable().primary();
    t.text('policy').notNullable();
    t.integer('revision').notNullable();
    t.string('updated_at', 30).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tenant_privacy');
}
