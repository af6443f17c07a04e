// Bulk seeding for the benchmarks: writes' rows (store/turn-rows.ts) inserted table by table in
// one transaction per batch, as prepared statements on SQLite and JSON recordsets on PostgreSQL.
import type { Database } from '../server/src/store/db.js';
import { withPooledConnection } from '../server/src/store/knex-adapter.js';
import { COLUMNS, type WriteRows } from '../server/src/store/writer/turn-rows.js';

export type Table = keyof typeof COLUMNS;
export type Tables = [Table, (w: WriteRows) => object[]][];

/** Inserts the `tables` rows of a batch of writes in one transaction. */
export async function insertBatch(db: Database, tables: Tables, writes: WriteRows[]): Promise<void> {
  if (db.dialect === 'sqlite') {
    interface Conn {
      prepare(sql: string): { run(p: object): unknown };
      transaction(fn: () => void): () => void;
    }
    await withPooledConnection(db.knex, (conn: Conn) => {
      const statements = tables.map(([table, rows]) => {
        const cols = COLUMNS[table];
        const stmt = conn.prepare(`insert into ${table} (${cols.join(', ')}) values (${cols.map((c) => `@${c}`).join(', ')})`);
        return { stmt, rows };
      });
      conn.transaction(() => {
        for (const w of writes) {
          for (const { stmt, rows } of statements) {
            for (const r of rows(w)) stmt.run(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'boolean' ? Number(v) : v])));
          }
        }
      })();
    });
    return;
  }
  await db.knex.transaction(async (trx) => {
    for (const [table, rows] of tables) {
      const cols = COLUMNS[table].join(', ');
      const all = writes.flatMap(rows);
      await trx.raw(`insert into ${table} (${cols}) select ${cols} from json_populate_recordset(null::${table}, ?::json)`, [JSON.stringify(all)]);
    }
  });
}
