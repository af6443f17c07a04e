// Less work for PostgreSQL per turn (docs/performance.md, "Where a PostgreSQL turn's time goes"):
// - Taking a conversation's lease becomes a HOT update: no column it sets is indexed any more, so
//   PostgreSQL writes the new row version beside the old one without an entry in each of the
//   table's indexes (eight before). The lease index goes: a batch's lease (a user's erasure) is
//   renewed and released by the ids it took, through the primary key (leases.ts).
// - The lease-released notice is sent only when some call waits for that conversation: a waiter
//   marks the row (lease_wanted) while the lease is held, and the trigger fires only on rows so
//   marked. Unmarked, the trigger's condition is all it costs; before, every turn ran a PL/pgSQL
//   function and a pg_notify.
// - turns, audit_entries and conversation_events lose their foreign keys to conversations on
//   PostgreSQL. Each key ran a trigger per inserted row that locked the conversation row
//   (SELECT … FOR KEY SHARE, itself a WAL record): six per continuing turn, about 40% of the
//   write statement's time. The write inserts those rows only in the statement that updates or
//   inserts their conversation (postgres-writer.ts), and rows are deleted children first, so the
//   keys guarded nothing the writes do not. SQLite keeps them (its checks cost little there).
// - A new event is announced (NOTIFY) only for a conversation some event stream follows: a
//   process serving a stream marks the conversation (watched_until, renewed while it streams), and
//   the turn's write statement notifies when the row it updates is so marked. Before, a trigger
//   notified for every event row: a PL/pgSQL call per turn, a notice to every process, and a
//   NOTIFY's commit holds a cluster-wide lock through its WAL flush, so every turn's commit
//   waited for every other's (docs/scaling.md).
// - conversations keeps free room on each page (fillfactor 80) for those HOT row versions.
import type { Knex } from 'knex';
import { isPostgres } from '../knex-adapter.js';

const CHILDREN = ['turns', 'audit_entries', 'conversation_events'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_lease_idx');
    t.boolean('lease_wanted').notNullable().defaultTo(false);
    t.string('watched_until').nullable();
  });
  if (!isPostgres(knex)) return;
  await knex.raw('drop trigger if exists conversation_events_notify on conversation_events');
  for (const table of CHILDREN) await knex.raw(`alter table ${table} drop constraint if exists ${table}_conversation_id_foreign`);
  await knex.raw('drop trigger if exists conversations_lease_released on conversations');
  await knex.raw(`
    create trigger conversations_lease_released after update of lease_id on conversations
    for each row when (old.lease_id is not null and new.lease_id is null and old.lease_wanted)
    execute function switchboard_notify_lease()`);
  await knex.raw('alter table conversations set (fillfactor = 80)');
}

export async function down(knex: Knex): Promise<void> {
  if (isPostgres(knex)) {
    await knex.raw('create trigger conversation_events_notify after insert on conversation_events for each row execute function switchboard_notify_event()');
    await knex.raw('alter table conversations reset (fillfactor)');
    await knex.raw('drop trigger if exists conversations_lease_released on conversations');
    await knex.raw(`
      create trigger conversations_lease_released after update of lease_id on conversations
      for each row when (old.lease_id is not null and new.lease_id is null)
      execute function switchboard_notify_lease()`);
    for (const table of CHILDREN) {
      await knex.raw(`alter table ${table} add constraint ${table}_conversation_id_foreign foreign key (conversation_id) references conversations (id)`);
    }
  }
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('lease_wanted');
    t.dropColumn('watched_until');
    t.index(['lease_id'], 'conversations_lease_idx', { predicate: knex.whereNotNull('lease_id') });
  });
}
