// The tenant model: tenants' own secrets (encrypted), conversation leases (no connection held
// across an outbound call), per-conversation event numbers, and erasure recorded outside an
// audit entry's data so that only a real erasure can exempt it from the hash check.
import type { Knex } from 'knex';
import { isPostgres } from '../knex-adapter.js';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tenant_secrets', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.string('name', 128).notNullable();
    // AES-256-GCM: iv (12 bytes), ciphertext and tag, base64; the tenant and name are its associated data.
    t.text('ciphertext').notNullable();
    t.string('iv', 32).notNullable();
    t.string('tag', 32).notNullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.primary(['tenant_id', 'name']);
  });
  await knex.schema.alterTable('conversations', (t) => {
    t.string('lease_id', 36).nullable();
    t.string('lease_until', 30).nullable();
    t.integer('event_seq').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('audit_entries', (t) => {
    t.string('erased_at', 30).nullable();
  });
  await knex.schema.alterTable('conversation_events', (t) => {
    t.integer('seq').nullable();
  });
  // Number existing event rows per conversation, and remember the last number on the conversation.
  await knex.raw(`
    update conversation_events set seq = (
      select count(*) from conversation_events e2
      where e2.conversation_id = conversation_events.conversation_id and e2.id <= conversation_events.id)`);
  await knex.raw(`
    update conversations set event_seq = coalesce((
      select max(seq) from conversation_events e where e.conversation_id = conversations.id), 0)`);
  await knex.schema.alterTable('conversation_events', (t) => {
    t.unique(['conversation_id', 'seq'], { indexName: 'conversation_events_seq_idx' });
  });
  if (isPostgres(knex)) {
    // Wakes servers waiting for a conversation another server was answering.
    await knex.raw(`
      create function switchboard_notify_lease() returns trigger language plpgsql as $$
      begin
        perform pg_notify('switchboard_leases', new.id::text);
        return null;
      end $$`);
    await knex.raw(`
      create trigger conversations_lease_released after update of lease_id on conversations
      for each row when (old.lease_id is not null and new.lease_id is null)
      execute function switchboard_notify_lease()`);
  }
}

export async function down(knex: Knex): Promise<void> {
  if (isPostgres(knex)) {
    await knex.raw('drop trigger if exists conversations_lease_released on conversations');
    await knex.raw('drop function if exists switchboard_notify_lease()');
  }
  await knex.schema.alterTable('conversation_events', (t) => {
    t.dropUnique(['conversation_id', 'seq'], 'conversation_events_seq_idx');
  });
  await knex.schema.alterTable('conversation_events', (t) => t.dropColumn('seq'));
  await knex.schema.alterTable('audit_entries', (t) => t.dropColumn('erased_at'));
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('lease_id');
    t.dropColumn('lease_until');
    t.dropColumn('event_seq');
  });
  await knex.schema.dropTableIfExists('tenant_secrets');
}
