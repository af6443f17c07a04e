// A continuing turn's update of its conversation changes no indexed column, so PostgreSQL makes it
// a heap-only (HOT) update: the new row version goes beside the old one on its page and no index
// gets an entry (seven did on every turn). docs/performance.md has the measurements.
// - The inactivity sweep's index is keyed by the ten minutes the deadline falls in
//   (inactive_bucket, turn-rows.ts deadlineBucket) instead of the deadline, which every turn moves,
//   and holds open conversations only. The migration files every open conversation. A row a
//   version before this one writes afterwards (a rolling upgrade) has the column's default, ''
//   ("not filed"), or a bucket its turns did not move: the sweep reads '' as a due candidate and
//   files what it finds misfiled (conversation-store.ts fileDeadlines), so no deadline is lost.
// - The retention sweep's index is keyed by completed_at, set once when a conversation closes
//   (completed and abandoned are final; only an erasure changes a closed conversation, and it leaves
//   the index), instead of updated_at, which every turn moves.
// On PostgreSQL an index of that name built beforehand (`create index concurrently`,
// docs/deployment.md) is kept as it is, so the table is not locked against writes while it builds.
import type { Knex } from 'knex';
import { isPostgres } from '../knex-adapter.js';

const OPEN = "status in ('active', 'paused')";
const CLOSED = "status in ('completed', 'abandoned') and erased_at is null";

const INDEXES = [
  { name: 'conversations_due_idx', sql: `on conversations (inactive_bucket) where ${OPEN}` },
  { name: 'conversations_retention_idx', sql: `on conversations (completed_at) where ${CLOSED}` },
];

/** Whether `name` is a valid index on conversations (PostgreSQL): one built beforehand is kept. */
async function validIndex(knex: Knex, name: string): Promise<boolean> {
  const r = await knex.raw<{ rows: { valid: boolean }[] }>(
    `select x.indisvalid as valid from pg_index x where x.indexrelid = to_regclass(?) and x.indrelid = 'conversations'::regclass`,
    [name],
  );
  return r.rows.at(0)?.valid === true;
}

export async function up(knex: Knex): Promise<void> {
  // A constant default costs PostgreSQL no rewrite of the table.
  await knex.schema.alterTable('conversations', (t) => t.string('inactive_bucket', 15).nullable().defaultTo(''));
  // Open conversations are filed now, before the index exists (so on PostgreSQL each row's new
  // version can be a HOT one); closed ones are outside the index and keep the default.
  await knex.raw(`update conversations set inactive_bucket = substr(inactive_after, 1, 15) where ${OPEN}`);
  // Closed conversations always got completed_at with their status; any that did not are given their last change.
  await knex.raw(`update conversations set completed_at = updated_at where ${CLOSED} and completed_at is null`);
  for (const index of INDEXES) {
    if (isPostgres(knex)) {
      if (await validIndex(knex, index.name)) continue;
      // What is left of a concurrent build that failed.
      await knex.raw(`drop index if exists ${index.name}`);
    }
    await knex.raw(`create index ${index.name} ${index.sql}`);
  }
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_inactive_idx');
    t.dropIndex([], 'conversations_closed_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => t.index(['inactive_after'], 'conversations_inactive_idx'));
  await knex.raw(`create index conversations_closed_idx on conversations (updated_at) where ${CLOSED}`);
  for (const index of INDEXES) await knex.raw(`drop index if exists ${index.name}`);
  await knex.schema.alterTable('conversations', (t) => t.dropColumn('inactive_bucket'));
}
