// Agents' release records (migration 019): each agent's steps form a hash chain of their own,
// hashed as a conversation's audit entries are (lib/audit-chain.ts, with the agent's id where a
// conversation's would be, and the operator's AUDIT_CHAIN_KEY when set); the agent row holds the
// chain's length and head. A step is appended in the transaction that changes the agent, with
// its row locked, so that concurrent releases on any replica chain one after the other.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ReleaseGate } from '@switchboard/contract';
import { dataHash, entryHash, verifyChain, type ChainReport } from '../lib/audit-chain.js';
import type { Database } from './db.js';
import type { AgentTableRow } from './rows.js';

export type ReleaseAction = 'activate' | 'rollback' | 'promote' | 'split_start' | 'split_change' | 'split_end';

/** What a step records besides its place in the chain. */
export interface ReleaseStep {
  action: ReleaseAction;
  version: number;
  digest: string;
  previousVersion: number | null;
  /** The split in force after the step (share in hundredths of a percent). */
  split: { version: number; share: number } | null;
  gates: ReleaseGate[];
  evaluationId: string | null;
  forced: boolean;
  reason: string | null;
  keyId: string | null;
  requestId: string;
  createdAt: string;
}

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
    previous_version: s.previousVersion,
    split: s.split && { version: s.split.version, percent: s.split.share / 100 },
    gates: s.gates,
    evaluation_id: s.evaluationId,
    forced: s.forced,
    reason: s.reason,
    key_id: s.keyId,
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
    previous_version: number | null;
    split: { version: number; percent: number } | null;
    gates: ReleaseGate[];
    evaluation_id: string | null;
    forced: boolean;
    reason: string | null;
    key_id: string | null;
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
    previousVersion: d.previous_version,
    split: d.split && { version: d.split.version, share: Math.round(d.split.percent * 100) },
    gates: d.gates,
    evaluationId: d.evaluation_id,
    forced: d.forced,
    reason: d.reason,
    keyId: d.key_id,
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
  return { ...step, id, sequence, hash };
}

export class ReleaseStore {
  private readonly knex: Knex;

  constructor(
    db: Database,
    private readonly chainKey?: Buffer,
  ) {
    this.knex = db.knex;
  }

  /** An agent's steps, newest first, before `before` (a sequence) when given. */
  async list(tenantId: string, agentId: string, page: { limit: number; before: number | null }): Promise<ReleaseRow[]> {
    const q = this.knex('release_records').where({ tenant_id: tenantId, agent_id: agentId });
    if (page.before !== null) q.where('sequence', '<', page.before);
    const rows = (await q.orderBy('sequence', 'desc').limit(page.limit)) as StoredRelease[];
    return rows.map(toRow);
  }

  /** Whether `version` was made current by a step of the record (released before). */
  async wasReleased(tenantId: string, agentId: string, version: number): Promise<boolean> {
    const r: { id: string } | undefined = await this.knex('release_records')
      .where({ tenant_id: tenantId, agent_id: agentId, version })
      .whereIn('action', ['activate', 'rollback', 'promote'])
      .first('id');
    return r !== undefined;
  }

  /** Recomputes the chain of an agent's record against the head its row holds. */
  async verify(tenantId: string, agentId: string): Promise<ChainReport> {
    const head = await this.knex('agents').where({ tenant_id: tenantId, id: agentId }).first('release_hash');
    const rows = (await this.knex('release_records').where({ tenant_id: tenantId, agent_id: agentId }).orderBy('sequence', 'asc')) as StoredRelease[];
    return verifyChain(
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
      head?.release_hash ?? null,
      undefined,
      this.chainKey,
    );
  }
}
