// Conversation lifecycle: inactivity deadlines and erasure, the event log behind server-sent
// events, and the webhook outbox with its delivery attempts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    // When an active or paused conversation becomes abandoned; null in every other status.
    t.string('inactive_after', 30).nullable();
    t.string('erased_at', 30).nullable();
    t.index(['inactive_after'], 'conversations_inactive_idx');
    t.index(['tenant_id', 'user_id'], 'conversations_user_idx');
  });
  // One row per write, holding the events of that write in order (an event's id is row-index):
  // a converse call's four events cost one insert.
  await knex.schema.createTable('conversation_events', (t) => {
    t.bigIncrements('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('conversation_id').notNullable().references('id').inTable('conversations');
    t.text('events').notNullable();
    t.string('created_at', 30).notNullable();
    t.index(['conversation_id', 'id'], 'conversation_events_conv_idx');
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.uuid('conversation_id').notNullable();
    t.string('event', 64).notNullable();
    t.string('url', 4000).notNullable();
    t.string('secret_name', 128).nullable();
    t.text('payload').notNullable();
    t.string('status', 16).notNullable(); // pending | delivered | failed
    t.integer('attempts').notNullable();
    t.string('next_attempt_at', 30).nullable();
    t.string('created_at', 30).notNullable();
    t.bigInteger('seq').notNullable(); // creation order, for in-order delivery per conversation
    t.string('delivered_at', 30).nullable();
    t.integer('last_status').nullable();
    t.text('last_error').nullable();
    t.index(['status', 'next_attempt_at'], 'webhook_deliveries_due_idx');
    t.index(['conversation_id', 'url', 'seq'], 'webhook_deliveries_order_idx');
    t.index(['tenant_id', 'agent_id', 'created_at'], 'webhook_deliveries_list_idx');
  });
  await knex.schema.createTable('webhook_attempts', (t) => {
    t.uuid('delivery_id').notNullable().references('id').inTable('webhook_deliveries');
    t.integer('attempt').notNullable();
    t.string('tenant_id', 64).notNullable();
    t.string('at', 30).notNullable();
    t.integer('status').nullable();
    t.text('error').nullable();
    t.double('duration_ms').notNullable();
    t.primary(['delivery_id', 'attempt']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_attempts');
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('conversation_events');
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex(['inactive_after'], 'conversations_inactive_idx');
    t.dropIndex(['tenant_id', 'user_id'], 'conversations_user_idx');
  });
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('inactive_after');
    t.dropColumn('erased_at');
  });
}
