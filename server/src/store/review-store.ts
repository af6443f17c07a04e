// The review inbox's reads and its actions, stored agents' test conversations, and evaluations.
// Every query filters by tenant and agent and is bounded by an index of its table: the inbox
// pages review_groups by (agent, status[, reason], last seen) and reads the occurrences of one
// page's groups only (migration 018).
import type { Knex } from 'knex';
import type { Database } from './db.js';
import { newestFirst, runningJobs } from './keyset.js';

export interface ReviewGroupRow {
  id: string;
  reason: string;
  groupKey: string;
  count: number;
  firstSeenAt: string;
  lastSeenAt: string;
  status: string;
  action: Record<string, unknown> | null;
  actedBy: string | null;
  actedAt: string | null;
}

export interface ReviewOccurrenceRow {
  groupKey: string;
  actedGroup: string | null;
  conversationId: string;
  turnIndex: number;
  auditSequence: number | null;
  version: number;
  reason: string;
  message: string;
  capability: string;
  detail: Record<string, unknown>;
  createdAt: string;
}

interface GroupTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  reason: string;
  group_key: string;
  open_key: string | null;
  count: number | string;
  first_seen_at: string;
  last_seen_at: string;
  status: string;
  action: string | null;
  acted_by: string | null;
  acted_at: string | null;
}

interface OccurrenceTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  group_key: string;
  acted_group: string | null;
  conversation_id: string;
  turn_index: number | string;
  audit_sequence: number | string | null;
  agent_version: number | string;
  reason: string;
  message: string;
  capability: string;
  detail: string;
  created_at: string;
}

const toGroup = (r: GroupTableRow): ReviewGroupRow => ({
  id: r.id,
  reason: r.reason,
  groupKey: r.group_key,
  count: Number(r.count),
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  status: r.status,
  action: r.action ? (JSON.parse(r.action) as Record<string, unknown>) : null,
  actedBy: r.acted_by,
  actedAt: r.acted_at,
});

const toOccurrence = (r: OccurrenceTableRow): ReviewOccurrenceRow => ({
  groupKey: r.group_key,
  actedGroup: r.acted_group,
  conversationId: r.conversation_id,
  turnIndex: Number(r.turn_index),
  auditSequence: r.audit_sequence === null ? null : Number(r.audit_sequence),
  version: Number(r.agent_version),
  reason: r.reason,
  message: r.message,
  capability: r.capability,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
  createdAt: r.created_at,
});

export interface ReviewFilter {
  status: string;
  reason?: string;
  since?: string;
  until?: string;
}

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

export class ReviewStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];

  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
  }

  private groups(tenantId: string, agentId: string, f: ReviewFilter) {
    const q = this.knex<GroupTableRow>('review_groups').where({ tenant_id: tenantId, agent_id: agentId, status: f.status });
    if (f.reason) void q.where('reason', f.reason);
    if (f.since) void q.where('last_seen_at', '>=', f.since);
    if (f.until) void q.where('last_seen_at', '<', f.until);
    return q;
  }

  /** A page of groups, the most recently seen first, after a (last_seen_at, id) position. */
  async list(tenantId: string, agentId: string, f: ReviewFilter, page: { limit: number; after: [string, string] | null }): Promise<ReviewGroupRow[]> {
    return (await newestFirst(this.groups(tenantId, agentId, f), 'last_seen_at', page.after, page.limit)).map(toGroup);
  }

  /** Groups and messages by reason, under the status and time filters. */
  async counts(tenantId: string, agentId: string, f: Omit<ReviewFilter, 'reason'>): Promise<{ reason: string; items: number; messages: number }[]> {
    const rows: { reason: string; items: number | string; messages: number | string | null }[] = await this.groups(tenantId, agentId, f)
      .select('reason')
      .count({ items: '*' })
      .sum({ messages: 'count' })
      .groupBy('reason');
    return rows.map((r) => ({ reason: r.reason, items: Number(r.items), messages: Number(r.messages ?? 0) }));
  }

  /** The newest `per` occurrences of each of these groups (open groups: by key; acted ones: by id). */
  async occurrences(tenantId: string, agentId: string, groups: ReviewGroupRow[], per: number): Promise<Map<string, ReviewOccurrenceRow[]>> {
    const out = new Map<string, ReviewOccurrenceRow[]>();
    if (groups.length === 0) return out;
    const open = groups.filter((g) => g.status === 'open').map((g) => g.groupKey);
    const acted = groups.filter((g) => g.status !== 'open').map((g) => g.id);
    const ranked = this.knex('review_occurrences')
      .select('*', this.knex.raw('row_number() over (partition by group_key, acted_group order by created_at desc, id desc) as rank'))
      .where({ tenant_id: tenantId, agent_id: agentId })
      .where((w) => {
        if (open.length) void w.orWhere((x) => x.whereIn('group_key', open).whereNull('acted_group'));
        if (acted.length) void w.orWhereIn('acted_group', acted);
      });
    const rows = (await this.knex.select('*').from(ranked.as('r')).where('rank', '<=', per)) as OccurrenceTableRow[];
    const byKey = new Map(groups.map((g) => [g.status === 'open' ? `k:${g.groupKey}` : `g:${g.id}`, g.id]));
    for (const r of rows) {
      const id = byKey.get(r.acted_group ? `g:${r.acted_group}` : `k:${r.group_key}`);
      if (!id) continue;
      const list = out.get(id) ?? [];
      list.push(toOccurrence(r));
      out.set(id, list);
    }
    for (const list of out.values()) list.sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    return out;
  }

  /** Findings the caps left out (agent_closes' `capped_*` rows, written with the turns), in the hours from `since` to `until`. */
  async capped(tenantId: string, agentId: string, w: { since: string; until?: string }): Promise<{ capped_conv: number; capped_hour: number }> {
    const q = this.knex('agent_closes')
      .where({ tenant_id: tenantId, agent_id: agentId })
      .whereIn('measure', ['capped_conv', 'capped_hour'])
      .where('hour', '>=', w.since.slice(0, 13));
    if (w.until) q.where('hour', '<=', w.until.slice(0, 13));
    const rows: { measure: string; n: unknown }[] = await q.select('measure', this.knex.raw('sum(n) as n')).groupBy('measure');
    const out = { capped_conv: 0, capped_hour: 0 };
    for (const r of rows) out[r.measure as keyof typeof out] = Number(r.n);
    return out;
  }

  async groupsById(tenantId: string, agentId: string, ids: string[]): Promise<ReviewGroupRow[]> {
    return (await this.knex<GroupTableRow>('review_groups').where({ tenant_id: tenantId, agent_id: agentId }).whereIn('id', ids)).map(toGroup);
  }

  /**
   * Closes open groups with the action taken: each leaves the inbox (its open key is cleared) and
   * its open occurrences are tied to it. Answers how many were still open; a group acted on
   * meanwhile by another request is not counted, and the caller's transaction is rolled back.
   */
  async act(
    trx: Knex.Transaction,
    tenantId: string,
    agentId: string,
    acted: { id: string; groupKey: string; status: string; action: Record<string, unknown> }[],
    by: { keyId: string | null; at: string },
  ): Promise<number> {
    let n = 0;
    for (const a of acted) {
      const changed = await trx('review_groups')
        .where({ tenant_id: tenantId, agent_id: agentId, id: a.id, status: 'open' })
        .update({ status: a.status, open_key: null, action: JSON.stringify(a.action), acted_by: by.keyId, acted_at: by.at });
      if (changed !== 1) continue;
      n++;
      await trx('review_occurrences')
        .where({ tenant_id: tenantId, agent_id: agentId, group_key: a.groupKey })
        .whereNull('acted_group')
        .update({ acted_group: a.id });
    }
    return n;
  }

  transaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.knex.transaction(work);
  }

  /**
   * The labelled set of an agent's reviews: the messages of groups added as examples or out of
   * scope, with the capability the reviewer chose (null: out of scope), newest first.
   */
  async labelled(tenantId: string, agentId: string, limit: number): Promise<{ message: string; capability: string | null }[]> {
    const rows: { status: string; action: string }[] = await this.knex<GroupTableRow>('review_groups')
      .where({ tenant_id: tenantId, agent_id: agentId })
      .whereIn('status', ['added', 'out_of_scope'])
      .orderBy([
        { column: 'acted_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit)
      .select('status', 'action');
    // An erased example (docs/lifecycle.md) is no longer there to label.
    return rows.flatMap((r) => {
      const a = JSON.parse(r.action) as { example?: string; capability?: string };
      return typeof a.example === 'string' ? [{ message: a.example, capability: r.status === 'added' ? (a.capability ?? null) : null }] : [];
    });
  }

  async testSuite(tenantId: string, agentId: string): Promise<{ tests: unknown[]; updatedAt: string } | null> {
    const r = (await this.knex('agent_test_suites').where({ tenant_id: tenantId, agent_id: agentId }).first()) as
      { tests: string; updated_at: string } | undefined;
    return r ? { tests: JSON.parse(r.tests) as unknown[], updatedAt: r.updated_at } : null;
  }

  async putTestSuite(tenantId: string, agentId: string, tests: unknown[], now: string): Promise<void> {
    await this.knex('agent_test_suites')
      .insert({ tenant_id: tenantId, agent_id: agentId, tests: JSON.stringify(tests), updated_at: now })
      .onConflict(['tenant_id', 'agent_id'])
      .merge(['tests', 'updated_at']);
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
