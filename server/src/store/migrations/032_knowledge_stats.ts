// Per-source analytics of knowledge (docs/knowledge.md, "Analytics"): for each agent, hour,
// version and knowledge source, the answers that cited the source; and, under source '', the
// answer-phase searches that found nothing good enough. Written with the turn, in its transaction,
// as agent_stats is, so the counts are exact.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('knowledge_stats', (t) => {
    t.string('tenant_id', 128).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('hour', 13).notNullable();
    t.integer('version').notNullable();
    t.string('source', 64).notNullable();
    t.integer('cited').notNullable().defaultTo(0);
    t.integer('unanswered').notNullable().defaultTo(0);
    t.primary(['tenant_id', 'agent_id', 'hour', 'version', 'source']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('knowledge_stats');
}
