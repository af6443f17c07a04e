// The only code that joins the engine, the store and the action runner: one converse call,
// applied atomically and one at a time per conversation (its reads: conversation-reads.ts).
import { randomUUID } from 'node:crypto';
import type { ContextEnvelope, ConverseRequest, ConverseResponse } from '@switchboard/contract';
import type { Channel, Conversation } from '../../domain.js';
import { openConversation } from './lifecycle.js';
import { buildTurnWrite } from './turn-write.js';
import { maskerOf, turnMaskBudget, type Masking } from '../privacy/policy.js';
import type { MaskBudget } from '../privacy/mask.js';
import { ModelCalls } from './model-calls.js';
import type { PrivacyService } from '../privacy/privacy-service.js';
import { startVersion } from '../releases/traffic-splits.js';
import type { ReviewHourlyCap } from '../review/review-caps.js';
import type { HttpActionRunner } from '../../actions/http-action.js';
import type { CompiledAgent } from '../../engine/compile.js';
import {
  runTurn,
  scoreWith,
  type EngineReply,
  type LlmRouteReply,
  type EmbedReply,
  type EmbedRequest,
  type LlmRouteRequest,
  type RetrieveReply,
  type RetrieveRequest,
  type TurnInput,
  type TurnResult,
} from '../../engine/run.js';
import type { LlmRouter } from '../../actions/llm-router.js';
import type { ModelGate } from '../model-gate.js';
import type { Scored } from '../../engine/router/index.js';
import { ConflictError, IdempotencyMismatchError, InputError, LimitError, NotFoundError, PayloadTooLargeError, UnavailableError } from '../../errors.js';
import { canonicalJson, sha256 } from '../../lib/canonical.js';
import { iso, msSince, type Clock } from '../../lib/clock.js';
import { DuplicateIdempotencyKeyError, StaleRead, type ConversationStore, type PrefetchedConversation } from '../../store/conversations/conversation-store.js';
import type { AgentService } from '../agents/agent-service.js';
import type { SplitRow } from '../../store/agents/agent-store.js';
import type { SecretService } from '../secrets.js';
import type { RenderBudgets } from '../render-budgets.js';
import type { ServerEmbeddings } from '../agents/server-embeddings.js';
import { inSpan, inSpanSync } from '../../lib/tracer.js';
import { ReplyStream } from './reply-stream.js';
import type { KnowledgeService } from '../knowledge/knowledge-service.js';

export interface ConverseCall {
  tenantId: string;
  slug: string;
  body: ConverseRequest;
  userIdHeader?: string;
  requestId: string;
  idempotencyKey?: string;
  /** Receives the reply as it is written (a streamed converse call). */
  onDelta?: (text: string) => void;
  /** A call of the web chat widget: a new conversation records it; a continued one must have come from it too. */
  channel?: Channel;
  /** The id a new conversation takes (the demo's README conversation); a random one otherwise. */
  newConversationId?: string;
}

export interface ConversationServiceOptions {
  maxMessageChars: number;
  maxTurns: number;
  maxContextBytes: number;
  maxStateBytes: number;
  /** Resolves the secrets a tenant's actions may read. */
  secrets: SecretService;
  /** What each agent masks under its tenant's privacy policy. */
  privacy: PrivacyService;
  /** What each turn's rendering may spend, and each tenant's share (shared with tests and replays). */
  renderBudgets: RenderBudgets;
  maxReplyBytes: number;
  /** The routing fallback for messages the embedded router cannot place. */
  llm?: LlmRouter;
  /** The way to the model of generative phases and the routing fallback; without one, generative phases take their on_error. */
  gate?: ModelGate;
  /** Tokens one conversation may spend on model calls (0: no cap). */
  llmTokensPerConversation: number;
  /** The model server's embeddings for routing (LLM_EMBEDDINGS_MODEL). */
  embeddings?: ServerEmbeddings;
  /** The tenants' knowledge sources, which answer and generative phases search. */
  knowledge?: KnowledgeService;
  /** A routing whose two best capabilities are closer than this goes to the review inbox (REVIEW_LOW_MARGIN). */
  reviewLowMargin: number;
  /** Review-inbox findings per conversation and per agent and hour (REVIEW_MAX_PER_CONVERSATION, REVIEW_MAX_PER_AGENT_HOUR). */
  reviewCaps?: { perConversation: number; perAgentHour: number };
  /** The per-agent hourly cap of findings, counted across replicas through the shared limits. */
  reviewHourly?: ReviewHourlyCap;
}

/** Blocks a continuing request carries replace those the conversation has. */
function mergeContext(stored: ContextEnvelope | null, incoming: ContextEnvelope | undefined): ContextEnvelope | null {
  if (!incoming) return stored;
  if (!stored) return incoming;
  return { version: incoming.version, context: { ...(stored.context ?? {}), ...(incoming.context ?? {}) } };
}

export class ConversationService {
  /** The model calls of generative phases (replays make theirs here too). */
  readonly models: ModelCalls;

  constructor(
    private readonly agents: AgentService,
    private readonly store: ConversationStore,
    private readonly actions: HttpActionRunner,
    private readonly clock: Clock,
    private readonly opts: ConversationServiceOptions,
  ) {
    this.models = new ModelCalls(opts);
  }

  converse(call: ConverseCall): Promise<ConverseResponse> {
    return inSpan('switchboard.converse', { 'switchboard.tenant': call.tenantId, 'switchboard.agent': call.slug }, async (span) => {
      const response = await this.converseTraced(call);
      span.setAttributes({
        'switchboard.conversation_id': response.conversation_id,
        'switchboard.capability': response.state.capability,
        'switchboard.status': response.state.status,
      });
      return response;
    });
  }

  /**
   * A call that worked from rows this process kept (store/kept-rows.ts) which turned out not to
   * be the stored ones wrote and sent nothing: it runs once more from its reads, which then find
   * the current rows (kept from the refusal, or read).
   */
  private async converseTraced(call: ConverseCall): Promise<ConverseResponse> {
    const started = performance.now();
    try {
      return await this.converseOnce(call, started);
    } catch (err) {
      if (err instanceof StaleRead) return this.converseOnce(call, started);
      throw err;
    }
  }

  private async converseOnce(call: ConverseCall, started: number): Promise<ConverseResponse> {
    const { body, tenantId } = call;
    // Characters as people count them (code points), not UTF-16 units.
    if (body.message.length > this.opts.maxMessageChars && Array.from(body.message).length > this.opts.maxMessageChars) {
      throw new InputError('The message is too long', [{ path: 'message', message: `must be at most ${this.opts.maxMessageChars} characters` }]);
    }
    // Continuing: the conversation's row comes with the agent's where that saves a round trip (PostgreSQL).
    const { agent: agentRow, conversation: read } = body.conversation_id
      ? await this.agents.activeWithConversation(tenantId, call.slug, body.conversation_id)
      : { agent: await this.agents.active(tenantId, call.slug), conversation: undefined };
    if (body.version !== undefined) await this.checkChosenVersion(tenantId, agentRow.id, body);
    const opened = { agentId: agentRow.id, currentVersion: agentRow.currentVersion, split: agentRow.split, started, storageMs: msSince(started), read };
    if (!call.idempotencyKey) return this.apply(call, opened);

    // A key is the caller's own: the same key from another user is another key.
    const userId = body.context?.context?.identity?.user_id ?? call.userIdHeader ?? null;
    const key = sha256(JSON.stringify([userId, call.idempotencyKey]));
    const hash = sha256(canonicalJson(body));
    return this.store.withKeyLock(`idem:${tenantId}:${agentRow.id}:${key}`, async () => {
      const replay = async () => {
        const found = await this.store.findIdempotency(tenantId, agentRow.id, key);
        if (!found) return null;
        if (found.requestHash !== hash) throw new IdempotencyMismatchError();
        return found.response as ConverseResponse;
      };
      const stored = await replay();
      if (stored) return stored;
      try {
        return await this.apply(call, { ...opened, idem: { key, hash } });
      } catch (err) {
        // Another server process stored this key first: answer as it did.
        if (err instanceof DuplicateIdempotencyKeyError) return (await replay())!;
        throw err;
      }
    });
  }

  /** One call, under the conversation's lock: open it, check the caps, run the engine, write the result. */
  private async apply(
    call: ConverseCall,
    ctx: {
      agentId: string;
      currentVersion: number;
      split: SplitRow | null;
      started: number;
      storageMs: number;
      /** The conversation's row as read with the agent, if it was. */
      read?: PrefetchedConversation;
      idem?: { key: string; hash: string };
    },
  ): Promise<ConverseResponse> {
    const { tenantId, body } = call;
    const userId = body.context?.context?.identity?.user_id ?? call.userIdHeader ?? null;
    const conversationId = body.conversation_id ?? call.newConversationId ?? randomUUID();
    const isNew = body.conversation_id === undefined;

    // Optimistic (conversation-store.ts exclusive): up to its first effect this may run twice, so
    // everything before that is reads and computation.
    const response = await this.store.exclusive(
      `conv:${conversationId}`,
      isNew ? null : { tenantId, id: conversationId },
      async (unit) => {
        const opened = isNew
          ? null
          : await openConversation(
              unit,
              { agents: this.agents, clock: this.clock },
              { tenantId, agentId: ctx.agentId, id: conversationId, userId, requestId: call.requestId, closedCode: 'conversation_closed' },
            );
        const prior = opened?.conversation ?? null;
        if (prior && call.channel && prior.channel?.kind !== call.channel.kind)
          throw new NotFoundError('conversation_not_found', `No conversation ${conversationId}`);
        if (prior && (prior.status === 'completed' || prior.status === 'abandoned')) {
          throw new ConflictError('conversation_closed', `The conversation is ${prior.status}`);
        }
        const agent =
          opened?.agent ??
          (await this.agents.compiledVersion(
            tenantId,
            ctx.agentId,
            body.version ?? startVersion(ctx.agentId, ctx.currentVersion, ctx.split, userId ?? conversationId),
          ));
        const now = opened?.now ?? iso(this.clock.now());
        const context = mergeContext(prior?.context ?? null, body.context);
        this.checkCaps(prior, context);

        const secrets = agent.secretNames.length ? await this.opts.secrets.forTenant(tenantId, agent.secretNames) : {};
        const turnUser = prior ? prior.userId : userId;
        const history =
          prior && agent.historyTurns > 0
            ? (await this.store.recentTurns(tenantId, conversationId, agent.historyTurns, prior.createdAt)).map((r) => ({
                role: r.role === 'user' ? ('user' as const) : ('agent' as const),
                message: r.message,
              }))
            : undefined;
        const masking = await this.opts.privacy.masking(tenantId, agent);
        const maskBudget = turnMaskBudget();
        const { result, routingMs, engineMs, actionsMs, llmMs } = await this.runEngine(agent, prior, {
          tenantId,
          masking,
          maskBudget,
          secrets,
          conversationId,
          message: body.message,
          context,
          userId: turnUser,
          turnIndex: prior ? prior.turnCount : 0,
          now,
          history,
          onDelta: call.onDelta,
          beforeEffect: () => unit.beforeEffect(),
        });
        // The context a turn ran with, whenever it changes: what a replay needs to run it again.
        if (body.context && (!prior?.context || canonicalJson(context) !== canonicalJson(prior.context))) {
          const channel =
            !prior && call.channel
              ? { channel: { kind: call.channel.kind, origin: call.channel.kind === 'web' ? call.channel.origin : null, page_url: call.channel.pageUrl } }
              : {};
          result.audit.unshift({
            type: 'context_changed',
            turnIndex: prior ? prior.turnCount : 0,
            timestamp: now,
            durationMs: null,
            data: { context, ...channel },
          });
        }
        if (JSON.stringify(result.flow).length > this.opts.maxStateBytes) {
          throw new LimitError(`The conversation's slots and action results would exceed ${this.opts.maxStateBytes} bytes`);
        }
        const { write, response } = buildTurnWrite({
          tenantId,
          agent,
          masking,
          maskBudget,
          prior,
          conversationId,
          userId: turnUser,
          context,
          message: body.message,
          result,
          now,
          requestId: call.requestId,
          reviewLowMargin: this.opts.reviewLowMargin,
          reviewMaxPerConversation: this.opts.reviewCaps?.perConversation ?? 5,
          timing: {
            total_ms: msSince(ctx.started),
            routing_ms: routingMs,
            engine_ms: engineMs,
            actions_ms: actionsMs,
            ...(llmMs > 0 ? { llm_ms: llmMs } : {}),
            storage_ms: ctx.storageMs + (opened?.loadMs ?? 0),
          },
          idempotency: ctx.idem,
          channel: call.channel ?? null,
        });
        if (write.review?.length) await this.opts.reviewHourly?.apply(tenantId, agent.agentId, write, now);
        await unit.commit(write);
        return response;
      },
      { optimistic: true, read: ctx.read },
    );
    return response!;
  }

  /** A conversation started on a chosen version: only a new one, and only on a version the agent has (compiled here, once). */
  private async checkChosenVersion(tenantId: string, agentId: string, body: ConverseRequest): Promise<void> {
    if (body.conversation_id !== undefined) {
      throw new InputError('A running conversation stays on its version', [
        { path: 'version', message: 'give a version only to start a conversation (without conversation_id)' },
      ]);
    }
    await this.agents.compiledVersion(tenantId, agentId, body.version!);
  }

  /** The operator's caps on one conversation: context size and turns (state size is checked after the turn). */
  private checkCaps(prior: Conversation | null, context: ContextEnvelope | null): void {
    if (context && Buffer.byteLength(JSON.stringify(context)) > this.opts.maxContextBytes) {
      throw new PayloadTooLargeError(
        `The context is larger than ${this.opts.maxContextBytes} bytes`,
        'context',
        `at most ${this.opts.maxContextBytes} bytes of JSON`,
      );
    }
    if ((prior?.turnCount ?? 0) + 2 > this.opts.maxTurns) {
      throw new LimitError(`The conversation has reached its limit of ${this.opts.maxTurns} turns`, 'conversation_id');
    }
  }

  /** Drives the engine's generator, making the action calls it asks for; times each part. */
  private async runEngine(
    agent: CompiledAgent,
    prior: Conversation | null,
    t: Pick<TurnInput, 'secrets' | 'conversationId' | 'message' | 'context' | 'userId' | 'turnIndex' | 'now' | 'history'> & {
      tenantId: string;
      masking: Masking | null;
      maskBudget: MaskBudget;
      onDelta?: (text: string) => void;
      /** Called before each effect outside the process, and before a streamed reply is sent (ConversationUnit.beforeEffect). */
      beforeEffect: () => Promise<void>;
    },
  ): Promise<{ result: TurnResult; routingMs: number; engineMs: number; actionsMs: number; llmMs: number }> {
    // Scoring runs inside the engine's steps and the LLM between them: time each on its own.
    let scoringMs = 0;
    let llmMs = 0;
    let modelMs = 0;
    const stream = t.onDelta ? new ReplyStream(t.onDelta, this.opts.maxReplyBytes) : undefined;
    let actionsMs = 0;
    let stepsMs = 0;
    const score = (message: string, embedding?: Float32Array): Scored => {
      const s = performance.now();
      const out = inSpanSync('switchboard.routing', {}, () => scoreWith(agent, message, embedding));
      scoringMs += msSince(s);
      return out;
    };
    const budget = this.opts.renderBudgets.forTurn(t.tenantId);
    // One masker for the turn's model calls, so a value has one numbered placeholder in all of them.
    const forModel = maskerOf(t.masking, { numbered: true, budget: t.maskBudget });
    // An action's URL in a trace is masked too (its audit entry is, when the turn is written).
    const forTrace = maskerOf(t.masking, { budget: t.maskBudget });
    const traced = forTrace ? (url: string) => forTrace.text(url) : undefined;
    const gen = runTurn({
      agent,
      prior: prior && {
        status: prior.status,
        outcome: prior.outcome,
        capability: prior.capability,
        phase: prior.phase,
        flow: prior.flow,
        turnCount: prior.turnCount,
      },
      conversationId: t.conversationId,
      message: t.message,
      context: t.context,
      userId: t.userId,
      turnIndex: t.turnIndex,
      now: t.now,
      secrets: t.secrets,
      budget,
      maxReplyBytes: this.opts.maxReplyBytes,
      score,
      llm: this.modelRouting,
      embeddings: this.embeddingsFor(agent),
      history: t.history,
      llmTokenBudget: this.opts.llmTokensPerConversation,
      llmConfigured: this.opts.gate !== undefined,
    });
    let s = performance.now();
    let step = gen.next();
    stepsMs += msSince(s);
    while (!step.done) {
      const request = step.value;
      await t.beforeEffect();
      const a = performance.now();
      let reply: EngineReply;
      if (request.kind === 'action') {
        reply = await inSpan('switchboard.action', { 'switchboard.action': request.action.name }, () =>
          this.actions.run(request, { tenantId: t.tenantId, turnIndex: t.turnIndex, now: () => iso(this.clock.now()), traced }),
        );
        actionsMs += msSince(a);
      } else if (request.kind === 'llm_call') {
        reply = await inSpan('switchboard.llm', { 'switchboard.model': request.model ?? '' }, () =>
          this.models.call(request, t.tenantId, stream, agent, forModel),
        );
        modelMs += msSince(a);
      } else if (request.kind === 'embed') {
        reply = await inSpan('switchboard.routing.embeddings', {}, () => this.embedMessage(request, t.tenantId));
        if (reply.vector && reply.vector.length !== request.dims) this.agents.semanticMismatch(agent, reply.vector.length);
        llmMs += msSince(a);
      } else if (request.kind === 'retrieve') {
        reply = await inSpan('switchboard.knowledge', {}, () => this.retrieve(request, t.tenantId, agent));
      } else {
        reply = await inSpan('switchboard.routing.llm', {}, () => this.routeWithModel(request, t.tenantId));
        llmMs += msSince(a);
      }
      s = performance.now();
      step = gen.next(reply);
      stepsMs += msSince(s);
    }
    this.opts.renderBudgets.charge(t.tenantId, budget);
    if (stream) {
      // What the client has been sent cannot be taken back: the turn must not start again after it.
      await t.beforeEffect();
      stream.sync(step.value.reply);
    }
    const round = (x: number) => Math.round(x * 100) / 100;
    return {
      result: step.value,
      routingMs: round(scoringMs + llmMs),
      engineMs: round(Math.max(0, stepsMs - scoringMs)),
      actionsMs,
      llmMs: round(modelMs),
    };
  }

  /** Whether messages the embedded router cannot place go to the model. */
  get modelRouting(): boolean {
    return this.opts.llm !== undefined;
  }

  /** With server embeddings: their model, and why this compiled version has no router of them yet. */
  embeddingsFor(agent: CompiledAgent): TurnInput['embeddings'] {
    const e = this.opts.embeddings;
    return e ? { model: e.model, unavailable: this.agents.semanticUnavailable(agent) } : undefined;
  }

  /** A routed message's embedding from the model server, metered for the tenant (replays ask it as live conversations do). */
  embedMessage(req: EmbedRequest, tenantId: string): Promise<EmbedReply> {
    const e = this.opts.embeddings;
    if (!e) return Promise.resolve({ vector: null, model: 'none', durationMs: 0, error: 'no embeddings model is configured (LLM_EMBEDDINGS_MODEL)' });
    return e.embedMessage(tenantId, req.text);
  }

  /** A search of the agent's knowledge sources for an answer or generative phase (replays search as live conversations do). */
  async retrieve(req: RetrieveRequest, tenantId: string, agent: CompiledAgent): Promise<RetrieveReply> {
    const s = performance.now();
    const knowledge = this.opts.knowledge;
    if (!knowledge || !agent.knowledgeSources) return { retrieved: [], sources: [], durationMs: 0, error: 'the agent names no knowledge sources' };
    const durationMs = () => Math.round((performance.now() - s) * 100) / 100;
    try {
      const { found, sources } = await knowledge.search(tenantId, agent.knowledgeSources, req.query, req.k, agent.knowledgeSnapshot);
      return { retrieved: found, sources, durationMs: durationMs() };
    } catch (err) {
      // An index that cannot be built, or a database out of reach: the phase goes on as found-nothing, the error audited.
      if (err instanceof UnavailableError) return { retrieved: [], sources: [], durationMs: durationMs(), error: err.message };
      throw err;
    }
  }

  /** The routing fallback's answer, metered for the tenant (replays ask it as live conversations do). */
  routeWithModel(req: LlmRouteRequest, tenantId: string): Promise<LlmRouteReply> {
    const { llm, gate } = this.opts;
    if (!llm || !gate) return Promise.resolve({ capability: null, model: 'none', durationMs: 0, error: 'no provider' });
    return llm.route(req, (r) => gate.complete(tenantId, r));
  }
}
