// Model tokens each tenant spent per UTC day: the daily budget (LLM_TENANT_DAILY_TOKENS) is
// checked against this row by every process sharing the database.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('llm_usage', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.string('day', 10).notNullable();
    t.bigInteger('tokens').notNullable().defaultTo(0);
    t.integer('calls').notNullable().defaultTo(0);
    t.primary(['tenant_id', 'day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('llm_usage');
}
