// Agents' release records (migration 019): each agent's steps form a hash chain of their own,
// hashed as a conversation's audit entries are (lib/audit-chain.ts, with the agent's id where a
// conversation's would be, and the operator's AUDIT_CHAIN_KEY when set); the agent row holds the
// chain's length and head. A step is appended in the transaction that changes the agent, with
// its row locked, so that concurrent releases on any replica chain one after the other.
// Everything the service decides by is in the hash or checked against it: a step's version
// column against its chained data, the agent's served version and split against the newest
// step, and the evaluation a step cites against the evidence chained with it (its digests and
// figures; the evaluation is kept as long as the step). A head exported from the log stream
// (service/releases.ts publishes each) proves that no step up to it was cut off.
import type { Actor } from '@switchboard/contract';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ReleaseGate } from '@switchboard/contract';
import { dataHash, entryHash, verifyChain, type BrokenReason, type ChainKeys, type ChainReport } from '../lib/audit-chain.js';
import { canonicalJson, sha256 } from '../lib/canonical.js';
import { readSeal } from './conversations/chain-seals.js';
import type { Database } from './db.js';
import type { AgentTableRow } from './rows.js';

export type ReleaseAction = 'activate' | 'rollback' | 'promote' | 'split_start' | 'split_change' | 'split_end';

/** The expiry of an evaluation a release step cites: never swept. */
const KEPT_WITH_RELEASE = '9999-12-31T23:59:59.999Z';

/** What a step records besides its place in the chain. */
export interface ReleaseStep {
  action: ReleaseAction;
  version: number;
  digest: string;
  /** The knowledge snapshot the version pins (null: it follows its sources live). */
  knowledge?: { snapshot: number; digest: string } | null;
  previousVersion: number | null;
  /** The split in force after the step (share in hundredths of a percent). */
  split: { version: number; share: number } | null;
  gates: ReleaseGate[];
  evaluationId: string | null;
  /** What the cited evaluation measured and found, chained with the step (evidenceOf). */
  evidence?: Evidence | null;
  forced: boolean;
  reason: string | null;
  keyId: string | null;
  /** Who did it (a person, a key, the gateway); absent from steps recorded before actors were. */
  actor?: Actor | null;
  requestId: string;
  createdAt: string;
}

/** The evidence a step cites: the evaluation's digests and a digest of its figures. */
export interface Evidence {
  digest: string;
  baseline_digest: string;
  inputs_digest: string;
  result_digest: string;
}

/**
 * An evaluation's evidence. Its figures are digested without the texts of messages (labelled
 * messages, confused examples), which erasure may replace; what each was routed to stays in.
 */
export function evidenceOf(e: { digests: { digest: string; baseline: string; inputs: string } | null; result: unknown }): Evidence | null {
  if (!e.digests || e.result === null || typeof e.result !== 'object') return null;
  const figures = JSON.parse(JSON.stringify(e.result), (key, value: unknown) => {
    if (key === 'message' && typeof value === 'string') return undefined;
    if (key === 'messages' && Array.isArray(value) && value.every((m) => typeof m === 'string')) return value.length;
    return value;
  }) as unknown;
  return {
    digest: e.digests.digest,
    baseline_digest: e.digests.baseline,
    inputs_digest: e.digests.inputs,
    result_digest: sha256(canonicalJson(figures)),
  };
}

/** A release record's verification: the chain's, then the columns, the agent's state, the evidence and an exported head. */
export type ReleaseReport = Omit<ChainReport, 'first_broken'> & {
  first_broken: { sequence: number; reason: BrokenReason | 'state_mismatch' | 'evidence_mismatch' | 'evidence_missing' | 'anchor_missing' } | null;
};

export interface ReleaseRow extends ReleaseStep {
  id: string;
  sequence: number;
  hash: string;
}

/** The chained data of a step, as stored (JSON text). */
function dataOf(s: ReleaseStep): string {
  return JSON.stringify({
    version: s.version,
    digest: s.digest,
    // Only when pinned: a step without knowledge is hashed as before migration 031.
    ...(s.knowledge ? { knowledge: s.knowledge } : {}),
    previous_version: s.previousVersion,
    split: s.split && { version: s.split.version, percent: s.split.share / 100 },
    gates: s.gates,
    evaluation_id: s.evaluationId,
    ...(s.evidence ? { evidence: s.evidence } : {}),
    forced: s.forced,
    reason: s.reason,
    key_id: s.keyId,
    // Only when known: a step without one is hashed as before actors were recorded.
    ...(s.actor ? { actor: s.actor } : {}),
  });
}

interface StoredRelease {
  id: string;
  agent_id: string;
  sequence: number | string;
  action: string;
  version: number | string;
  request_id: string;
  created_at: string;
  data: string;
  data_hash: string;
  hash: string;
}

function toRow(r: StoredRelease): ReleaseRow {
  const d = JSON.parse(r.data) as {
    digest: string;
    knowledge?: { snapshot: number; digest: string };
    previous_version: number | null;
    split: { version: number; percent: number } | null;
    gates: ReleaseGate[];
    evaluation_id: string | null;
    evidence?: Evidence;
    forced: boolean;
    reason: string | null;
    key_id: string | null;
    actor?: Actor;
  };
  return {
    id: r.id,
    sequence: Number(r.sequence),
    hash: r.hash,
    action: r.action as ReleaseAction,
    version: Number(r.version),
    requestId: r.request_id,
    createdAt: r.created_at,
    digest: d.digest,
    knowledge: d.knowledge ?? null,
    previousVersion: d.previous_version,
    split: d.split && { version: d.split.version, share: Math.round(d.split.percent * 100) },
    gates: d.gates,
    evaluationId: d.evaluation_id,
    evidence: d.evidence ?? null,
    forced: d.forced,
    reason: d.reason,
    keyId: d.key_id,
    actor: d.actor ?? null,
  };
}

/**
 * Appends a step to the chain of `agent` (its row read under lock in `trx`) and moves the row's
 * head; the caller's other changes to the row commit with it.
 */
export async function appendRelease(trx: Knex.Transaction, agent: AgentTableRow, step: ReleaseStep, chainKey?: Buffer): Promise<ReleaseRow> {
  const sequence = Number(agent.release_seq) + 1;
  const id = randomUUID();
  const data = dataOf(step);
  const dh = dataHash(data);
  const fields = {
    id,
    conversation_id: agent.id,
    sequence,
    turn_index: null,
    type: step.action,
    request_id: step.requestId,
    timestamp: step.createdAt,
    duration_ms: null,
  };
  const hash = entryHash(agent.release_hash, fields, dh, chainKey);
  await trx('release_records').insert({
    id,
    tenant_id: agent.tenant_id,
    agent_id: agent.id,
    sequence,
    action: step.action,
    version: step.version,
    request_id: step.requestId,
    created_at: step.createdAt,
    data,
    data_hash: dh,
    hash,
  });
  await trx('agents').where({ tenant_id: agent.tenant_id, id: agent.id }).update({ release_seq: sequence, release_hash: hash });
  // The evaluation a step cites is kept as long as the step (the retention sweep passes it by).
  if (step.evaluationId) await trx('evaluations').where({ tenant_id: agent.tenant_id, id: step.evaluationId }).update({ expires_at: KEPT_WITH_RELEASE });
  return { ...step, id, sequence, hash };
}

/** The agent's served version and split after a step: a split's steps leave the current version as it was. */
function stateAfter(r: ReleaseRow): { current: number; split: { version: number; share: number } | null } {
  const moves = r.action === 'activate' || r.action === 'rollback' || r.action === 'promote';
  return { current: moves ? r.version : (r.previousVersion ?? r.version), split: r.split };
}

export class ReleaseStore {
  private readonly knex: Knex;
  private readonly keys?: ChainKeys;

  constructor(db: Database, chainKey?: Buffer, previousKeys: readonly Buffer[] = []) {
    this.knex = db.knex;
    this.keys = chainKey ? { current: chainKey, previous: previousKeys } : undefined;
  }

  /** An agent's steps, newest first, before `before` (a sequence) when given. */
  async list(tenantId: string, agentId: string, page: { limit: number; before: number | null }): Promise<ReleaseRow[]> {
    const q = this.knex('release_records').where({ tenant_id: tenantId, agent_id: agentId });
    if (page.before !== null) q.where('sequence', '<', page.before);
    const rows = (await q.orderBy('sequence', 'desc').limit(page.limit)) as StoredRelease[];
    return rows.map(toRow);
  }

  /**
   * Whether `version` was made current by a step of the record (released before). Only a record
   * that verifies answers yes: a version column edited, or steps forged, never make a rollback.
   */
  async wasReleased(tenantId: string, agentId: string, version: number): Promise<boolean> {
    const r: { id: string } | undefined = await this.knex('release_records')
      .where({ tenant_id: tenantId, agent_id: agentId, version })
      .whereIn('action', ['activate', 'rollback', 'promote'])
      .first('id');
    return r !== undefined && (await this.verify(tenantId, agentId)).valid;
  }

  /**
   * Recomputes the chain of an agent's record against the head its row holds, then checks the
   * columns read to decide, the agent's state, the evidence cited and, when given, a head
   * exported earlier (`anchor`): the record must still hold that step with that hash.
   */
  async verify(tenantId: string, agentId: string, anchor?: { sequence: number; hash: string }): Promise<ReleaseReport> {
    const agent: Pick<AgentTableRow, 'release_hash' | 'current_version' | 'split_version' | 'split_share'> | undefined = await this.knex('agents')
      .where({ tenant_id: tenantId, id: agentId })
      .first('release_hash', 'current_version', 'split_version', 'split_share');
    const rows = (await this.knex('release_records').where({ tenant_id: tenantId, agent_id: agentId }).orderBy('sequence', 'asc')) as StoredRelease[];
    const chain = verifyChain(
      rows.map((r) => ({
        id: r.id,
        conversation_id: r.agent_id,
        sequence: Number(r.sequence),
        turn_index: null,
        type: r.action,
        request_id: r.request_id,
        timestamp: r.created_at,
        duration_ms: null,
        data: r.data,
        data_hash: r.data_hash,
        hash: r.hash,
        erased_at: null,
      })),
      agent?.release_hash ?? null,
      undefined,
      this.keys,
      false,
      this.keys ? { kind: 'release', chainId: agentId, seal: await readSeal(this.knex, 'release', agentId) } : undefined,
    );
    const broken = (sequence: number, reason: NonNullable<ReleaseReport['first_broken']>['reason']): ReleaseReport => ({
      ...chain,
      valid: false,
      first_broken: { sequence, reason },
    });
    // The version column is what the service queries; it must be the chained one.
    for (const r of rows) {
      const chained = (JSON.parse(r.data) as { version?: unknown }).version;
      if (Number(r.version) !== chained && (!chain.first_broken || Number(r.sequence) < chain.first_broken.sequence)) {
        return broken(Number(r.sequence), 'data_mismatch');
      }
    }
    if (!chain.valid && chain.first_broken?.reason !== 'not_keyed') return chain;
    const steps = rows.map(toRow);
    const newest = steps.at(-1);
    if (newest && agent) {
      const want = stateAfter(newest);
      const split = agent.split_version === null ? null : { version: Number(agent.split_version), share: Number(agent.split_share) };
      const same = Number(agent.current_version) === want.current && JSON.stringify(split) === JSON.stringify(want.split);
      if (!same) return broken(newest.sequence, 'state_mismatch');
    }
    const cited = steps.filter((s) => s.evidence && s.evaluationId);
    if (cited.length) {
      const found = await this.knex('evaluations')
        .where({ tenant_id: tenantId })
        .whereIn('id', [...new Set(cited.map((s) => s.evaluationId!))])
        .select('id', 'digest', 'baseline_digest', 'inputs_digest', 'result');
      const byId = new Map(
        found.map((e: { id: string; digest: string | null; baseline_digest: string | null; inputs_digest: string | null; result: string | null }) => [e.id, e]),
      );
      for (const s of cited) {
        const e = byId.get(s.evaluationId!);
        if (!e) return broken(s.sequence, 'evidence_missing');
        const now = evidenceOf({
          digests: e.digest && e.baseline_digest && e.inputs_digest ? { digest: e.digest, baseline: e.baseline_digest, inputs: e.inputs_digest } : null,
          result: e.result === null ? null : (JSON.parse(e.result) as unknown),
        });
        if (JSON.stringify(now) !== JSON.stringify(s.evidence)) return broken(s.sequence, 'evidence_mismatch');
      }
    }
    if (anchor) {
      const at = steps.find((s) => s.sequence === anchor.sequence);
      if (!at || at.hash !== anchor.hash) return broken(anchor.sequence, 'anchor_missing');
    }
    return chain;
  }
}
