// The review inbox (service/review.ts), agents' stored test conversations and evaluations of
// drafts (service/evaluations.ts).
// review_groups: one row per agent, reason and near-identical message while open (`open_key`
// holds the group key then, null once acted on, so that the same message seen again after an
// action opens a new group), with the action taken and the key that took it. review_occurrences:
// each message that was worth a look, written with the turn that showed it; erasure deletes a
// conversation's. The inbox reads review_groups by (agent, status[, reason], last seen), its
// counts by reason from an index that holds them: no query of it touches the audit log.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('review_groups', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('reason', 24).notNullable();
    t.string('group_key', 64).notNullable();
    t.string('open_key', 64).nullable();
    t.integer('count').notNullable().defaultTo(0);
    t.string('first_seen_at', 30).notNullable();
    t.string('last_seen_at', 30).notNullable();
    t.string('status', 16).notNullable();
    t.text('action').nullable();
    t.string('acted_by', 128).nullable();
    t.string('acted_at', 30).nullable();
    t.unique(['tenant_id', 'agent_id', 'open_key'], { indexName: 'review_groups_open_key' });
    t.index(['tenant_id', 'agent_id', 'status', 'last_seen_at', 'id'], 'review_groups_list_idx');
    // With the count, so that the inbox's counts by reason read this index alone.
    t.index(['tenant_id', 'agent_id', 'status', 'reason', 'last_seen_at', 'id', 'count'], 'review_groups_reason_idx');
  });
  await knex.schema.createTable('review_occurrences', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('group_key', 64).notNullable();
    t.uuid('acted_group').nullable();
    t.uuid('conversation_id').notNullable();
    t.integer('turn_index').notNullable();
    t.integer('audit_sequence').nullable();
    t.integer('agent_version').notNullable();
    t.string('reason', 24).notNullable();
    t.text('message').notNullable();
    t.string('capability', 64).notNullable();
    t.text('detail').notNullable();
    t.string('created_at', 30).notNullable();
    t.index(['tenant_id', 'agent_id', 'group_key', 'created_at'], 'review_occurrences_group_idx');
    t.index(['tenant_id', 'acted_group'], 'review_occurrences_acted_idx');
    t.index(['tenant_id', 'conversation_id'], 'review_occurrences_conversation_idx');
  });
  await knex.schema.createTable('agent_test_suites', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.text('tests').notNullable();
    t.string('updated_at', 30).notNullable();
    t.primary(['tenant_id', 'agent_id']);
  });
  await knex.schema.createTable('evaluations', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.integer('version').notNullable();
    t.integer('baseline').notNullable();
    t.string('status', 16).notNullable();
    t.string('stage', 32).notNullable();
    t.integer('done').notNullable().defaultTo(0);
    t.integer('total').notNullable().defaultTo(0);
    t.text('result').nullable();
    t.text('error').nullable();
    t.uuid('replay_id').nullable();
    t.string('created_by', 128).nullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('expires_at', 30).notNullable();
    t.index(['tenant_id', 'agent_id', 'created_at'], 'evaluations_agent_idx');
    t.index(['expires_at'], 'evaluations_expiry_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('evaluations');
  await knex.schema.dropTable('agent_test_suites');
  await knex.schema.dropTable('review_occurrences');
  await knex.schema.dropTable('review_groups');
}
