// Evaluations of drafts (table evaluations, migrations 018 and 019): one running per tenant,
// found again by the digests of what they measured, kept thirty days (or as long as a release
// step cites one).
import type { Knex } from 'knex';
import type { Database } from './db.js';
import { newestFirst, runningJobs } from './keyset.js';

export interface EvaluationRow {
  id: string;
  tenantId: string;
  agentId: string;
  version: number;
  baseline: number;
  status: 'running' | 'done' | 'failed';
  stage: string;
  done: number;
  total: number;
  result: unknown;
  error: string | null;
  replayId: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  /** What it measured: the two versions' digests and the digest of its inputs (tests, reviewed messages, replay size, folds). */
  digests: EvaluationDigests | null;
}

export interface EvaluationDigests {
  digest: string;
  baseline: string;
  inputs: string;
}

interface EvaluationTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  version: number | string;
  baseline: number | string;
  status: string;
  stage: string;
  done: number | string;
  total: number | string;
  result: string | null;
  error: string | null;
  replay_id: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
  digest: string | null;
  baseline_digest: string | null;
  inputs_digest: string | null;
}

const toEvaluation = (r: EvaluationTableRow): EvaluationRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  agentId: r.agent_id,
  version: Number(r.version),
  baseline: Number(r.baseline),
  status: r.status as EvaluationRow['status'],
  stage: r.stage,
  done: Number(r.done),
  total: Number(r.total),
  result: r.result ? (JSON.parse(r.result) as unknown) : null,
  error: r.error,
  replayId: r.replay_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
  digests: r.digest && r.baseline_digest && r.inputs_digest ? { digest: r.digest, baseline: r.baseline_digest, inputs: r.inputs_digest } : null,
});

export class EvaluationStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];

  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
  }

  /**
   * Stores a running evaluation unless one of the tenant is running already (updated since
   * `since`): the check and the insert hold the tenant's lock, so of concurrent starts on any
   * replica one stores and the others answer false.
   */
  async startEvaluation(r: Omit<EvaluationRow, 'result' | 'error'>, since: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, `evaluations:${r.tenantId}`);
      if ((await runningJobs(trx, 'evaluations', r.tenantId, since)) >= 1) return false;
      await this.insertEvaluation(r, trx);
      return true;
    });
  }

  private async insertEvaluation(r: Omit<EvaluationRow, 'result' | 'error'>, trx: Knex.Transaction): Promise<void> {
    await trx<EvaluationTableRow>('evaluations').insert({
      id: r.id,
      tenant_id: r.tenantId,
      agent_id: r.agentId,
      version: r.version,
      baseline: r.baseline,
      status: r.status,
      stage: r.stage,
      done: r.done,
      total: r.total,
      result: null,
      error: null,
      replay_id: r.replayId,
      created_by: r.createdBy,
      created_at: r.createdAt,
      updated_at: r.updatedAt,
      expires_at: r.expiresAt,
      digest: r.digests?.digest ?? null,
      baseline_digest: r.digests?.baseline ?? null,
      inputs_digest: r.digests?.inputs ?? null,
    });
  }

  /** The newest evaluation of the same versions and inputs created since `since`, done or running (evaluations_digest_idx). */
  async sameEvaluation(tenantId: string, agentId: string, d: EvaluationDigests, since: string): Promise<EvaluationRow | null> {
    const r = await this.knex<EvaluationTableRow>('evaluations')
      .where({ tenant_id: tenantId, agent_id: agentId, digest: d.digest, baseline_digest: d.baseline })
      .where('created_at', '>=', since)
      .where({ inputs_digest: d.inputs })
      .whereIn('status', ['done', 'running'])
      .orderBy('created_at', 'desc')
      .first();
    return r ? toEvaluation(r) : null;
  }

  async evaluation(tenantId: string, agentId: string, id: string): Promise<EvaluationRow | null> {
    const r = await this.knex<EvaluationTableRow>('evaluations').where({ tenant_id: tenantId, agent_id: agentId, id }).first();
    return r ? toEvaluation(r) : null;
  }

  async evaluationProgress(
    id: string,
    u: { stage: string; done: number; total: number; now: string; status?: EvaluationRow['status']; result?: unknown; error?: string },
  ): Promise<void> {
    await this.knex<EvaluationTableRow>('evaluations')
      .where({ id })
      .update({
        stage: u.stage,
        done: u.done,
        total: u.total,
        updated_at: u.now,
        ...(u.status ? { status: u.status } : {}),
        ...(u.result !== undefined ? { result: JSON.stringify(u.result) } : {}),
        ...(u.error !== undefined ? { error: u.error } : {}),
      });
  }

  /** An agent's evaluations not yet expired, newest first, after a (created_at, id) position. */
  async evaluations(tenantId: string, agentId: string, q: { limit: number; after: [string, string] | null; now: string }): Promise<EvaluationRow[]> {
    const query = this.knex<EvaluationTableRow>('evaluations').where({ tenant_id: tenantId, agent_id: agentId }).where('expires_at', '>=', q.now);
    return (await newestFirst(query, 'created_at', q.after, q.limit)).map(toEvaluation);
  }

  async setEvaluationReplay(id: string, replayId: string): Promise<void> {
    await this.knex<EvaluationTableRow>('evaluations').where({ id }).update({ replay_id: replayId });
  }

  async deleteEvaluation(tenantId: string, id: string): Promise<void> {
    await this.knex<EvaluationTableRow>('evaluations').where({ tenant_id: tenantId, id }).delete();
  }

  /** Evaluations of the tenant still running (updated since `since`). */
  runningEvaluations(tenantId: string, since: string): Promise<number> {
    return runningJobs(this.knex, 'evaluations', tenantId, since);
  }

  async deleteExpiredEvaluations(now: string): Promise<number> {
    return this.knex<EvaluationTableRow>('evaluations').where('expires_at', '<', now).delete();
  }
}
