// The append-only history partitioned by month on PostgreSQL (store/partitions.ts): turns, audit
// entries, event rows, webhook deliveries and attempts. The conversion is in place: each table is
// renamed `<table>_legacy` and attached, rows untouched, as the partition of everything up to the
// end of the month of its newest row (or of this month); the months after it get partitions of
// their own, and a default partition takes a row no month covers. What a large table costs is one
// unique index built over it (a partitioned table's unique keys must hold its partition key) and
// two reads (its newest row; the attach's check of the bound), not a copy.
// - Unique keys gain the time column: (conversation_id, idx, timestamp) for turns, and alike. They
//   still keep a conversation's rows apart, since the write that adds them is conditioned on the
//   conversation's own row (postgres-writer.ts).
// - The event rows' id (never read) loses its index, and webhook_attempts its foreign key, which a
//   partitioned key cannot be referenced by.
// - On a large database the unique indexes can be built beforehand, without blocking writes
//   (docs/deployment.md, "Rolling onto migration 022"); the migration then uses them.
// - history_horizons records, on both databases, how far the history horizon has dropped rows.
import type { Knex } from 'knex';
import { isPostgres } from '../knex-adapter.js';
import { MONTHS_AHEAD, monthStart, partitionName } from '../partitions.js';

interface Conversion {
  table: string;
  key: string;
  /** Unique constraints, by name, with their columns before (the partition key is added). */
  unique: { name: string; kind: 'primary key' | 'unique'; columns: string[] }[];
  /** Constraints of the plain table the partitioned one does without. */
  dropped?: string[];
  /** Plain indexes, recreated on the partitioned table under their own names. */
  indexes?: { name: string; columns: string[] }[];
  /** Its `id` is a bigserial, whose sequence must go with the partitioned table. */
  serial?: boolean;
}

const CONVERSIONS: Conversion[] = [
  { table: 'turns', key: 'timestamp', unique: [{ name: 'turns_pkey', kind: 'primary key', columns: ['conversation_id', 'idx'] }] },
  { table: 'audit_entries', key: 'timestamp', unique: [{ name: 'audit_entries_pkey', kind: 'primary key', columns: ['conversation_id', 'sequence'] }] },
  {
    table: 'conversation_events',
    key: 'created_at',
    unique: [{ name: 'conversation_events_seq_idx', kind: 'unique', columns: ['conversation_id', 'seq'] }],
    dropped: ['conversation_events_pkey'],
    serial: true,
  },
  {
    table: 'webhook_deliveries',
    key: 'created_at',
    unique: [{ name: 'webhook_deliveries_pkey', kind: 'primary key', columns: ['id'] }],
    indexes: [
      { name: 'webhook_deliveries_list_idx', columns: ['tenant_id', 'agent_id', 'created_at'] },
      { name: 'webhook_deliveries_order_idx', columns: ['conversation_id', 'url', 'seq'] },
      { name: 'webhook_deliveries_due_idx', columns: ['status', 'next_attempt_at'] },
    ],
  },
  { table: 'webhook_attempts', key: 'at', unique: [{ name: 'webhook_attempts_pkey', kind: 'primary key', columns: ['delivery_id', 'attempt'] }] },
];

async function serialSequence(knex: Knex, table: string): Promise<string | null> {
  return (await knex.raw<{ rows: { s: string | null }[] }>(`select pg_get_serial_sequence(?, 'id') as s`, [table])).rows[0].s;
}

/**
 * Whether `index` is a valid unique index of `table` on exactly `columns`: one an operator built
 * beforehand (`create unique index concurrently <key>_by_month …`, docs/deployment.md), which the
 * migration then takes as the key instead of building it while holding the table's lock.
 */
async function isUniqueIndexOn(knex: Knex, index: string, table: string, columns: string[]): Promise<boolean> {
  const r = await knex.raw<{ rows: { def: string }[] }>(
    `select pg_get_indexdef(x.indexrelid) as def from pg_index x
      where x.indexrelid = to_regclass(?) and x.indrelid = to_regclass(?) and x.indisunique and x.indisvalid and x.indpred is null`,
    [index, table],
  );
  return r.rows.length === 1 && r.rows[0].def.replaceAll('"', '').endsWith(`USING btree (${columns.join(', ')})`);
}

const q = (c: string) => `"${c}"`;
const list = (cs: string[]) => cs.map(q).join(', ');

async function partition(knex: Knex, c: Conversion): Promise<void> {
  const { table, key } = c;
  const legacy = `${table}_legacy`;
  const newest = (await knex.raw<{ rows: { m: string | null }[] }>(`select max(${q(key)}) as m from ${table}`)).rows[0].m;
  const now = Date.now();
  const bound = monthStart(Math.max(now, newest ? Date.parse(newest) : now), 1);
  const sequence = c.serial ? await serialSequence(knex, table) : null;

  await knex.raw(`alter table ${table} rename to ${legacy}`);
  for (const name of c.dropped ?? []) await knex.raw(`alter table ${legacy} drop constraint ${name}`);
  // The legacy table's keys become those of the partitioned table (with the key), under
  // names of its own; its plain indexes are renamed and matched by definition when attached.
  for (const u of c.unique) {
    await knex.raw(`alter table ${legacy} drop constraint ${u.name}`);
    const columns = [...u.columns, key];
    const constraint = `${legacy}_${u.name.slice(table.length + 1)}`;
    const prebuilt = `${u.name}_by_month`;
    if (await isUniqueIndexOn(knex, prebuilt, legacy, columns))
      await knex.raw(`alter table ${legacy} add constraint ${constraint} ${u.kind} using index ${prebuilt}`);
    else await knex.raw(`alter table ${legacy} add constraint ${constraint} ${u.kind} (${list(columns)})`);
  }
  for (const i of c.indexes ?? []) await knex.raw(`alter index ${i.name} rename to ${legacy}_${i.name.slice(table.length + 1)}`);

  await knex.raw(`create table ${table} (like ${legacy} including defaults including constraints) partition by range (${q(key)})`);
  for (const u of c.unique) await knex.raw(`alter table ${table} add constraint ${u.name} ${u.kind} (${list([...u.columns, key])})`);
  for (const i of c.indexes ?? []) await knex.raw(`create index ${i.name} on ${table} (${list(i.columns)})`);
  if (sequence) await knex.raw(`alter sequence ${sequence} owned by ${table}.id`);

  await knex.raw(`alter table ${table} attach partition ${legacy} for values from (minvalue) to ('${bound}')`);
  for (let m = 0; m < MONTHS_AHEAD; m++) {
    const from = monthStart(Date.parse(bound), m);
    await knex.raw(`create table ${partitionName(table, from)} partition of ${table} for values from ('${from}') to ('${monthStart(Date.parse(from), 1)}')`);
  }
  await knex.raw(`create table ${table}_default partition of ${table} default`);
}

/** Back to one plain table: the rows are copied (a down migration is for development). */
async function unpartition(knex: Knex, c: Conversion): Promise<void> {
  const { table } = c;
  const sequence = c.serial ? await serialSequence(knex, table) : null;
  await knex.raw(`create table ${table}_plain (like ${table} including defaults including constraints)`);
  await knex.raw(`insert into ${table}_plain select * from ${table}`);
  if (sequence) await knex.raw(`alter sequence ${sequence} owned by ${table}_plain.id`);
  await knex.raw(`drop table ${table}`);
  await knex.raw(`alter table ${table}_plain rename to ${table}`);
  if (c.dropped?.includes('conversation_events_pkey')) await knex.raw(`alter table ${table} add constraint conversation_events_pkey primary key (id)`);
  for (const u of c.unique) await knex.raw(`alter table ${table} add constraint ${u.name} ${u.kind} (${list(u.columns)})`);
  for (const i of c.indexes ?? []) await knex.raw(`create index ${i.name} on ${table} (${list(i.columns)})`);
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('history_horizons', (t) => {
    t.string('table_name', 64).primary();
    t.string('before', 30).notNullable();
  });
  if (!isPostgres(knex)) return;
  await knex.raw('alter table webhook_attempts drop constraint if exists webhook_attempts_delivery_id_foreign');
  for (const c of CONVERSIONS) await partition(knex, c);
}

export async function down(knex: Knex): Promise<void> {
  if (isPostgres(knex)) {
    for (const c of CONVERSIONS) await unpartition(knex, c);
    await knex.raw(
      'alter table webhook_attempts add constraint webhook_attempts_delivery_id_foreign foreign key (delivery_id) references webhook_deliveries (id)',
    );
  }
  await knex.schema.dropTable('history_horizons');
}
