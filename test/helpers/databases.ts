// The databases every store and HTTP suite runs on: SQLite always; PostgreSQL when
// TEST_DATABASE_URL is set (mandatory when REQUIRE_POSTGRES=1, as in CI). Each suite gets a
// database of its own, so suites run in parallel without seeing each other's rows.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { describe } from 'vitest';
import { ensureDatabase, migrate, migrateUpTo, openDatabase, type Database } from '../../server/src/store/db.js';

export const PG_URL = process.env.TEST_DATABASE_URL;
const PG_REQUIRED = process.env.REQUIRE_POSTGRES === '1' || process.env.REQUIRE_POSTGRES === 'true';

if (PG_REQUIRED && !PG_URL) throw new Error('REQUIRE_POSTGRES is set but TEST_DATABASE_URL is not');

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  /**
   * A fresh, migrated database; `url` lets a second app share it. `migratedTo`: only up to that
   * migration, as an older release left it.
   */
  create(opts?: { migratedTo?: string }): Promise<{ db: Database; url: string; drop(): Promise<void> }>;
}

const sqlite: TestDatabase = {
  name: 'sqlite',
  async create(opts) {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-test-'));
    const url = `sqlite://${join(dir, 'test.db')}`;
    const db = openDatabase(url);
    await (opts?.migratedTo ? migrateUpTo(db, opts.migratedTo) : migrate(db));
    return {
      db,
      url,
      drop: async () => {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/** TEST_DATABASE_URL's own database, created once per test file when it does not exist yet. */
let ensured: Promise<boolean> | null = null;

const postgres: TestDatabase = {
  name: 'postgres',
  async create(opts) {
    await (ensured ??= ensureDatabase(PG_URL!));
    const admin = knexFactory({ client: 'pg', connection: PG_URL!, pool: { min: 0, max: 1 } });
    const name = `sb_test_${randomBytes(6).toString('hex')}`;
    await admin.raw(`create database ${name}`);
    const u = new URL(PG_URL!);
    u.pathname = `/${name}`;
    const url = u.toString();
    const db = openDatabase(url, { poolMax: 20 });
    await (opts?.migratedTo ? migrateUpTo(db, opts.migratedTo) : migrate(db));
    return {
      db,
      url,
      drop: async () => {
        await db.close();
        await admin.raw(`drop database if exists ${name} with (force)`);
        await admin.destroy();
      },
    };
  },
};

/** The databases to run on here; PostgreSQL is listed only when configured. */
export const databases: TestDatabase[] = PG_URL ? [sqlite, postgres] : [sqlite];

let warned = false;
export function warnIfPostgresSkipped(): void {
  if (!PG_URL && !warned) {
    warned = true;
    console.warn('PostgreSQL suites SKIPPED: set TEST_DATABASE_URL=postgres://… to run them (CI always does).');
  }
}

/**
 * A suite on every database: `title` with `$name` replaced by the database's name. Without
 * TEST_DATABASE_URL the PostgreSQL variant is registered as skipped, its title saying why, so it
 * counts among the run's skipped tests instead of vanishing.
 */
export function eachDatabase(title: string, suite: (database: TestDatabase) => void): void {
  for (const database of [sqlite, postgres]) {
    const available = database === sqlite || PG_URL !== undefined;
    const name = title.replace('$name', database.name);
    if (available) describe(name, () => suite(database));
    else describe.skip(`${name} (SKIPPED: set TEST_DATABASE_URL=postgres://… to run it; CI always does)`, () => suite(database));
  }
}
