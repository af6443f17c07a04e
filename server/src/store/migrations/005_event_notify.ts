// PostgreSQL: announce new events from a trigger (delivered on commit), which saves the converse
// path the round trip of its own pg_notify. SQLite has no NOTIFY; its process announces itself.
import type { Knex } from 'knex';
import { isPostgres } from '../knex-adapter.js';

export async function up(knex: Knex): Promise<void> {
  if (!isPostgres(knex)) return;
  await knex.raw(`
    create function switchboard_notify_event() returns trigger language plpgsql as $$
    begin
      perform pg_notify('switchboard_events', new.conversation_id::text);
      return null;
    end $$`);
  await knex.raw(`create trigger conversation_events_notify after insert on conversation_events for each row execute function switchboard_notify_event()`);
}

export async function down(knex: Knex): Promise<void> {
  if (!isPostgres(knex)) return;
  await knex.raw('drop trigger if exists conversation_events_notify on conversation_events');
  await knex.raw('drop function if exists switchboard_notify_event()');
}
