// What differs between the two databases, in one place (in the spirit of Kysely's dialect
// adapters): stores ask the adapter instead of testing which database they run on.
import type { Knex } from 'knex';

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
}

export const sqliteDialect: DialectAdapter = {
  name: 'sqlite',
  shared: false,
  forUpdate: (q) => q,
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
    await knex.raw('pragma wal_checkpoint(TRUNCATE)');
  },
};

export const postgresDialect: DialectAdapter = {
  name: 'postgres',
  shared: true,
  forUpdate: (q) => q.forUpdate() as typeof q,
  // PostgreSQL overwrites nothing in place; VACUUM reclaims dead rows in their time.
  secureErase: (knex, fn) => knex.transaction(fn),
};
