// Messaging channels (docs/channels.md): each agent's connected channels with their credentials
// (encrypted like tenant secrets), the inbound messages a provider sent (unique per channel and
// provider message id: the record that makes redeliveries no-ops across replicas and restarts),
// each channel user's current conversation and processing lease, and the outbox of replies
// with every provider call attempted.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('channels', (t) => {
    t.string('id', 40).primary();
    t.string('tenant_id', 128).notNullable();
    t.string('agent_id', 36).notNullable();
    t.string('kind', 16).notNullable();
    t.string('status', 16).notNullable();
    t.text('credentials').notNullable();
    t.text('fields').notNullable();
    t.boolean('webhook_set').nullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.unique(['tenant_id', 'agent_id', 'kind'], { indexName: 'channels_agent_kind' });
  });
  await knex.schema.createTable('channel_inbound', (t) => {
    t.bigIncrements('id').primary();
    t.string('channel_id', 40).notNullable();
    t.string('tenant_id', 128).notNullable();
    t.string('message_key', 255).notNullable();
    t.string('user_key', 255).notNullable();
    t.text('payload').nullable();
    t.string('status', 16).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('target').nullable();
    t.string('conversation_id', 36).nullable();
    t.text('error').nullable();
    t.string('received_at', 32).notNullable();
    t.string('processed_at', 32).nullable();
    t.unique(['channel_id', 'message_key'], { indexName: 'channel_inbound_message' });
    t.index(['channel_id', 'user_key', 'status', 'id'], 'channel_inbound_user_idx');
    t.index(['status', 'id'], 'channel_inbound_pending_idx');
    // Processed messages' ids are forgotten after a while, oldest first.
    t.index(['received_at'], 'channel_inbound_received_idx');
  });
  await knex.schema.createTable('channel_users', (t) => {
    t.string('channel_id', 40).notNullable();
    t.string('user_key', 255).notNullable();
    t.string('tenant_id', 128).notNullable();
    t.string('conversation_id', 36).nullable();
    t.text('reply_to').nullable();
    t.text('options').nullable();
    t.string('last_inbound_at', 32).nullable();
    t.string('lease_owner', 64).nullable();
    t.string('lease_until', 32).nullable();
    t.primary(['channel_id', 'user_key']);
  });
  await knex.schema.createTable('channel_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.string('tenant_id', 128).notNullable();
    t.string('agent_id', 36).notNullable();
    t.string('channel_id', 40).notNullable();
    t.string('kind', 16).notNullable();
    t.string('conversation_id', 36).notNullable();
    t.string('user_key', 255).notNullable();
    t.string('source', 16).notNullable();
    t.string('source_key', 128).notNullable();
    t.text('calls').nullable();
    t.integer('call_count').notNullable();
    t.integer('calls_done').notNullable().defaultTo(0);
    t.string('status', 16).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('next_attempt_at', 32).nullable();
    t.string('created_at', 32).notNullable();
    t.string('sent_at', 32).nullable();
    t.float('latency_ms').nullable();
    t.text('provider_ids').notNullable();
    t.integer('last_status').nullable();
    t.text('last_error').nullable();
    t.boolean('audited').notNullable().defaultTo(false);
    t.unique(['channel_id', 'source_key'], { indexName: 'channel_deliveries_source' });
    t.index(['status', 'next_attempt_at'], 'channel_deliveries_due_idx');
    t.index(['channel_id', 'user_key', 'status', 'id'], 'channel_deliveries_user_idx');
    t.index(['tenant_id', 'agent_id', 'id'], 'channel_deliveries_agent_idx');
    t.index(['conversation_id'], 'channel_deliveries_conversation_idx');
    // Finished deliveries whose audit entry is not written yet: few, found without a scan.
    t.index(['audited', 'created_at'], 'channel_deliveries_unaudited_idx');
  });
  await knex.schema.createTable('channel_attempts', (t) => {
    t.bigInteger('delivery_id').notNullable();
    t.integer('attempt').notNullable();
    t.integer('call').notNullable();
    t.string('tenant_id', 128).notNullable();
    t.string('method', 64).notNullable();
    t.string('at', 32).notNullable();
    t.integer('status').nullable();
    t.text('error').nullable();
    t.float('duration_ms').notNullable();
    t.primary(['delivery_id', 'attempt', 'call']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['channel_attempts', 'channel_deliveries', 'channel_users', 'channel_inbound', 'channels']) await knex.schema.dropTable(table);
}
