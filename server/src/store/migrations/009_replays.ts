// Replays of recorded conversations against an agent version: their progress and results,
// kept for seven days.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('replays', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.integer('version').notNullable();
    t.string('status', 16).notNullable();
    t.integer('done').notNullable().defaultTo(0);
    t.integer('total').notNullable().defaultTo(0);
    t.text('results').notNullable().defaultTo('[]');
    t.text('error');
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('expires_at', 30).notNullable();
    t.index(['tenant_id', 'agent_id', 'created_at'], 'replays_agent_idx');
    t.index(['expires_at'], 'replays_expiry_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('replays');
}
