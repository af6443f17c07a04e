// The table of a background job kind (replays, evaluations; service/jobs/job-runner.ts runs
// them): one row a job, its progress and result updated as it runs, kept until it expires.
// Every read filters by tenant.
import type { Knex } from 'knex';
import type { Database } from './db.js';
import { newestFirst } from './keyset.js';

/** What every job's row has. */
export interface JobRow {
  id: string;
  tenantId: string;
  agentId: string;
  version: number;
  status: 'running' | 'done' | 'failed';
  done: number;
  total: number;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
}

/** A progress write: the common fields, and the kind's own columns as stored. */
export interface JobProgress {
  done: number;
  total?: number;
  now: string;
  status?: JobRow['status'];
  error?: string;
  columns?: Record<string, unknown>;
}

/** How a kind's rows are stored beyond the common columns. */
export interface JobTableSpec<Row extends JobRow> {
  table: string;
  /** The kind's own fields from a stored row. */
  read(r: Record<string, unknown>): Omit<Row, keyof JobRow>;
  /** The kind's own columns of a new row. */
  write(r: Row): Record<string, unknown>;
}

export class JobTable<Row extends JobRow> {
  protected readonly knex: Knex;
  private readonly adapter: Database['adapter'];

  constructor(
    db: Database,
    private readonly spec: JobTableSpec<Row>,
  ) {
    this.knex = db.knex;
    this.adapter = db.adapter;
  }

  protected toRow(r: Record<string, unknown>): Row {
    return {
      id: r.id as string,
      tenantId: r.tenant_id as string,
      agentId: r.agent_id as string,
      version: Number(r.version),
      status: r.status as JobRow['status'],
      done: Number(r.done),
      total: Number(r.total),
      error: (r.error as string | null) ?? null,
      createdAt: r.created_at as string,
      updatedAt: r.updated_at as string,
      expiresAt: r.expires_at as string,
      ...this.spec.read(r),
    } as Row;
  }

  /**
   * Stores a running job unless `maxRunning` of the tenant run already (rows updated since
   * `since`): the check and the insert hold the tenant's lock for the kind, so of concurrent
   * starts on any replica only as many as have room store, and the others answer false.
   */
  async start(row: Row, o: { maxRunning: number; since: string }): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, `${this.spec.table}:${row.tenantId}`);
      if ((await this.runningIn(trx, row.tenantId, o.since)) >= o.maxRunning) return false;
      await trx(this.spec.table).insert({
        id: row.id,
        tenant_id: row.tenantId,
        agent_id: row.agentId,
        version: row.version,
        status: row.status,
        done: row.done,
        total: row.total,
        error: row.error,
        created_at: row.createdAt,
        updated_at: row.updatedAt,
        expires_at: row.expiresAt,
        ...this.spec.write(row),
      });
      return true;
    });
  }

  async get(tenantId: string, agentId: string, id: string): Promise<Row | null> {
    const r = (await this.knex(this.spec.table).where({ tenant_id: tenantId, agent_id: agentId, id }).first()) as Record<string, unknown> | undefined;
    return r ? this.toRow(r) : null;
  }

  async progress(id: string, u: JobProgress): Promise<void> {
    await this.knex(this.spec.table)
      .where({ id })
      .update({
        done: u.done,
        ...(u.total !== undefined ? { total: u.total } : {}),
        updated_at: u.now,
        ...(u.status ? { status: u.status } : {}),
        ...(u.error !== undefined ? { error: u.error } : {}),
        ...u.columns,
      });
  }

  /** An agent's jobs not yet expired, newest first, after a (created_at, id) position. */
  async list(tenantId: string, agentId: string, q: { limit: number; after: [string, string] | null; now: string }): Promise<Row[]> {
    const query = this.knex(this.spec.table).where({ tenant_id: tenantId, agent_id: agentId }).where('expires_at', '>=', q.now);
    return ((await newestFirst(query, 'created_at', q.after, q.limit)) as Record<string, unknown>[]).map((r) => this.toRow(r));
  }

  /** Jobs of the tenant still running: their row moved since `since`. */
  running(tenantId: string, since: string): Promise<number> {
    return this.runningIn(this.knex, tenantId, since);
  }

  private async runningIn(knex: Knex, tenantId: string, since: string): Promise<number> {
    const r: { n?: number | string } | undefined = await knex(this.spec.table)
      .where({ tenant_id: tenantId, status: 'running' })
      .where('updated_at', '>=', since)
      .count({ n: '*' })
      .first();
    return Number(r?.n ?? 0);
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.knex(this.spec.table).where({ tenant_id: tenantId, id }).delete();
  }

  async deleteExpired(now: string): Promise<number> {
    return this.knex(this.spec.table).where('expires_at', '<', now).delete();
  }
}
