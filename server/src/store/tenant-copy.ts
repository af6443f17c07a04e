// A tenant's configuration copied from one database to another (SQLite to PostgreSQL, one
// PostgreSQL to another): its agents with every version, the release record, the evaluations the
// record cites, test suites, API and publishable keys, secrets and channels. Rows move as they are,
// ids included, so that keys, webhook URLs (a channel's id is its path) and the release chain (its
// hashes cover the agent's id) hold on the other side. Conversations, their audit and the review
// inbox stay where they are (docs/deployment.md says why and what must be re-pointed).
import type { Database } from './db.js';

/** The tables that hold a tenant's configuration, each before those that refer to it. */
export const TENANT_TABLES = [
  'agents',
  'agent_versions',
  'release_records',
  'evaluations',
  'agent_test_suites',
  'api_keys',
  'people',
  'tenant_secrets',
  'tenant_privacy',
  'channels',
  'knowledge_sources',
  'knowledge_passages',
  'knowledge_pages',
  'knowledge_snapshots',
] as const;
type TenantTable = (typeof TENANT_TABLES)[number];

/** The target already holds rows of the tenant: a copy would mix two configurations. */
class TenantNotEmptyError extends Error {
  constructor(
    readonly tenant: string,
    readonly found: Partial<Record<TenantTable, number>>,
  ) {
    const what = Object.entries(found)
      .map(([t, n]) => `${n} ${t}`)
      .join(', ');
    super(`the target database already holds tenant "${tenant}" (${what}): copy into a tenant it does not have`);
  }
}

type Row = Record<string, unknown>;

/**
 * A value read from one driver as the other takes it: better-sqlite3 binds no booleans, dates or
 * objects (PostgreSQL's driver may return all three), and answers booleans as 0 and 1, which
 * PostgreSQL reads back as booleans for a boolean column.
 */
function portable(value: unknown, to: Database['dialect']): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return to === 'sqlite' ? (value ? 1 : 0) : value;
  if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) return JSON.stringify(value);
  return value;
}

const rowsOf = (db: Database, table: TenantTable, tenant: string) => {
  const q = db.knex(table).where({ tenant_id: tenant });
  // An evaluation still running belongs to the source's job runner; finished ones are the evidence.
  if (table === 'evaluations') q.whereNot({ status: 'running' });
  return q.select() as Promise<Row[]>;
};

/**
 * Copies `tenant`'s configuration from `from` to `to` in one transaction on `to` (all of it or
 * nothing), refusing when `to` already holds any of it. `progress` hears each table as it lands.
 */
export async function copyTenant(
  from: Database,
  to: Database,
  tenant: string,
  progress: (table: TenantTable, rows: number) => void = () => undefined,
): Promise<Record<TenantTable, number>> {
  const found: Partial<Record<TenantTable, number>> = {};
  for (const table of TENANT_TABLES) {
    const r = (await to.knex(table).where({ tenant_id: tenant }).count({ n: '*' }).first()) as { n: number | string } | undefined;
    if (Number(r?.n ?? 0) > 0) found[table] = Number(r?.n);
  }
  if (Object.keys(found).length) throw new TenantNotEmptyError(tenant, found);
  const copied = Object.fromEntries(TENANT_TABLES.map((t) => [t, 0])) as Record<TenantTable, number>;
  await to.knex.transaction(async (trx) => {
    for (const table of TENANT_TABLES) {
      const rows = (await rowsOf(from, table, tenant)).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, portable(v, to.dialect)])));
      // Fifty rows a statement: well under SQLite's bound-variable limit for the widest table.
      for (let i = 0; i < rows.length; i += 50) await trx(table).insert(rows.slice(i, i + 50));
      copied[table] = rows.length;
      progress(table, rows.length);
    }
  });
  return copied;
}
