// Replays (docs/operations.md): recorded conversations fed, user turn by user turn, to another
// version of their agent in memory. Actions are answered from the conversation's own audit log
// (nothing goes out), model calls of generative phases go to the provider, nothing is written to
// conversations and no webhook fires. Each runs in the background in the process that started
// it, with its progress and results in the `replays` table for seven days.
import { randomUUID } from 'node:crypto';
import type { Replay, ReplayResult, ReplaySummary } from '@switchboard/contract';
import type { ActionResult, AuditRow, Conversation, TurnRow } from '../../domain.js';
import type { CompiledAgent } from '../../engine/compile.js';
import type { EngineReply, EngineRequest } from '../../engine/run.js';
import { RateLimitedError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { ConversationStore } from '../../store/conversations/conversation-store.js';
import type { ReplayRow, ReplayStore } from '../../store/review/replay-store.js';
import type { AgentService } from '../agents/agent-service.js';
import type { ConversationService } from '../conversations/conversation-service.js';
import { ERASURE } from '../conversations/erasure.js';
import { JobRunner, type JobContext } from '../jobs/job-runner.js';
import { OfflineConversation } from './offline-conversation.js';
import type { PrivacyService } from '../privacy/privacy-service.js';
import type { RenderBudgets } from '../render-budgets.js';

/** The longest a replay runs; what is left is not replayed, and the replay fails saying so. */
const MAX_RUN_MS = 15 * 60 * 1000;

export interface StartReplayInput {
  version: number;
  conversations?: string[];
  status?: Conversation['status'];
  capability?: string;
  created_after?: string;
  created_before?: string;
  limit: number;
}

interface Recorded {
  reply: string;
  capability: string;
  phase: string;
  status: string;
  outcome: string | null;
  /** The passage ids the answer cites, in order. */
  citations: string[];
}

type Difference = NonNullable<ReplayResult['first_difference']>;

/** What each user turn of a conversation led to, as its turns and audit log recorded it. */
function recordedTurns(c: Conversation, turns: TurnRow[], audit: AuditRow[]): { user: TurnRow; recorded: Recorded }[] {
  const byTurn = new Map<number, AuditRow[]>();
  for (const a of audit) if (a.turnIndex !== null) byTurn.set(a.turnIndex, [...(byTurn.get(a.turnIndex) ?? []), a]);
  const out: { user: TurnRow; recorded: Recorded }[] = [];
  let capability = 'fallback';
  let status = 'active';
  let outcome: string | null = null;
  for (const t of turns) {
    if (t.role !== 'user') continue;
    const entries = byTurn.get(t.idx) ?? [];
    for (const e of entries) {
      const d = e.data as { capability?: string; selected?: { capability?: string }; to?: string; outcome?: string | null };
      if (e.type === 'routing_decision' && d.selected?.capability) capability = d.selected.capability;
      if (e.type === 'phase_transition' && d.capability) capability = d.capability;
      if (e.type === 'status_change' && d.to) {
        status = d.to;
        outcome = d.outcome ?? null;
      }
    }
    const reply = turns.find((x) => x.idx === t.idx + 1 && x.role === 'agent' && !x.author);
    const citations = (reply?.citations ?? []).map((x) => x.passage_id);
    out.push({ user: t, recorded: { reply: reply?.message ?? '', capability, phase: reply?.phase ?? c.phase, status, outcome, citations } });
  }
  return out;
}

/**
 * A URL with its %XX escapes decoded: a recorded URL a privacy policy masked is kept decoded
 * (`?email=[EMAIL]`), and the replay's, made from the placeholder, is encoded (`%5BEMAIL%5D`).
 */
function decoded(url: string): string {
  try {
    return decodeURI(url).replace(/%5B/gi, '[').replace(/%5D/gi, ']');
  } catch {
    return url;
  }
}

/** Recorded action calls, answered again for a request with the same action, method and URL. */
class Recordings {
  private readonly calls: { action: string; method: string; url: string; result: ActionResult; used: boolean }[];
  constructor(audit: AuditRow[]) {
    this.calls = audit
      .filter((a) => a.type === 'action_call')
      .map((a) => {
        const d = a.data as { action: string; request: { method: string; url: string }; response: { status: number; body: unknown } | null; outcome: string };
        return {
          action: d.action,
          method: d.request.method,
          url: d.request.url,
          result: { ok: d.outcome === 'ok', status: d.response?.status ?? 0, body: d.response?.body ?? null },
          used: false,
        };
      });
  }

  /**
   * The first unused recording of this request, else one used already. When the action was
   * recorded but never with this method and URL (a changed address, host or path), the action's
   * first unused recording answers, and `was` says what it had asked; null when the action was
   * never called.
   */
  answer(action: string, method: string, url: string): { result: ActionResult; was: string | null } | null {
    const ofAction = this.calls.filter((c) => c.action === action);
    const same = ofAction.filter((c) => c.method === method && decoded(c.url) === decoded(url));
    const pick = same.find((c) => !c.used) ?? same.at(-1) ?? ofAction.find((c) => !c.used) ?? ofAction.at(-1);
    if (!pick) return null;
    pick.used = true;
    return { result: pick.result, was: same.length ? null : `${pick.method} ${pick.url}` };
  }
}

export class ReplayService {
  /** Two of a tenant at once, each kept seven days. */
  private readonly jobs: JobRunner<ReplayRow>;

  constructor(
    private readonly deps: {
      agents: AgentService;
      store: ConversationStore;
      replays: ReplayStore;
      conversations: ConversationService;
      /** What is masked: replays mask as live turns do. */
      privacy: PrivacyService;
      clock: Clock;
      log: { warn(o: object, m: string): void };
      /** Render budgets of replayed turns: the tenant's share, as live turns (absent: a fresh turn budget each). */
      renderBudgets?: RenderBudgets;
    },
  ) {
    this.jobs = new JobRunner(
      { name: 'replay', notFound: 'replay_not_found', keepMs: 7 * 24 * 3600 * 1000, maxRunning: 2, busy: () => new RateLimitedError(30) },
      deps.replays,
      deps.clock,
      deps.log,
    );
  }

  async start(tenantId: string, slug: string, input: StartReplayInput): Promise<{ id: string; status: 'running' }> {
    const { agents, store } = this.deps;
    const agent = await agents.any(tenantId, slug);
    await this.jobs.precheck(tenantId);
    await agents.version(tenantId, slug, input.version); // 404 for a version that does not exist
    const ids = input.conversations
      ? input.conversations
      : (
          await store.list(
            { tenantId, agentId: agent.id },
            {
              status: input.status,
              capability: input.capability,
              createdAfter: input.created_after ? iso(new Date(input.created_after)) : undefined,
              createdBefore: input.created_before ? iso(new Date(input.created_before)) : undefined,
            },
            { limit: input.limit, after: null },
          )
        ).map((c) => c.id);
    const id = randomUUID();
    await this.jobs.admit(this.jobs.draft({ id, tenantId, agentId: agent.id, version: input.version, total: ids.length, results: [] }));
    this.jobs.run(id, (job) => this.run(job, { id, tenantId, agentId: agent.id, version: input.version, ids }));
    return { id, status: 'running' };
  }

  async get(tenantId: string, slug: string, id: string): Promise<Replay> {
    const agent = await this.deps.agents.any(tenantId, slug);
    return this.toApi(await this.jobs.get(tenantId, agent.id, id));
  }

  /** The agent's replays, newest first, a page at a time, without their results. */
  async list(tenantId: string, slug: string, q: { limit: number; cursor?: string }): Promise<{ data: ReplaySummary[]; next_cursor: string | null }> {
    const agent = await this.deps.agents.any(tenantId, slug);
    return this.jobs.list(tenantId, agent.id, q, (r) => {
      const { results: _results, ...summary } = this.toApi(r);
      return summary;
    });
  }

  /** Resolves when this process's replay `id` has finished (at once when it runs elsewhere or is done). */
  finished(id: string): Promise<void> {
    return this.jobs.finished(id);
  }

  /** Stops the replays this process runs; they are marked failed. */
  close(): Promise<void> {
    return this.jobs.close();
  }

  private toApi(row: ReplayRow): Replay {
    const results = row.results as ReplayResult[];
    return {
      id: row.id,
      version: row.version,
      status: row.status,
      progress: { done: row.done, total: row.total },
      summary: {
        conversations: results.length,
        identical: results.filter((r) => r.verdict === 'identical').length,
        changed: results.filter((r) => r.verdict === 'changed').length,
        errors: results.filter((r) => r.verdict === 'error').length,
      },
      results,
      error: row.error,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
      expires_at: row.expiresAt,
    };
  }

  private async run(job: JobContext, r: { id: string; tenantId: string; agentId: string; version: number; ids: string[] }): Promise<void> {
    const { tenantId, agentId } = r;
    const results: ReplayResult[] = [];
    const agent = await this.deps.agents.compiledVersion(tenantId, agentId, r.version);
    const until = Date.now() + MAX_RUN_MS;
    // Checked before every turn, not only between conversations: one long conversation cannot outlast it.
    const check = () => {
      job.check();
      if (Date.now() > until) throw new Error(`the replay ran for ${MAX_RUN_MS / 60_000} minutes: replay fewer conversations at a time`);
    };
    const kept = async () => ({ done: results.length, columns: { results: JSON.stringify(await this.withoutErased(tenantId, results)) } });
    for (const conversationId of r.ids) {
      check();
      results.push(await this.replayOne(tenantId, agentId, agent, conversationId, check));
      await job.progress(await kept());
    }
    await this.jobs.complete(r.id, await kept());
  }

  /**
   * The results with those of conversations erased while the replay ran reduced as erasure
   * reduces stored ones (an erasure scrubs the replay rows it finds; this covers what a running
   * replay still holds in memory). Only a difference carries text, so only those are looked up.
   */
  private async withoutErased(tenantId: string, results: ReplayResult[]): Promise<ReplayResult[]> {
    const withText = results.filter((r) => r.first_difference).map((r) => r.conversation_id);
    const erased = await this.deps.store.erasedAmong(tenantId, withText);
    if (erased.size === 0) return results;
    for (let i = 0; i < results.length; i++) {
      if (erased.has(results[i].conversation_id)) results[i] = ERASURE.replayResult(results[i]) as ReplayResult;
    }
    return results;
  }

  private async replayOne(tenantId: string, agentId: string, agent: CompiledAgent, conversationId: string, check: () => void): Promise<ReplayResult> {
    const { store, conversations } = this.deps;
    const c = await store.get(tenantId, agentId, conversationId);
    if (!c) return { conversation_id: conversationId, verdict: 'error', first_difference: null, error: 'no such conversation of this agent' };
    if (c.erasedAt) return { conversation_id: conversationId, verdict: 'error', first_difference: null, error: 'the conversation was erased' };
    const turns = await store.turns(tenantId, c.id, c.createdAt);
    const audit: AuditRow[] = [];
    for (let after = 0; ;) {
      const page = await store.audit({ tenantId, id: c.id, createdAt: c.createdAt }, { limit: 500, afterSeq: after });
      audit.push(...page);
      if (page.length < 500) break;
      after = page[page.length - 1].sequence;
    }
    const recordings = new Recordings(audit);
    // The context each turn ran with, where the audit log recorded it (context_changed entries);
    // older conversations have only their last merged context.
    const contexts = audit.filter((a) => a.type === 'context_changed');
    const contextAt = (idx: number): Conversation['context'] => {
      if (contexts.length === 0) return c.context;
      const last = contexts.filter((a) => a.turnIndex !== null && a.turnIndex <= idx).at(-1);
      return last ? ((last.data as { context: Conversation['context'] }).context ?? null) : null;
    };
    const budgets = this.deps.renderBudgets?.of(tenantId);
    const conversation = new OfflineConversation(agent, {
      conversationId: c.id,
      userId: c.userId,
      llm: conversations.modelRouting,
      embeddings: conversations.embeddingsFor(agent),
      budgets,
      masking: await this.deps.privacy.masking(tenantId, agent),
      placeholders: true,
    });
    for (const { user, recorded } of recordedTurns(c, turns, audit)) {
      check();
      const missing: { call: string | null } = { call: null };
      const moved: { diff: Difference | null } = { diff: null };
      const answer = async (request: EngineRequest): Promise<EngineReply> => {
        if (request.kind === 'action') {
          const asked = `${request.method} ${request.masked.url}`;
          const found = recordings.answer(request.action.name, request.method, request.masked.url);
          if (!found) missing.call ??= `${request.action.name} ${asked}`;
          else if (found.was)
            moved.diff ??= {
              turn_index: user.idx,
              field: 'action_request',
              recorded: `${request.action.name} ${found.was}`,
              replayed: `${request.action.name} ${asked}`,
            };
          const result = found?.result ?? { ok: false, status: 0, body: null };
          return {
            result,
            audit: {
              type: 'action_call',
              turnIndex: user.idx,
              timestamp: user.timestamp,
              durationMs: 0,
              data: { action: request.action.name, replayed: true },
            },
          };
        }
        if (request.kind === 'llm_call') return conversations.models.call(request, tenantId, undefined, agent);
        if (request.kind === 'embed') return conversations.embedMessage(request, tenantId);
        if (request.kind === 'retrieve') return conversations.retrieve(request, tenantId, agent);
        return conversations.routeWithModel(request, tenantId);
      };
      const r = await conversation.turn(user.message, { now: user.timestamp, context: contextAt(user.idx), turnIndex: user.idx }, answer);
      const replayed: Recorded = {
        reply: r.reply,
        capability: r.capability.name,
        phase: r.phase,
        status: r.status,
        outcome: r.outcome,
        citations: r.citations.map((x) => x.passage_id),
      };
      const changes = (['reply', 'capability', 'phase', 'status', 'outcome', 'citations'] as const)
        .filter((field) => JSON.stringify(recorded[field]) !== JSON.stringify(replayed[field]))
        .map((field) => ({ field, recorded: recorded[field], replayed: replayed[field] }));
      const first: Difference | null = missing.call
        ? { turn_index: user.idx, field: 'unrecorded_action', recorded: null, replayed: missing.call }
        : (moved.diff ?? (changes[0] ? { turn_index: user.idx, ...changes[0] } : null));
      if (first) return { conversation_id: c.id, verdict: 'changed', first_difference: { ...first, message: user.message, changes } };
    }
    return { conversation_id: c.id, verdict: 'identical', first_difference: null };
  }
}
