// Evaluations of drafts (table evaluations, migrations 018 and 019): one running per tenant,
// found again by the digests of what they measured, kept thirty days (or as long as a release
// step cites one).
import type { Database } from '../db.js';
import { JobTable, type JobRow } from '../job-table.js';

export interface EvaluationRow extends JobRow {
  baseline: number;
  stage: string;
  result: unknown;
  replayId: string | null;
  createdBy: string | null;
  /** What it measured: the two versions' digests and the digest of its inputs (tests, reviewed messages, replay size, folds). */
  digests: EvaluationDigests | null;
}

export interface EvaluationDigests {
  digest: string;
  baseline: string;
  inputs: string;
}

export class EvaluationStore extends JobTable<EvaluationRow> {
  constructor(db: Database) {
    super(db, {
      table: 'evaluations',
      read: (r) => ({
        baseline: Number(r.baseline),
        stage: r.stage as string,
        result: r.result ? (JSON.parse(r.result as string) as unknown) : null,
        replayId: (r.replay_id as string | null) ?? null,
        createdBy: (r.created_by as string | null) ?? null,
        digests:
          r.digest && r.baseline_digest && r.inputs_digest
            ? { digest: r.digest as string, baseline: r.baseline_digest as string, inputs: r.inputs_digest as string }
            : null,
      }),
      write: (r) => ({
        baseline: r.baseline,
        stage: r.stage,
        result: r.result === null ? null : JSON.stringify(r.result),
        replay_id: r.replayId,
        created_by: r.createdBy,
        digest: r.digests?.digest ?? null,
        baseline_digest: r.digests?.baseline ?? null,
        inputs_digest: r.digests?.inputs ?? null,
      }),
    });
  }

  /** The newest evaluation of the same versions and inputs created since `since`, done or running (evaluations_digest_idx). */
  async sameEvaluation(tenantId: string, agentId: string, d: EvaluationDigests, since: string): Promise<EvaluationRow | null> {
    const r = (await this.knex('evaluations')
      .where({ tenant_id: tenantId, agent_id: agentId, digest: d.digest, baseline_digest: d.baseline })
      .where('created_at', '>=', since)
      .where({ inputs_digest: d.inputs })
      .whereIn('status', ['done', 'running'])
      .orderBy('created_at', 'desc')
      .first()) as Record<string, unknown> | undefined;
    return r ? this.toRow(r) : null;
  }

  async setReplay(id: string, replayId: string): Promise<void> {
    await this.knex('evaluations').where({ id }).update({ replay_id: replayId });
  }
}
