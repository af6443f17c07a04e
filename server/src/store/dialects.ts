// What differs between the two databases, in one place (in the spirit of Kysely's dialect
// adapters): stores ask the adapter instead of testing which database they run on.
import type { Knex } from 'knex';
import { driverCode } from './db-errors.js';

export interface DialectAdapter {
  name: 'sqlite' | 'postgres';
  /**
   * Whether several server processes share the database: conversations are then leased on their
   * row across processes, and commits reach other processes through NOTIFY.
   */
  shared: boolean;
  /** A read that the same transaction will write after: locked on PostgreSQL; SQLite serialises writers anyway. */
  forUpdate<T extends Knex.QueryBuilder>(q: T): T;
  /** Runs `fn` in a transaction that overwrites the pages it frees, then leaves nothing of them in a write-ahead log. */
  secureErase(knex: Knex, fn: (trx: Knex.Transaction) => Promise<void>): Promise<void>;
  /**
   * A relation of `columns` read from one bound JSON array of objects (`?`), typed as `table`'s
   * columns: many rows' new values for one `update … from` statement.
   */
  jsonRows(table: string, columns: string[]): string;
  /** The rows a raw data-modifying statement changed, from the driver's result. */
  changedRows(result: unknown): number;
  /** SQL for the seconds between two columns holding ISO timestamps. */
  secondsBetween(from: string, to: string): string;
  /**
   * Holds `key` until the transaction ends, so that transactions taking the same key run one after
   * another (a check and the insert it allows): an advisory lock on PostgreSQL; SQLite's one
   * connection runs transactions one at a time anyway.
   */
  lockKey(trx: Knex.Transaction, key: string): Promise<void>;
}

/** Truncating checkpoints tried after an erasure while another checkpoint holds the WAL (10 ms apart). */
const ERASE_CHECKPOINT_ATTEMPTS = 200;

export const sqliteDialect: DialectAdapter = {
  name: 'sqlite',
  shared: false,
  forUpdate: (q) => q,
  lockKey: () => Promise.resolve(),
  async secureErase(knex, fn) {
    await knex.transaction(async (trx) => {
      await trx.raw('pragma secure_delete = ON');
      try {
        await fn(trx);
      } finally {
        await trx.raw('pragma secure_delete = OFF');
      }
    });
    // Erased text must not linger in the WAL: copy it into the (zeroed) database file and truncate.
    // A checkpoint under way on the checkpointer's connection makes this one answer busy and
    // leave the WAL as it is: try again until it truncates.
    for (let attempt = 1; ; attempt++) {
      const busy = await knex.raw('pragma wal_checkpoint(TRUNCATE)').then(
        (rows: { busy: number }[]) => rows[0]?.busy === 1,
        (err: unknown) => {
          if (driverCode(err) === 'SQLITE_BUSY') return true;
          throw err;
        },
      );
      if (!busy) break;
      if (attempt >= ERASE_CHECKPOINT_ATTEMPTS) throw new Error(`the WAL was still busy after ${attempt} checkpoints: erased text may remain in it`);
      await new Promise((r) => setTimeout(r, 10));
    }
  },
  jsonRows: (_table, columns) => `select ${columns.map((c) => `json_extract(value, '$.${c}') as ${c}`).join(', ')} from json_each(?)`,
  // better-sqlite3's run() result, as Knex passes it through for a raw statement.
  changedRows: (result) => (result as { changes?: number }).changes ?? 0,
  secondsBetween: (from, to) => `((julianday(${to}) - julianday(${from})) * 86400.0)`,
};

export const postgresDialect: DialectAdapter = {
  name: 'postgres',
  shared: true,
  forUpdate: (q) => q.forUpdate() as typeof q,
  async lockKey(trx, key) {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [key]);
  },
  // PostgreSQL overwrites nothing in place; VACUUM reclaims dead rows in their time.
  secureErase: (knex, fn) => knex.transaction(fn),
  jsonRows: (table, columns) => `select ${columns.join(', ')} from json_populate_recordset(null::${table}, ?::json)`,
  // pg's query result.
  changedRows: (result) => (result as { rowCount?: number | null }).rowCount ?? 0,
  secondsBetween: (from, to) => `extract(epoch from (${to}::timestamptz - ${from}::timestamptz))`,
};
