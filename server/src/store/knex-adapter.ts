// Every use of Knex internals, in one place: the dialects' clients with their errors translated,
// a raw PostgreSQL connection outside the pool (for LISTEN), a pooled connection held for
// synchronous prepared statements (the SQLite hot path), and which client a migration runs on.
// Knex documents none of these as public API (a client class as `client` it does).
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { translateDbError } from './db-errors.js';

type ClientClass = typeof Knex.Client;
const require = createRequire(import.meta.url);

/**
 * A dialect's client whose queries and connection acquisitions fail with translated errors
 * (db-errors.ts). Transactions' clients are made from its prototype, so their queries are too.
 */
function translating(base: ClientClass): ClientClass {
  return class extends base {
    override query(connection: unknown, obj: unknown): Promise<unknown> {
      return (super.query(connection, obj) as Promise<unknown>).catch((err: unknown) => {
        throw translateDbError(err);
      });
    }
    override acquireConnection(): Promise<unknown> {
      return (super.acquireConnection() as Promise<unknown>).catch((err: unknown) => {
        throw translateDbError(err);
      });
    }
  };
}

/** Knex's PostgreSQL and better-sqlite3 clients, translating their errors. */
export const PgClient = translating(require('knex/lib/dialects/postgres/index.js') as ClientClass);
export const SqliteClient = translating(require('knex/lib/dialects/better-sqlite3/index.js') as ClientClass);

/** A pg client as Knex's raw connection hands it out. */
export interface RawPgConnection {
  on(event: 'notification', fn: (msg: { channel?: string; payload?: string }) => void): void;
  on(event: 'error', fn: (err: Error) => void): void;
  query(sql: string): Promise<unknown>;
}

export function rawConnection(knex: Knex): { acquire(): Promise<RawPgConnection>; destroy(c: RawPgConnection): Promise<void> } {
  const client = knex.client as { acquireRawConnection(): Promise<RawPgConnection>; destroyRawConnection(c: RawPgConnection): Promise<void> };
  return { acquire: () => client.acquireRawConnection(), destroy: (c) => client.destroyRawConnection(c) };
}

/** Runs `fn` with a connection from Knex's pool, released afterwards. */
export async function withPooledConnection<T>(knex: Knex, fn: (conn: never) => T | Promise<T>): Promise<T> {
  // The driver's own connection object: the caller's parameter type says which driver it expects.
  const client = knex.client as { acquireConnection(): Promise<never>; releaseConnection(c: unknown): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    return await fn(conn);
  } catch (err) {
    // A pg connection the error ended (the server's FATAL, such as a terminated backend, or its
    // socket gone) is marked as Knex marks it on the client's 'end' event, which can come after
    // the query's error: the pool then drops it instead of lending it to the next caller.
    const pg = conn as { _ending?: boolean; _queryable?: boolean; __knex__disposed?: unknown };
    if ((err as { severity?: unknown }).severity === 'FATAL' || pg._ending === true || pg._queryable === false) pg.__knex__disposed ??= err;
    throw translateDbError(err);
  } finally {
    await client.releaseConnection(conn);
  }
}

/** Whether a migration runs on PostgreSQL. */
export const isPostgres = (knex: Knex) => (knex.client as { dialect?: string }).dialect === 'postgresql';
