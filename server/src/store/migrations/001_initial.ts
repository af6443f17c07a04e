// Tables for agents and their immutable versions, conversations, turns, audit entries and
// idempotency records. Every row carries tenant_id. Timestamps are ISO 8601 UTC strings with
// milliseconds (fixed width, so they sort as text on both databases); JSON is stored as text.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agents', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.string('slug', 63).notNullable();
    t.integer('current_version').notNullable();
    t.string('archived_at', 30).nullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.unique(['tenant_id', 'slug']);
  });
  await knex.schema.createTable('agent_versions', (t) => {
    t.uuid('agent_id').notNullable().references('id').inTable('agents');
    t.integer('version').notNullable();
    t.string('tenant_id', 64).notNullable();
    t.string('digest', 64).notNullable();
    t.text('definition').notNullable();
    t.string('created_at', 30).notNullable();
    t.primary(['agent_id', 'version']);
  });
  await knex.schema.createTable('conversations', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable().references('id').inTable('agents');
    t.integer('agent_version').notNullable();
    t.string('user_id', 256).nullable();
    t.string('status', 16).notNullable();
    t.string('outcome', 64).nullable();
    t.string('capability', 64).notNullable();
    t.uuid('capability_id').notNullable();
    t.string('phase', 64).notNullable();
    t.boolean('awaiting_input').notNullable();
    t.text('state').notNullable();
    t.text('context').nullable();
    t.integer('turn_count').notNullable();
    t.integer('audit_seq').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('completed_at', 30).nullable();
    t.string('last_user_turn_at', 30).notNullable();
    t.index(['tenant_id', 'agent_id', 'created_at', 'id'], 'conversations_list_idx');
  });
  await knex.schema.createTable('turns', (t) => {
    t.uuid('conversation_id').notNullable().references('id').inTable('conversations');
    t.integer('idx').notNullable();
    t.string('tenant_id', 64).notNullable();
    t.string('role', 8).notNullable();
    t.text('message').notNullable();
    t.string('phase', 64).nullable();
    t.text('options').nullable();
    t.string('author', 200).nullable();
    t.string('timestamp', 30).notNullable();
    t.primary(['conversation_id', 'idx']);
  });
  // Keyed by (conversation, sequence): entries are only ever read per conversation, in order,
  // and a random-UUID key would cost an extra index write per entry.
  await knex.schema.createTable('audit_entries', (t) => {
    t.uuid('id').notNullable();
    t.uuid('conversation_id').notNullable().references('id').inTable('conversations');
    t.integer('sequence').notNullable();
    t.string('tenant_id', 64).notNullable();
    t.integer('turn_index').nullable();
    t.string('type', 32).notNullable();
    t.string('request_id', 200).notNullable();
    t.string('timestamp', 30).notNullable();
    t.double('duration_ms').nullable();
    t.text('data').notNullable();
    t.primary(['conversation_id', 'sequence']);
  });
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('key', 255).notNullable();
    t.string('request_hash', 64).notNullable();
    t.uuid('conversation_id').notNullable();
    t.text('response').notNullable();
    t.string('created_at', 30).notNullable();
    t.primary(['tenant_id', 'agent_id', 'key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['idempotency_keys', 'audit_entries', 'turns', 'conversations', 'agent_versions', 'agents']) {
    await knex.schema.dropTableIfExists(table);
  }
}
