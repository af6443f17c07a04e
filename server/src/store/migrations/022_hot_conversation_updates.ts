// A turn's update of its conversation changes no indexed column (docs/performance.md): on
// PostgreSQL it becomes a HOT update, a new row version on the same page without an entry in each
// of the table's indexes (seven before); on SQLite the update leaves those indexes alone.
// - The retention sweep's index is keyed by closed_at, when a closed conversation was last
//   written (null while it is open), instead of updated_at, which every turn moves. For closed
//   conversations the two are equal: every write sets both (turn-rows.ts).
// - The inactivity sweep's index is keyed by inactive_minute, the minute of the deadline, instead
//   of inactive_after, which every turn moves: the minute changes about once a minute of a
//   conversation's activity. The sweep reads the minutes due and checks the deadline itself
//   (conversation-store.ts dueForAbandonment).
// On a populated database the columns are filled from the ones they derive from, then indexed.
import type { Knex } from 'knex';

const CLOSED = "status in ('completed', 'abandoned') and erased_at is null";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.string('closed_at').nullable();
    t.string('inactive_minute').nullable();
  });
  await knex.raw("update conversations set closed_at = updated_at where status in ('completed', 'abandoned')");
  await knex.raw('update conversations set inactive_minute = substr(inactive_after, 1, 16) where inactive_after is not null');
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_closed_idx');
    t.dropIndex([], 'conversations_inactive_idx');
  });
  await knex.raw(`create index conversations_closed_idx on conversations (closed_at) where ${CLOSED}`);
  await knex.raw('create index conversations_inactive_idx on conversations (inactive_minute)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_closed_idx');
    t.dropIndex([], 'conversations_inactive_idx');
  });
  await knex.raw(`create index conversations_closed_idx on conversations (updated_at) where ${CLOSED}`);
  await knex.raw('create index conversations_inactive_idx on conversations (inactive_after)');
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('closed_at');
    t.dropColumn('inactive_minute');
  });
}
