// The append-only history on PostgreSQL is partitioned by month (migration 022): turns, audit
// entries, event rows, webhook deliveries and their attempts, each by the time its row was
// written. A month's rows lie together, so the recent months' indexes are what stays in memory,
// and the history horizon (HISTORY_RETENTION_DAYS) drops a month as one table instead of deleting
// its rows one by one. Each table has three kinds of partition:
// - `<table>_legacy`: everything before the conversion (FROM MINVALUE), converted in place;
// - `<table>_pYYYY_MM`: one month each, made ahead of time by the sweeper (ensurePartitions);
// - `<table>_default`: a row whose month has no partition (a clock far ahead, a sweeper stopped
//   for months) still lands somewhere; ensurePartitions moves such rows into their month's
//   partition when it makes it.
// Keys are the ISO-8601 text timestamps the rows already carry (toISOString: one fixed format, so
// their text order is their time order in every collation), and so are the bounds.
// On SQLite the same horizon deletes old rows in batches, in the order they were written.
import type { Knex } from 'knex';
import { isPostgres } from './knex-adapter.js';

/** Each partitioned table and the column its rows are partitioned by. */
export const PARTITIONED = [
  { table: 'turns', key: 'timestamp' },
  { table: 'audit_entries', key: 'timestamp' },
  { table: 'conversation_events', key: 'created_at' },
  { table: 'webhook_deliveries', key: 'created_at' },
  { table: 'webhook_attempts', key: 'at' },
] as const;

export type PartitionedTable = (typeof PARTITIONED)[number]['table'];

/** Months made ahead of the current one, so a write never waits for a partition to be made. */
export const MONTHS_AHEAD = 2;

/**
 * Maintenance waits at most this long for a table's lock; a busy table is tried again next sweep.
 * Short, since the turns' writes to that table queue behind a lock request that waits.
 */
const LOCK_TIMEOUT = '1s';

/** Serialises maintenance across processes (any constant; pg_advisory_xact_lock's key space). */
const MAINTENANCE_LOCK = 0x5b_0022n;

/** Where ensurePartitions(now) leaves every table's months ending: MONTHS_AHEAD after `now`'s. */
export function partitionedUntil(now: number): string {
  return monthStart(now, MONTHS_AHEAD + 1);
}

/** The first instant of the month `ms` falls in, plus `add` months, as a partition bound. */
export function monthStart(ms: number, add = 0): string {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + add, 1)).toISOString();
}

/**
 * The lower bound for reading a conversation created at `createdAt`: the start of the month a day
 * before it. Every row of the conversation is written after it was created; the day allows for
 * replicas' clocks that disagree, and the month start is all that partition pruning needs.
 */
function historySince(createdAt: string): string {
  return monthStart(Date.parse(createdAt) - 86_400_000);
}

/**
 * A query of `table` for rows of conversations created at `createdAt` or later (the earliest of a
 * batch): on PostgreSQL bounded below by historySince, so that the months before are skipped.
 * Without `createdAt`, or on SQLite, every row.
 */
export function conversationHistory<T extends PartitionedTable>(knex: Knex, table: T, createdAt: string | undefined) {
  const q = knex(table);
  return createdAt && isPostgres(knex) ? q.where(keyOf(table), '>=', historySince(createdAt)) : q;
}

/** The column `table` is partitioned by. */
export function keyOf(table: PartitionedTable): string {
  return PARTITIONED.find((p) => p.table === table)!.key;
}

/** `turns_p2026_12` for the month starting at `from`. */
export function partitionName(table: string, from: string): string {
  return `${table}_p${from.slice(0, 4)}_${from.slice(5, 7)}`;
}

export interface Partition {
  name: string;
  /** Lower bound (null: MINVALUE, or the default partition). */
  from: string | null;
  /** Upper bound, exclusive (null: the default partition). */
  to: string | null;
  isDefault: boolean;
}

/** A table's partitions, from the catalog, in bound order (the default partition last). */
export async function listPartitions(knex: Knex | Knex.Transaction, table: string): Promise<Partition[]> {
  const rows = (
    await knex.raw<{ rows: { name: string; bound: string }[] }>(
      `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
         from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = to_regclass(?)`,
      [table],
    )
  ).rows;
  const out = rows.map((r): Partition => {
    if (r.bound === 'DEFAULT') return { name: r.name, from: null, to: null, isDefault: true };
    const m = /FROM \((MINVALUE|'([^']*)')\) TO \('([^']*)'\)/.exec(r.bound);
    if (!m) throw new Error(`unexpected partition bound of ${r.name}: ${r.bound}`);
    const lower = m[2] as string | undefined; // undefined for MINVALUE
    return { name: r.name, from: lower ?? null, to: m[3], isDefault: false };
  });
  return out.sort((a, b) => (a.isDefault ? 1 : b.isDefault ? -1 : (a.to ?? '') < (b.to ?? '') ? -1 : 1));
}

/**
 * Makes `table`'s monthly partitions up to `until` (exclusive), each following the last one made.
 * A month some rows of the default partition belong to is made as a table of its own, those rows
 * are moved into it, and it is attached: one transaction, so no row is ever in neither.
 * Returns the partitions made.
 */
async function extend(trx: Knex.Transaction, table: string, key: string, until: string): Promise<string[]> {
  const parts = await listPartitions(trx, table);
  const ranges = parts.filter((p) => !p.isDefault);
  const def = parts.find((p) => p.isDefault);
  let from = ranges.length ? ranges[ranges.length - 1].to! : monthStart(Date.now());
  const made: string[] = [];
  // A clock far ahead makes a year of months at most per sweep.
  while (from < until && made.length < 12) {
    const to = monthStart(Date.parse(from), 1);
    const name = partitionName(table, from);
    const stray = def ? await trx.raw<{ rows: unknown[] }>(`select 1 from ${def.name} where "${key}" >= ? and "${key}" < ? limit 1`, [from, to]) : null;
    if (stray && stray.rows.length) {
      await trx.raw(`create table ${name} (like ${table} including defaults)`);
      await trx.raw(`with moved as (delete from ${def!.name} where "${key}" >= ? and "${key}" < ? returning *) insert into ${name} select * from moved`, [
        from,
        to,
      ]);
      await trx.raw(`alter table ${table} attach partition ${name} for values from ('${from}') to ('${to}')`);
    } else {
      await trx.raw(`create table ${name} partition of ${table} for values from ('${from}') to ('${to}')`);
    }
    made.push(name);
    from = to;
  }
  return made;
}

/**
 * PostgreSQL: makes every partitioned table's partitions through `MONTHS_AHEAD` months after the
 * one `now` falls in. One process at a time; each table waits at most LOCK_TIMEOUT for its lock
 * and is otherwise left for the next sweep. Returns the partitions made.
 */
export async function ensurePartitions(knex: Knex, now: number): Promise<string[]> {
  if (!isPostgres(knex)) return [];
  const until = partitionedUntil(now);
  const made: string[] = [];
  await eachTable(async (table, key) => {
    made.push(
      ...(await knex.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(?)', [MAINTENANCE_LOCK.toString()]);
        await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
        return extend(trx, table, key, until);
      })),
    );
  });
  return made;
}

/**
 * Runs `fn` for each partitioned table; one that fails (a lock not had within LOCK_TIMEOUT, a
 * partition someone made by hand with a bound of another shape) does not keep the others from
 * their upkeep, and the failures are thrown together after.
 */
async function eachTable(fn: (table: string, key: string) => Promise<void>): Promise<void> {
  const failed: unknown[] = [];
  for (const { table, key } of PARTITIONED) await fn(table, key).catch((err: unknown) => failed.push(err));
  if (failed.length) throw new AggregateError(failed, `the history's upkeep failed on ${failed.length} of ${PARTITIONED.length} tables`);
}

export interface HistoryDropped {
  /** Partitions dropped whole (PostgreSQL). */
  partitions: string[];
  /** Rows deleted one by one: SQLite's, and PostgreSQL's default partition's. */
  rows: number;
}

/**
 * Deletes the history written before `before` from every partitioned table: on PostgreSQL each
 * partition that ends at or before it is dropped, and old rows of the default partition are
 * deleted; on SQLite up to `limit` rows of each table are deleted, oldest written first. Where
 * something was removed the horizon is recorded (history_horizons), so that an audit chain it cut
 * verifies from its first kept entry.
 */
export async function dropHistoryBefore(knex: Knex, before: string, limit: number): Promise<HistoryDropped> {
  const out: HistoryDropped = { partitions: [], rows: 0 };
  await eachTable(async (table, key) => {
    const removed = await knex.transaction(async (trx) => {
      const r = isPostgres(knex)
        ? await detachMonths(trx, table, key, before, limit)
        : { detached: [], rows: await deleteOldest(trx, table, key, before, limit) };
      // Recorded only where something went: a sweep that removes nothing writes nothing.
      if (r.rows || r.detached.length) await recordHorizon(trx, table, before);
      return r;
    });
    out.rows += removed.rows;
    // Dropped after the detach commits: the parent's lock, which every write to the table waits
    // behind, is held for the catalog's change only, not for the files' removal.
    for (const name of removed.detached) {
      await knex.raw(`drop table if exists ${name}`);
      out.partitions.push(name);
    }
  });
  return out;
}

/**
 * PostgreSQL: detaches `table`'s months that end at or before `before` (and finds those a pass
 * that died left detached), and deletes up to `limit` old rows of its default partition.
 */
async function detachMonths(trx: Knex.Transaction, table: string, key: string, before: string, limit: number): Promise<{ detached: string[]; rows: number }> {
  await trx.raw('select pg_advisory_xact_lock(?)', [MAINTENANCE_LOCK.toString()]);
  await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
  const detached = await leftovers(trx, table);
  let rows = 0;
  for (const p of await listPartitions(trx, table)) {
    if (p.isDefault) {
      rows += await trx(p.name).whereRaw(`ctid in (select ctid from ${p.name} where "${key}" < ? limit ?)`, [before, limit]).del();
    } else if (p.to! <= before) {
      await trx.raw(`alter table ${table} detach partition ${p.name}`);
      detached.push(p.name);
    }
  }
  return { detached, rows };
}

/**
 * SQLite: deletes up to `limit` of `table`'s rows written before `before`. Rows are in rowid order,
 * which is the order they were written: the batch is taken from the oldest end, below the first
 * row at or after the horizon, which the scan finds after reading only the rows it deletes. A row
 * written out of order (a clock behind) waits until the rows before it are gone.
 */
async function deleteOldest(trx: Knex.Transaction, table: string, key: string, before: string, limit: number): Promise<number> {
  const batch = [
    `rowid in (select rowid from ${table} where rowid < coalesce((select rowid from ${table} where "${key}" >= ? order by rowid limit 1), 9223372036854775807)
       and "${key}" < ? order by rowid limit ?)`,
    [before, before, limit],
  ] as const;
  let rows = 0;
  // SQLite keeps the attempts' foreign key: a delivery's attempts go with it, later ones too.
  if (table === 'webhook_deliveries') {
    rows += await trx('webhook_attempts')
      .whereIn(
        'delivery_id',
        trx('webhook_deliveries')
          .whereRaw(...batch)
          .select('id'),
      )
      .del();
  }
  return (
    rows +
    (await trx(table)
      .whereRaw(...batch)
      .del())
  );
}

/** `table`'s months detached by a pass that ended before dropping them. */
async function leftovers(trx: Knex.Transaction, table: string): Promise<string[]> {
  const r = await trx.raw<{ rows: { name: string }[] }>(
    `select c.relname as name from pg_class c
      where c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace and not c.relispartition
        and (c.relname ~ ('^' || ? || '_p[0-9]{4}_[0-9]{2}$') or c.relname = ? || '_legacy')`,
    [table, table],
  );
  return r.rows.map((x) => x.name);
}

async function recordHorizon(trx: Knex.Transaction, table: string, before: string): Promise<void> {
  await trx('history_horizons')
    .insert({ table_name: table, before })
    .onConflict('table_name')
    .merge({ before: trx.raw('case when history_horizons.before < excluded.before then excluded.before else history_horizons.before end') });
}

/** The horizon before which `table`'s history was dropped, if any. */
export async function historyHorizon(knex: Knex, table: PartitionedTable): Promise<string | null> {
  const row = await knex<{ table_name: string; before: string }>('history_horizons').where('table_name', table).first('before');
  return row?.before ?? null;
}
