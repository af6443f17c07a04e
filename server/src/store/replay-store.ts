// Replays: one row each, its results as JSON, updated as it runs. Every read filters by tenant.
import type { Knex } from 'knex';
import type { Database } from './db.js';
import { newestFirst, runningJobs } from './keyset.js';

export interface ReplayRow {
  id: string;
  tenantId: string;
  agentId: string;
  version: number;
  status: 'running' | 'done' | 'failed';
  done: number;
  total: number;
  results: unknown[];
  error: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
}

interface ReplayTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  version: number | string;
  status: string;
  done: number | string;
  total: number | string;
  results: string;
  error: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

const toRow = (r: ReplayTableRow): ReplayRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  agentId: r.agent_id,
  version: Number(r.version),
  status: r.status as ReplayRow['status'],
  done: Number(r.done),
  total: Number(r.total),
  results: JSON.parse(r.results) as unknown[],
  error: r.error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
});

export class ReplayStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  async insert(r: Omit<ReplayRow, 'results' | 'error'>): Promise<void> {
    await this.knex<ReplayTableRow>('replays').insert({
      id: r.id,
      tenant_id: r.tenantId,
      agent_id: r.agentId,
      version: r.version,
      status: r.status,
      done: r.done,
      total: r.total,
      results: '[]',
      error: null,
      created_at: r.createdAt,
      updated_at: r.updatedAt,
      expires_at: r.expiresAt,
    });
  }

  async get(tenantId: string, agentId: string, id: string): Promise<ReplayRow | null> {
    const r = await this.knex<ReplayTableRow>('replays').where({ tenant_id: tenantId, agent_id: agentId, id }).first();
    return r ? toRow(r) : null;
  }

  async progress(id: string, u: { done: number; results: unknown[]; now: string; status?: ReplayRow['status']; error?: string }): Promise<void> {
    await this.knex<ReplayTableRow>('replays')
      .where({ id })
      .update({
        done: u.done,
        results: JSON.stringify(u.results),
        updated_at: u.now,
        ...(u.status ? { status: u.status } : {}),
        ...(u.error !== undefined ? { error: u.error } : {}),
      });
  }

  /** An agent's replays not yet expired, newest first, after a (created_at, id) position. */
  async list(tenantId: string, agentId: string, q: { limit: number; after: [string, string] | null; now: string }): Promise<ReplayRow[]> {
    const query = this.knex<ReplayTableRow>('replays').where({ tenant_id: tenantId, agent_id: agentId }).where('expires_at', '>=', q.now);
    return (await newestFirst(query, 'created_at', q.after, q.limit)).map(toRow);
  }

  /** Replays of the tenant still running (updated since `since`). */
  running(tenantId: string, since: string): Promise<number> {
    return runningJobs(this.knex, 'replays', tenantId, since);
  }

  async deleteExpired(now: string): Promise<number> {
    return this.knex<ReplayTableRow>('replays').where('expires_at', '<', now).delete();
  }
}
