// Fewer index entries written per turn (docs/performance.md):
// - The retention sweep's index holds closed, not yet erased conversations only. As an index of
//   every conversation on (status, updated_at) it was rewritten by every turn, since every turn
//   moves updated_at. The sweep's query names the same condition (conversation-store.ts,
//   dueForRetention), so both databases' planners use it.
// - The event log's index on (conversation_id, id) goes: events are read, counted and erased
//   through (conversation_id, seq), the unique index every event row has anyway.
import type { Knex } from 'knex';

const CLOSED_CONDITION = "status in ('completed', 'abandoned') and erased_at is null";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => t.dropIndex([], 'conversations_closed_idx'));
  await knex.raw(`create index conversations_closed_idx on conversations (updated_at) where ${CLOSED_CONDITION}`);
  await knex.schema.alterTable('conversation_events', (t) => t.dropIndex([], 'conversation_events_conv_idx'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversation_events', (t) => t.index(['conversation_id', 'id'], 'conversation_events_conv_idx'));
  await knex.schema.alterTable('conversations', (t) => t.dropIndex([], 'conversations_closed_idx'));
  await knex.schema.alterTable('conversations', (t) => t.index(['status', 'updated_at'], 'conversations_closed_idx'));
}
