// Releases (docs/releases.md): a version is made current, or given a share of new conversations,
// only through the release gates of the current version's policy, judged on an evaluation of the
// candidate beside it (service/evaluations.ts, reused per digest); every step is written to the
// agent's release record (store/release-store.ts) in the transaction that makes it. The policy
// cannot fall away: a step that makes current a version whose policy is weaker than the one in
// force (a rollback to a version from before it included) fails a gate of its own, `policy`, and
// goes only when forced with a reason, recorded as forced.
// Each step's new head is published to the log stream (`release.head`, signed with the audit
// chain key when one is set): a copy outside the database that `verify` can be given back, so a
// record cut short and its head moved back is found (docs/security.md).
import type { Actor as ContractActor } from '@switchboard/contract';
import type { Agent, AgentDefinition, DefinitionWarning, EvaluationResult, Release, ReleaseGate, ReleasePolicy, Split } from '@switchboard/contract';
import { ConflictError, CurrentChangedError, GatesFailedError, InputError, NotFoundError } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import { iso, type Clock } from '../../lib/clock.js';
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { AgentRow, StepInput } from '../../store/agents/agent-store.js';
import { evidenceOf, type Evidence, type ReleaseRow, type ReleaseStore } from '../../store/release-store.js';
import type { AgentService } from '../agents/agent-service.js';
import type { EvaluationService } from '../evaluations/evaluations.js';
import { judgeGates, policyGate, policyWeakenings, replayNeeded } from './gates/index.js';

/** Who releases (a person, a key, the gateway; null for the service's own files) and the request. */
export interface Actor {
  by: ContractActor | null;
  requestId: string;
}

/** Cross-validation folds of a gate's evaluation. */
const GATE_FOLDS = 5;

function releaseToApi(r: ReleaseRow): Release {
  return {
    id: r.id,
    sequence: r.sequence,
    action: r.action,
    version: r.version,
    digest: r.digest,
    knowledge: r.knowledge ?? null,
    previous_version: r.previousVersion,
    split: r.split && { version: r.split.version, percent: r.split.share / 100 },
    gates: r.gates,
    evaluation_id: r.evaluationId,
    forced: r.forced,
    reason: r.reason,
    key_id: r.keyId,
    actor: r.actor ?? null,
    request_id: r.requestId,
    created_at: r.createdAt,
    hash: r.hash,
  };
}

export class ReleaseService {
  constructor(
    private readonly deps: {
      agents: AgentService;
      evaluations: EvaluationService;
      store: ReleaseStore;
      clock: Clock;
      log?: Logger;
      /** AUDIT_CHAIN_KEY: signs the heads published to the log stream. */
      chainKey?: Buffer;
    },
  ) {}

  /**
   * Publishes a step's new head to the log stream: `{ tenant, agent, agent_id, sequence, hash }`,
   * with `signature` = HMAC-SHA-256 under the audit chain key of `release-head\n` + JSON of
   * [tenant, agent_id, sequence, hash] when a key is set, so a forged line in the logs is told apart.
   */
  private published<T extends { release: Release }>(tenantId: string, slug: string, agentId: string, r: T): T {
    const { sequence, hash } = r.release;
    const signature = this.deps.chainKey
      ? createHmac('sha256', this.deps.chainKey)
          .update(`release-head\n${JSON.stringify([tenantId, agentId, sequence, hash])}`)
          .digest('hex')
      : null;
    this.deps.log?.info(
      { event: 'release.head', tenant: tenantId, agent: slug, agent_id: agentId, sequence, hash, head: `${sequence}:${hash}`, signature },
      `release record of ${slug}: step ${sequence}`,
    );
    return r;
  }

  /**
   * Stores a definition (PUT /agents/:slug). A new version that would be made current under a
   * release policy is stored as a draft and released through the gates: refused, it stays a draft.
   */
  async put(
    tenantId: string,
    slug: string,
    definition: AgentDefinition,
    /** `note`: what made the definition, kept beside a new version. */
    opts: { activate: boolean; forceReason?: string; note?: string },
    actor: Actor,
  ): Promise<{ agent: Agent; changed: boolean; version: number; warnings: DefinitionWarning[]; release: Release | null }> {
    const { agents } = this.deps;
    for (let attempt = 1; ; attempt++) {
      const inForce = opts.activate ? await this.policyOf(tenantId, slug) : null;
      if (!inForce?.policy) {
        // Ungated: made current only if the version read above is still current when the row is
        // locked; a release that made a policy's version current meanwhile sends this PUT through the gates.
        try {
          const r = await agents.put(tenantId, slug, definition, {
            activate: opts.activate,
            step: this.step(actor),
            ...(opts.note ? { note: opts.note } : {}),
            ...(opts.activate ? { expectCurrent: inForce?.version ?? null } : {}),
          });
          if (!r.release) return { ...r, release: null };
          return this.published(tenantId, slug, r.agent.id, { ...r, release: releaseToApi(r.release) });
        } catch (err) {
          if (err instanceof CurrentChangedError && attempt < 3) continue;
          throw err;
        }
      }
      const stored = await agents.put(tenantId, slug, definition, { activate: false, ...(opts.note ? { note: opts.note } : {}) });
      if (stored.version === stored.agent.version) return { ...stored, release: null };
      try {
        // Forced with a reason (AGENTS_FORCE_REASON at start-up): released past failing gates, recorded as forced.
        const force = opts.forceReason ? { force: true, reason: opts.forceReason } : { force: false };
        const { release, ...agent } = await this.activate(tenantId, slug, stored.version, force, actor);
        return { ...stored, agent, changed: true, release };
      } catch (err) {
        if (err instanceof GatesFailedError) {
          throw new GatesFailedError(`${err.message}; the definition is stored as draft version ${stored.version}`, err.gates, err.evaluationId);
        }
        throw err;
      }
    }
  }

  /**
   * Makes a version current through the gates. A rollback (an older version that a step of the
   * record made current before) is not gated: it must be at once, and the version was judged
   * when it was released. Forcing past failed gates takes a reason; the gates are recorded all the same.
   */
  async activate(
    tenantId: string,
    slug: string,
    version: number,
    body: { force: boolean; reason?: string },
    actor: Actor,
  ): Promise<Agent & { release: Release }> {
    const { agents, store } = this.deps;
    const row = await agents.active(tenantId, slug);
    const rollback = version < row.currentVersion && (await store.wasReleased(tenantId, row.id, version));
    const promote = row.split?.version === version;
    let judged: { gates: ReleaseGate[]; evaluationId: string | null; evidence?: Evidence | null; failed: boolean } | null = null;
    if (rollback) {
      // Not judged on an evaluation (it must be at once), but never a way around the policy in force.
      const weaker = await this.weakerPolicy(tenantId, slug, row, version);
      if (weaker && !body.force) throw new GatesFailedError(`${weaker.detail}: force the rollback with a reason`, [weaker], null);
      judged = weaker && { gates: [weaker], evaluationId: null, failed: true };
    } else if (version !== row.currentVersion) judged = await this.judge(tenantId, slug, row, version, body);
    const { agent, release } = await agents.release(tenantId, slug, row, {
      expectCurrent: row.currentVersion,
      current: version,
      step: this.step(actor, {
        action: rollback ? 'rollback' : promote ? 'promote' : 'activate',
        gates: judged?.gates ?? [],
        evaluationId: judged?.evaluationId ?? null,
        evidence: judged?.evidence ?? null,
        forced: judged?.failed ?? false,
        reason: body.reason ?? null,
      }),
    });
    return this.published(tenantId, slug, row.id, { ...agent, release: releaseToApi(release) });
  }

  /** Makes the split's candidate current, through the gates, ending the split. */
  async promote(tenantId: string, slug: string, body: { force: boolean; reason?: string }, actor: Actor): Promise<Agent & { release: Release }> {
    const row = await this.deps.agents.active(tenantId, slug);
    if (!row.split) throw new ConflictError('no_split', `Agent "${slug}" has no traffic split`);
    return this.activate(tenantId, slug, row.split.version, body, actor);
  }

  /** Starts a split, or changes its share, through the gates (judged once per candidate and inputs: a change of share reuses the evaluation). */
  async putSplit(
    tenantId: string,
    slug: string,
    body: { version: number; percent: number; force: boolean; reason?: string },
    actor: Actor,
  ): Promise<{ split: Split | null; release: Release }> {
    const { agents } = this.deps;
    const row = await agents.active(tenantId, slug);
    if (body.version === row.currentVersion) {
      throw new InputError(`Version ${body.version} is the current version: a split sends a share to another one`, [
        { path: 'version', message: 'must not be the current version' },
      ]);
    }
    const judged = await this.judge(tenantId, slug, row, body.version, body);
    const share = Math.round(body.percent * 100);
    const { agent, release } = await agents.release(tenantId, slug, row, {
      expectCurrent: row.currentVersion,
      split: { version: body.version, share },
      step: this.step(actor, {
        action: row.split?.version === body.version ? 'split_change' : 'split_start',
        gates: judged.gates,
        evaluationId: judged.evaluationId,
        evidence: judged.evidence,
        forced: judged.failed,
        reason: body.reason ?? null,
      }),
    });
    return this.published(tenantId, slug, row.id, { split: agent.split, release: releaseToApi(release) });
  }

  /** Ends the split: every new conversation starts on the current version. Not gated. */
  async endSplit(tenantId: string, slug: string, body: { reason?: string }, actor: Actor): Promise<{ split: Split | null; release: Release }> {
    const { agents } = this.deps;
    const row = await agents.active(tenantId, slug);
    if (!row.split) throw new ConflictError('no_split', `Agent "${slug}" has no traffic split`);
    const { agent, release } = await agents.release(tenantId, slug, row, {
      expectCurrent: row.currentVersion,
      split: null,
      step: this.step(actor, { action: 'split_end', gates: [], evaluationId: null, forced: false, reason: body.reason ?? null }),
    });
    return this.published(tenantId, slug, row.id, { split: agent.split, release: releaseToApi(release) });
  }

  async list(tenantId: string, slug: string, q: { limit: number; cursor?: string }): Promise<{ data: Release[]; next_cursor: string | null }> {
    const row = await this.deps.agents.any(tenantId, slug);
    const before = decodeCursor(q.cursor, (v): v is number => Number.isSafeInteger(v) && (v as number) > 0);
    const rows = await this.deps.store.list(tenantId, row.id, { limit: q.limit + 1, before });
    const page = rows.slice(0, q.limit);
    return { data: page.map(releaseToApi), next_cursor: rows.length > q.limit ? encodeCursor(page[page.length - 1].sequence) : null };
  }

  /** Verifies the record; `head` is one published earlier (`<sequence>:<hash>`), which the record must still hold. */
  async verify(tenantId: string, slug: string, head?: { sequence: number; hash: string }) {
    const row = await this.deps.agents.any(tenantId, slug);
    const r = await this.deps.store.verify(tenantId, row.id, head);
    return {
      entries: r.entries,
      keyed_entries: r.keyed_entries,
      ...(r.keyed_from !== undefined ? { keyed_from: r.keyed_from } : {}),
      valid: r.valid,
      first_broken: r.first_broken && {
        sequence: r.first_broken.sequence,
        reason: r.first_broken.reason as Exclude<typeof r.first_broken.reason, 'turn_mismatch' | 'turn_unchained'>,
      },
      ...(head ? { head: `${head.sequence}:${head.hash}` } : {}),
    };
  }

  /**
   * The agent's current version and the release policy in it, if any: null for an agent not yet
   * stored, or archived (a PUT brings it back with nothing running on it to protect).
   */
  private async policyOf(tenantId: string, slug: string): Promise<{ version: number; policy: ReleasePolicy | null } | null> {
    const row = await this.deps.agents.any(tenantId, slug).catch((err: unknown) => {
      if (err instanceof NotFoundError) return null;
      throw err;
    });
    if (!row || row.archivedAt) return null;
    const v = await this.deps.agents.version(tenantId, slug, row.currentVersion);
    return { version: row.currentVersion, policy: v.definition.release ?? null };
  }

  /** The failed `policy` gate of making `version` current, when its policy is weaker than the current version's; else null. */
  private async weakerPolicy(tenantId: string, slug: string, row: AgentRow, version: number): Promise<ReleaseGate | null> {
    const candidate = await this.deps.agents.version(tenantId, slug, version);
    const current = await this.deps.agents.version(tenantId, slug, row.currentVersion);
    return policyGate(version, policyWeakenings(current.definition.release, candidate.definition.release));
  }

  /**
   * Judges the current version's policy on `version`: none (no policy) passes. Failed gates are
   * a 409 unless forced with a reason; forced, they are recorded as failed.
   */
  private async judge(
    tenantId: string,
    slug: string,
    row: AgentRow,
    version: number,
    body: { force: boolean; reason?: string },
  ): Promise<{ gates: ReleaseGate[]; evaluationId: string | null; evidence: Evidence | null; failed: boolean }> {
    const { agents, evaluations } = this.deps;
    // The candidate first: 404 for a version that does not exist, policy or none.
    const candidate = await agents.version(tenantId, slug, version);
    const current = await agents.version(tenantId, slug, row.currentVersion);
    const policy = current.definition.release;
    if (!policy) return { gates: [], evaluationId: null, evidence: null, failed: false };
    const { row: evaluation } = await evaluations.forGates(
      tenantId,
      slug,
      row,
      { version, digest: candidate.digest, baselineDigest: current.digest },
      { replay: replayNeeded(policy), folds: GATE_FOLDS },
      { maxAgeMs: policy.max_age_hours * 3_600_000, keyId: null },
    );
    const weaker = policyGate(version, policyWeakenings(policy, candidate.definition.release));
    const gates = [
      ...judgeGates(policy, evaluation.result as EvaluationResult, { candidate: candidate.definition, current: current.definition }),
      ...(weaker ? [weaker] : []),
    ];
    const failing = gates.filter((g) => !g.passed);
    if (failing.length && !body.force) {
      throw new GatesFailedError(
        `Version ${version} fails ${failing.length} release gate${failing.length === 1 ? '' : 's'}: ${failing.map((g) => g.gate).join(', ')}`,
        gates,
        evaluation.id,
      );
    }
    return { gates, evaluationId: evaluation.id, evidence: evidenceOf(evaluation), failed: failing.length > 0 };
  }

  private step(actor: Actor, s: Partial<StepInput> = {}): StepInput & { action: ReleaseRow['action'] } {
    return {
      action: 'activate',
      gates: [],
      evaluationId: null,
      forced: false,
      reason: null,
      ...s,
      keyId: actor.by?.kind === 'key' ? actor.by.id : null,
      actor: actor.by,
      requestId: actor.requestId,
      createdAt: iso(this.deps.clock.now()),
    };
  }
}
