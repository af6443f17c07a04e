// Opens the database named by DATABASE_URL (SQLite file or PostgreSQL) and runs the migrations.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import knexFactory, { type Knex } from 'knex';
import * as m001 from './migrations/001_initial.js';
import * as m002 from './migrations/002_lifecycle.js';
import * as m003 from './migrations/003_audit_chain.js';
import * as m004 from './migrations/004_api_keys.js';
import * as m005 from './migrations/005_event_notify.js';
import * as m006 from './migrations/006_tenant_model.js';
import * as m007 from './migrations/007_scale_indexes.js';
import * as m008 from './migrations/008_llm_usage.js';
import * as m009 from './migrations/009_replays.js';
import * as m010 from './migrations/010_lease_index.js';
import * as m011 from './migrations/011_agent_stats.js';
import * as m012 from './migrations/012_idempotency_expiry.js';
import * as m013 from './migrations/013_stored_routers.js';
import * as m014 from './migrations/014_stored_router_model.js';
import * as m015 from './migrations/015_lighter_turn_indexes.js';
import * as m016 from './migrations/016_stored_router_definition.js';
import * as m017 from './migrations/017_widget.js';
import * as m018 from './migrations/018_review.js';
import * as m019 from './migrations/019_releases.js';
import * as m020 from './migrations/020_channels.js';
import * as m021 from './migrations/021_lighter_postgres_turns.js';
import * as m022 from './migrations/022_partitioned_history.js';
import * as m023 from './migrations/023_hot_turn_updates.js';
import * as m024 from './migrations/024_service_secrets.js';
import * as m025 from './migrations/025_chain_seals.js';
import * as m026 from './migrations/026_channel_ignored.js';
import * as m027 from './migrations/027_version_notes.js';
import * as m028 from './migrations/028_knowledge_sources.js';
import * as m029 from './migrations/029_turn_citations.js';
import * as m030 from './migrations/030_knowledge_web.js';
import * as m031 from './migrations/031_knowledge_snapshots.js';
import * as m032 from './migrations/032_knowledge_stats.js';
import * as m033 from './migrations/033_tenant_privacy.js';
import * as m034 from './migrations/034_key_roles.js';
import * as m035 from './migrations/035_people.js';
import { BACKSTOP_AUTOCHECKPOINT_PAGES, type Checkpointer, startCheckpointer } from './sqlite-checkpointer.js';
import { PgClient, SqliteClient } from './knex-adapter.js';
import { SqliteWriter } from './writer/sqlite-writer.js';
import { PostgresWriter } from './writer/postgres-writer.js';
import type { TurnWriter } from './writer/writer.js';
import { postgresDialect, sqliteDialect, type DialectAdapter } from './dialects.js';

type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  dialect: Dialect;
  /** Everything that differs between the two databases. */
  adapter: DialectAdapter;
  /** The converse path's reads and its write, as this database runs them fastest. */
  writer: TurnWriter;
  /** The URL it was opened with (maintenance work opens connections of its own). */
  url: string;
  /**
   * PostgreSQL: where the event log LISTENs, when not at `url`. Behind PgBouncer in transaction
   * mode a LISTEN needs a session of its own on the server itself (docs/scaling.md).
   */
  listenUrl?: string;
  /**
   * SQLite on a file: a read-only connection of its own, opened on first use, with a small page
   * cache, for large values read once (stored routers). Read through the main connection, thousands
   * of routers (gigabytes) passed through its page cache, evicting the conversations' pages and
   * holding the cache full of pages nobody reads again.
   */
  blobReader?: () => BetterSqlite3.Database;
  close(): Promise<void>;
}

/** Page cache of the blob reader: enough for the b-tree pages on the way to a value. */
const BLOB_READER_CACHE_KIB = 2048;

const migrations: Record<string, { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> }> = {
  '001_initial': m001,
  '002_lifecycle': m002,
  '003_audit_chain': m003,
  '004_api_keys': m004,
  '005_event_notify': m005,
  '006_tenant_model': m006,
  '007_scale_indexes': m007,
  '008_llm_usage': m008,
  '009_replays': m009,
  '010_lease_index': m010,
  '011_agent_stats': m011,
  '012_idempotency_expiry': m012,
  '013_stored_routers': m013,
  '014_stored_router_model': m014,
  '015_lighter_turn_indexes': m015,
  '016_stored_router_definition': m016,
  '017_widget': m017,
  '018_review': m018,
  '019_releases': m019,
  '020_channels': m020,
  '021_lighter_postgres_turns': m021,
  '022_partitioned_history': m022,
  '023_hot_turn_updates': m023,
  '024_service_secrets': m024,
  '025_chain_seals': m025,
  '026_channel_ignored': m026,
  '027_version_notes': m027,
  '028_knowledge_sources': m028,
  '029_turn_citations': m029,
  '030_knowledge_web': m030,
  '031_knowledge_snapshots': m031,
  '032_knowledge_stats': m032,
  '033_tenant_privacy': m033,
  '034_key_roles': m034,
  '035_people': m035,
};

/** Migrations are compiled in rather than read from a folder, so they run the same under tsx, tests and builds. */
const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: () => Promise.resolve(Object.keys(migrations).sort()),
  getMigrationName: (name) => name,
  getMigration: (name) => Promise.resolve(migrations[name]),
};

export function sqliteFileFromUrl(url: string): string | null {
  if (url === ':memory:' || url === 'sqlite::memory:') return ':memory:';
  if (url.startsWith('sqlite://')) return url.slice('sqlite://'.length);
  if (url.startsWith('sqlite:')) return url.slice('sqlite:'.length);
  if (url.startsWith('file:')) return url.slice('file:'.length);
  return null;
}

/** Where Knex's own warnings go (a structured logger in the server; the console otherwise). */
export interface DbLog {
  warn(obj: object, msg: string): void;
}

/** For the short-lived connections that probe and create: their errors are thrown to the caller, not printed. */
const QUIET = { warn: () => undefined, error: () => undefined, deprecate: () => undefined, debug: () => undefined };

function knexLog(log?: DbLog) {
  if (!log) return undefined;
  const say = (m: unknown) => log.warn({ source: 'knex' }, String(m instanceof Error ? m.message : m));
  return { warn: say, error: say, deprecate: say, debug: () => undefined };
}

interface PgClient {
  query(config: unknown, cb?: (err: Error | null, res: unknown) => void): unknown;
  connection?: { stream?: { destroy(): void } };
}

/**
 * A query that has not answered within the time-out fails (pg's query_timeout), but pg keeps the
 * connection waiting on it; against a database that stopped answering (no reset, no FIN) that
 * connection would hang for the kernel's TCP time-out. Its socket is destroyed instead, so Knex's
 * pool drops it and the next request gets a fresh connection, or a fast 503.
 */
function dropConnectionOnTimeout(conn: PgClient): void {
  const query = conn.query.bind(conn);
  conn.query = (config: unknown, cb?: (err: Error | null, res: unknown) => void) => {
    if (typeof cb !== 'function') return query(config, cb);
    return query(config, (err, res) => {
      if (err && /Query read timeout/.test(err.message)) conn.connection?.stream?.destroy();
      cb(err, res);
    });
  };
}

export function openDatabase(
  url: string,
  opts: {
    poolMax?: number;
    acquireTimeoutMs?: number;
    queryTimeoutMs?: number;
    log?: DbLog;
    /** PostgreSQL: a server to LISTEN on directly (a pooler in front of `url` cannot hold a LISTEN). */
    listenUrl?: string;
    /** PostgreSQL: the converse path's statements as named prepared statements (false behind a pooler that cannot keep them). */
    preparedStatements?: boolean;
    /** PostgreSQL: memory for the conversation rows this process wrote last, sparing the next call its read (kept-rows.ts; 0: none; 16 MiB unless said). */
    keptRowsMb?: number;
    /** PostgreSQL: turn writes of one turn of the event loop in shared statements (postgres-writer.ts; true unless said). */
    turnBatches?: boolean;
  } = {},
): Database {
  const file = sqliteFileFromUrl(url);
  if (file !== null) {
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    let checkpointer: Checkpointer | null = null;
    const knex = knexFactory({
      client: SqliteClient,
      connection: { filename: file },
      log: knexLog(opts.log),
      useNullAsDefault: true,
      // better-sqlite3 is synchronous: one connection serves every query without contention.
      pool: {
        min: 1,
        max: 1,
        afterCreate: (conn: { pragma(statement: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
          try {
            conn.pragma('journal_mode = WAL');
            conn.pragma('synchronous = NORMAL');
            conn.pragma('foreign_keys = ON');
            conn.pragma('busy_timeout = 5000');
            // 16 MiB of page cache: a converse call's pages (index roots, recent conversations) fit many
            // times over, and the operating system caches the file besides; 64 MiB measured no faster
            // (docs/performance.md) and held 48 MiB more.
            conn.pragma('cache_size = -16384');
            conn.pragma('temp_store = MEMORY');
            if (file !== ':memory:') {
              // Checkpoints run on a thread of their own (sqlite-checkpointer.ts); this is the backstop.
              conn.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
              checkpointer ??= startCheckpointer(file, (message) => (opts.log ?? console).warn({ source: 'sqlite-checkpointer' }, message));
            }
            done(null, conn);
          } catch (err) {
            done(err as Error, conn);
          }
        },
      },
    });
    let reader: BetterSqlite3.Database | null = null;
    const blobReader =
      file === ':memory:'
        ? undefined
        : () => {
            if (!reader) {
              reader = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
              reader.pragma('busy_timeout = 5000');
              reader.pragma(`cache_size = -${BLOB_READER_CACHE_KIB}`);
            }
            return reader;
          };
    const close = async () => {
      await knex.destroy();
      reader?.close();
      await checkpointer?.close();
    };
    return { knex, dialect: 'sqlite', adapter: sqliteDialect, writer: new SqliteWriter(knex), url, blobReader, close };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const queryTimeout = opts.queryTimeoutMs ?? 10_000;
    const knex = knexFactory({
      client: PgClient,
      connection: {
        connectionString: url,
        // Bounded everywhere a database that stops answering could hold a request: connecting,
        // each query on the client side, each statement on the server side, and idle sockets
        // (TCP keepalive notices a peer that vanished).
        connectionTimeoutMillis: opts.acquireTimeoutMs ?? 5_000,
        query_timeout: queryTimeout,
        statement_timeout: queryTimeout,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      } as Knex.PgConnectionConfig,
      log: knexLog(opts.log),
      pool: {
        min: 0,
        max: opts.poolMax ?? 10,
        afterCreate: (conn: PgClient, done: (err: Error | null, conn: unknown) => void) => {
          dropConnectionOnTimeout(conn);
          done(null, conn);
        },
      },
      acquireConnectionTimeout: opts.acquireTimeoutMs ?? 5_000,
    });
    return {
      knex,
      dialect: 'postgres',
      adapter: postgresDialect,
      writer: new PostgresWriter(knex, {
        prepared: opts.preparedStatements ?? true,
        keptBytes: (opts.keptRowsMb ?? 16) * 1024 * 1024,
        batches: opts.turnBatches ?? true,
      }),
      url,
      ...(opts.listenUrl && opts.listenUrl !== url ? { listenUrl: opts.listenUrl } : {}),
      close: () => knex.destroy(),
    };
  }
  throw new Error(`DATABASE_URL must start with sqlite:// or postgres:// (got "${url.split(':')[0]}:…")`);
}

/**
 * Creates the PostgreSQL database DATABASE_URL names when it does not exist and the role may
 * create databases; returns whether it did. Other failures are left to the caller.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  if (sqliteFileFromUrl(url) !== null) return false;
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name) return false;
  const probe = knexFactory({ client: 'pg', connection: { connectionString: url, connectionTimeoutMillis: 5000 }, pool: { min: 0, max: 1 }, log: QUIET });
  try {
    await probe.raw('select 1');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err;
  } finally {
    await probe.destroy();
  }
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = knexFactory({
    client: 'pg',
    connection: { connectionString: maintenance.toString(), connectionTimeoutMillis: 5000 },
    pool: { min: 0, max: 1 },
    log: QUIET,
  });
  try {
    await admin.raw('create database ??', [name]);
    return true;
  } catch (err) {
    // Created meanwhile by a process that started at the same time (replicas starting together):
    // PostgreSQL answers duplicate_database, or a unique violation on pg_database in the race.
    const code = (err as { code?: string }).code;
    if (code === '42P04' || code === '23505') return false;
    // No right to create it: report the database as missing.
    throw Object.assign(new Error(`database "${name}" does not exist`), { code: '3D000', cause: err });
  } finally {
    await admin.destroy();
  }
}

/** Any 64-bit number every Switchboard process agrees on: the advisory lock its migrations run under. */
const MIGRATION_LOCK = 0x5357_4244_4d49_47n; // "SWBDMIG"

/**
 * Runs the migrations not yet applied. On PostgreSQL, under an advisory lock held by a connection
 * of its own with no statement time-out: replicas that start together wait for the one that
 * migrates and then find nothing left to do (without it, two can race to create knex's own
 * tables and one crashes). Holding the lock, no other process can be migrating, so a knex
 * migration lock left behind by a process killed mid-migration is freed first.
 */
export async function migrate(db: Database): Promise<string[]> {
  const latest = async () => ((await db.knex.migrate.latest({ migrationSource })) as [number, string[]])[1];
  if (db.dialect !== 'postgres') return latest();
  const locker = knexFactory({ client: 'pg', connection: { connectionString: db.url, connectionTimeoutMillis: 10_000 }, pool: { min: 0, max: 1 } });
  try {
    return await locker.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK.toString()]);
      const tables = await db.knex.schema.hasTable('knex_migrations_lock');
      if (tables) await db.knex.migrate.forceFreeMigrationsLock({ migrationSource });
      return latest();
    });
  } finally {
    await locker.destroy();
  }
}

/** Runs the migrations up to and including `name` (a database as an older release left it). */
export async function migrateUpTo(db: Database, name: string): Promise<void> {
  for (;;) {
    const [, pending] = (await db.knex.migrate.list({ migrationSource })) as [unknown[], string[]];
    if (pending.length === 0 || migrationSource.getMigrationName(pending[0]) > name) return;
    await db.knex.migrate.up({ migrationSource });
  }
}

export async function rollbackAll(db: Database): Promise<void> {
  await db.knex.migrate.rollback({ migrationSource }, true);
}
