// One turn's state and what every step of a turn shares: the flow being advanced, what the turn
// says, its audit entries, its render budget, and the engine's request and result types.
// No I/O and no clock: action and model calls are yielded to the caller, which sends their
// results back in, and `now` comes in with the input.
import type { Citation, ContextEnvelope, ConversationStatus, Option } from '@switchboard/contract';
import type { Found } from './knowledge.js';
import type { ActionResult, AuditDraft, FlowState } from '../domain.js';
import { DEFAULT_MAX_REPLY_BYTES, type CompiledAction, type CompiledAgent, type CompiledCapability, type CompiledPhase } from './compile.js';
import { cutUtf8 } from '../lib/utf8.js';
import { prefillSlots, type Prefill } from './prefill.js';
import { isTimeZone, type DateFrame } from './dates.js';
import type { Scored } from './router/index.js';
import { RenderBudget, RenderBudgetExceeded, type CompiledCondition, type CompiledText, type Scope } from './templates.js';

export interface RouteDecision {
  capability: CompiledCapability;
  /** True when the best match is a capability the user is not entitled to. */
  notEntitled: boolean;
  audit: Record<string, unknown>;
}

export interface TurnInput {
  agent: CompiledAgent;
  /** The conversation before this turn; null for a new one. */
  prior: {
    status: ConversationStatus;
    /** The conversation's outcome so far (kept by a turn that does not change its status). */
    outcome?: string | null;
    capability: string;
    phase: string;
    flow: FlowState;
    turnCount: number;
  } | null;
  conversationId: string;
  message: string;
  context: ContextEnvelope | null;
  userId: string | null;
  /** Index of this turn's user turn in the conversation's turns. */
  turnIndex: number;
  now: string;
  /** The secrets granted to the conversation's tenant (operator grants and the tenant's own). */
  secrets: Readonly<Record<string, string>>;
  /** What all rendering in this turn may spend (time, output, memory); a fresh default when absent. */
  budget?: RenderBudget;
  /** The most the turn may say, in UTF-8 bytes; what goes past it is cut and audited. */
  maxReplyBytes?: number;
  /**
   * Scores the message against the routable capabilities (the service times it): with the
   * agent's router of server embeddings when the message's embedding is given, else its own.
   */
  score: (message: string, embedding?: Float32Array) => Scored;
  /**
   * The server routes with a model server's embeddings (LLM_EMBEDDINGS_MODEL): the engine asks
   * for the message's when the agent has a router of them; `unavailable` says why it has none yet.
   */
  embeddings?: { model: string; unavailable: string | null };
  /** Ask the LLM provider about messages the embedded router cannot place. */
  llm?: boolean;
  /** Earlier turns of the conversation, oldest first (as many as its generative phases send). */
  history?: { role: 'user' | 'agent'; message: string }[];
  /** Input and output tokens the conversation may spend on model calls (0 or absent: no cap). */
  llmTokenBudget?: number;
  /** Whether the server has a model for generative phases (templates read it as `llm.configured`). */
  llmConfigured?: boolean;
  /**
   * The message is one kept masked (a replay's): a message that is only a privacy placeholder
   * ([EMAIL], [CARD …1111], [DATE_OF_BIRTH]) fills the slot waiting for it, whatever its type, as
   * the real value did in the live turn.
   */
  placeholders?: boolean;
}

/** A rendered HTTP request the engine asks the caller to make. */
export interface ActionRequest {
  kind: 'action';
  action: CompiledAction;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** The same request rendered with every secret replaced by a mask: what audit entries and logs show. */
  masked: { url: string; headers: Record<string, string>; body: unknown };
  /** The secret values this request carries, for masking them in what comes back. */
  secretValues: string[];
  /** `tool`: a generative phase's model called the action. */
  via?: 'tool';
}

/** What the caller sends back for an ActionRequest: the result, and its action_call audit entry. */
export interface ActionReply {
  result: ActionResult;
  audit: AuditDraft;
}

/** A low-confidence message the engine asks the caller to resolve with the LLM provider. */
export interface LlmRouteRequest {
  kind: 'llm_route';
  message: string;
  candidates: { name: string; description: string | null; examples: string[] }[];
}

/** A message whose embedding the engine asks the caller for (routing with server embeddings). */
export interface EmbedRequest {
  kind: 'embed';
  text: string;
  /** The length of embedding the router of server embeddings was trained on. */
  dims: number;
}

/** The message's embedding, L2-normalised, or why there is none. */
export interface EmbedReply {
  vector: Float32Array | null;
  model: string;
  durationMs: number;
  error?: string;
  /** `llm_budget_exceeded`: the tenant's daily tokens are spent; `llm_error` otherwise. */
  code?: 'llm_error' | 'llm_budget_exceeded';
}

/** The provider's choice (null: none fits), or why it could not answer. */
export interface LlmRouteReply {
  capability: string | null;
  model: string;
  durationMs: number;
  error?: string;
}

/** A Chat Completions message: the subset the engine writes. */
export type LlmMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** A tool offered to the model: an action with `parameters`, or a built-in. */
export interface LlmTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A model call of a generative phase, which the caller makes with the provider. */
export interface LlmCallRequest {
  kind: 'llm_call';
  /** The agent's `llm.model`; null for the provider's own. */
  model: string | null;
  temperature: number;
  maxTokens: number;
  messages: LlmMessage[];
  tools: LlmTool[];
  /** What the turn said before this call: a streamed reply sends it ahead of the model's words. */
  said: string;
  /** The answer is checked before it is said (a grounded phase): not streamed as the model writes it. */
  hold?: boolean;
}

/** A model's answer to one call. */
export interface LlmAnswer {
  model: string;
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  inputTokens: number;
  outputTokens: number;
}

/** What the model answered, or why there is no answer (`llm_budget_exceeded`: the tenant's daily tokens are spent). */
export type LlmCallReply =
  | (LlmAnswer & { ok: true; durationMs: number; streamed: boolean })
  | { ok: false; code: 'llm_error' | 'llm_budget_exceeded'; error: string; model: string; durationMs: number };

/** A search of the agent's knowledge sources, which the caller makes over the tenant's passages. */
export interface RetrieveRequest {
  kind: 'retrieve';
  query: string;
  /** Passages wanted, best first. */
  k: number;
}

/** The passages found, the sources searched, and the search's time; `error` when the sources could not be searched. */
export interface RetrieveReply {
  retrieved: Found[];
  sources: string[];
  durationMs: number;
  error?: string;
}

export type EngineRequest = ActionRequest | LlmRouteRequest | LlmCallRequest | EmbedRequest | RetrieveRequest;
export type EngineReply = ActionReply | LlmRouteReply | LlmCallReply | EmbedReply | RetrieveReply;

export interface TurnResult {
  status: ConversationStatus;
  outcome: string | null;
  capability: CompiledCapability;
  phase: string;
  awaitingInput: boolean;
  flow: FlowState;
  reply: string;
  options: Option[];
  /** The passages the reply quotes or the model cited. */
  citations: Citation[];
  audit: AuditDraft[];
}

/** Where the user's "today" is: the context's preferences.time_zone when it names a known zone, else the agent's. */
function timeZoneOf(context: ContextEnvelope | null, fallback: string): string {
  const tz = context?.context?.preferences?.time_zone;
  return typeof tz === 'string' && isTimeZone(tz) ? tz : fallback;
}

function languageOf(context: ContextEnvelope | null, fallback: string): string {
  const lang = context?.context?.preferences?.language;
  return typeof lang === 'string' && lang ? lang.toLowerCase() : fallback;
}

/** Whether a capability's `requires` gate holds for the context's entitlements. */

/** What one step of a turn decides: go on with the next step, jump to a phase, or end the turn with a result. */
export type StepOutcome = { kind: 'continue' } | { kind: 'goto'; idx: number } | { kind: 'stop'; result: TurnResult };
export type Step<A extends unknown[] = []> = (t: TurnState, ...args: A) => Generator<EngineRequest, StepOutcome, EngineReply>;

export const CONTINUE: StepOutcome = { kind: 'continue' };

/** Said when an escalation's own message cannot be rendered within the turn's budget. */
const ESCALATED_PLAIN = 'I am handing this conversation to a person, who will reply here.';

/** The turn under way: its flow, status, capability and phase, what it says and what it audits. */
export class TurnState {
  readonly agent: CompiledAgent;
  readonly lang: string;
  /** The user's time zone and language, for reading dates. */
  readonly dates: DateFrame;
  readonly budget: RenderBudget;
  readonly audit: AuditDraft[] = [];
  readonly flow: FlowState;
  status: ConversationStatus;
  outcome: string | null;
  capability: CompiledCapability;
  phaseId: string | null;
  options: Option[] = [];
  /** The passages this turn's reply came from. */
  readonly citations: Citation[] = [];
  /** The outcome a generative phase's `finish` gave in this turn (an `end: completed` without its own takes it). */
  finished: string | null = null;
  private readonly said: string[] = [];
  private readonly maxReply: number;
  private replyBytes = 0;
  private replyCut = false;

  constructor(readonly input: TurnInput) {
    const { agent, prior } = input;
    this.agent = agent;
    this.lang = languageOf(input.context, agent.defaultLanguage);
    this.dates = { timeZone: timeZoneOf(input.context, agent.timeZone), lang: this.lang };
    this.budget = input.budget ?? new RenderBudget();
    this.maxReply = input.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    this.flow = prior
      ? {
          slots: { ...prior.flow.slots },
          actions: { ...prior.flow.actions },
          attempts: prior.flow.attempts,
          wait: prior.flow.wait,
          ...(prior.flow.prefilled?.length ? { prefilled: [...prior.flow.prefilled] } : {}),
          ...(prior.flow.tokens ? { tokens: prior.flow.tokens } : {}),
          ...(prior.flow.answered ? { answered: true as const } : {}),
        }
      : { slots: {}, actions: {}, attempts: 0, wait: 'open' };
    this.status = prior ? prior.status : 'active';
    this.outcome = prior?.outcome ?? null;
    this.capability = prior ? (agent.capabilities.get(prior.capability) ?? agent.fallback) : agent.fallback;
    this.phaseId = prior ? prior.phase : null;
  }

  /**
   * Fills the capability's upcoming collects that the turn's message already answers
   * (engine/prefill.ts), audited as `slot_filled`; their phases are passed over once.
   */
  prefill(): void {
    delete this.flow.prefilled;
    // Matching slot patterns is work the tenant's definition causes: it draws on the turn's budget,
    // checked before each slot. Spent, nothing is prefilled (audited): the phases ask as usual.
    let found: Prefill[];
    try {
      found = this.budget.timed(() => prefillSlots(this.capability, this.input.message, new Date(this.input.now), this.dates, () => this.budget.checkpoint()));
    } catch (e) {
      if (!(e instanceof RenderBudgetExceeded)) throw e;
      this.budgetExceeded(e, null);
      return;
    }
    if (found.length === 0) return;
    for (const f of found) {
      this.flow.slots[f.slot] = f.value;
      this.note('slot_filled', { slot: f.slot, phase: f.phase, source: f.source, capability: this.capability.name });
    }
    this.flow.prefilled = found.map((f) => f.slot);
  }

  note(type: AuditDraft['type'], data: Record<string, unknown>, durationMs: number | null = null): void {
    this.audit.push({ type, turnIndex: this.input.turnIndex, timestamp: this.input.now, durationMs, data });
  }

  /** What the turn has said so far. */
  saidSoFar(): string {
    return this.said.join('\n');
  }

  /** A mark to take back what the turn says after it (a generative phase that fails says nothing). */
  sayMark(): { count: number; bytes: number } {
    return { count: this.said.length, bytes: this.replyBytes };
  }

  unsay(mark: { count: number; bytes: number }): void {
    this.said.length = Math.min(this.said.length, mark.count);
    this.replyBytes = mark.bytes;
  }

  /** Adds to what the turn says, up to its cap: the first text past it is cut at a character boundary. */
  say(text: string): void {
    if (this.replyCut) return;
    const bytes = Buffer.byteLength(text) + (this.said.length ? 1 : 0);
    if (this.replyBytes + bytes <= this.maxReply) {
      this.said.push(text);
      this.replyBytes += bytes;
      return;
    }
    this.replyCut = true;
    const room = Math.max(0, this.maxReply - this.replyBytes - (this.said.length ? 1 : 0));
    const cut = cutUtf8(text, room);
    if (cut) this.said.push(cut);
    this.note('error', { code: 'reply_limit', message: `the reply was cut at ${this.maxReply} bytes` });
  }

  /** The names templates read; `secrets` only for action requests. */
  scope(secrets?: Readonly<Record<string, string>>, args?: unknown): Scope {
    const { input } = this;
    const user = input.context?.context?.identity ?? {};
    return {
      slots: this.flow.slots,
      actions: this.flow.actions,
      user: { id: input.userId, name: user.user_name ?? null, email: user.user_email ?? null },
      context: input.context?.context ?? {},
      message: input.message,
      conversation: { id: input.conversationId, turn_count: (input.prior?.turnCount ?? 0) + 1 },
      llm: { configured: input.llmConfigured ?? false },
      ...(secrets ? { secrets } : {}),
      ...(args !== undefined ? { args } : {}),
    };
  }

  /**
   * A text in the turn's language; one that fails at render time says nothing and is audited.
   * A spent render budget is not such a failure: it ends the phase (RenderBudgetExceeded).
   */
  text(t: CompiledText): string {
    try {
      return t.render(this.scope(), this.lang, this.agent.defaultLanguage, this.budget);
    } catch (e) {
      if (e instanceof RenderBudgetExceeded) throw e;
      this.note('error', { code: 'template_error', message: (e as Error).message.split('\n')[0] });
      return '';
    }
  }

  holds(c: CompiledCondition): boolean {
    try {
      return c.holds(this.scope(), this.budget);
    } catch (e) {
      if (e instanceof RenderBudgetExceeded) throw e;
      this.note('error', { code: 'condition_error', message: (e as Error).message.split('\n')[0], condition: c.source });
      return false;
    }
  }

  /**
   * The turn's render budget ran out: audited, then the reserve is granted for the error path's
   * texts. Returns false when even the reserve is spent (the caller then says a built-in text).
   */
  budgetExceeded(e: RenderBudgetExceeded, phase: string | null): boolean {
    this.note('error', {
      code: 'render_budget_exceeded',
      message: e.message,
      capability: this.capability.name,
      ...(phase ? { phase } : {}),
    });
    return this.budget.recover();
  }

  setStatus(to: ConversationStatus, reason: string, outcome: string | null): void {
    this.note('status_change', { from: this.status, to, reason, outcome });
    this.status = to;
    this.outcome = outcome;
  }

  renderOptions(p: CompiledPhase): Option[] {
    return p.options.map((o) => ({ label: this.text(o.label), value: o.value }));
  }

  /** The phase after `p` (its first branch that holds, else the next in the list), or null when the flow has run out. */
  nextOf(p: CompiledPhase, idx: number): number | null {
    const cap = this.capability;
    const following = idx + 1 < cap.phases.length ? cap.phases[idx + 1].id : null;
    let target = following;
    if (p.next !== null) {
      target = following;
      for (const b of p.next) {
        if (!b.when || this.holds(b.when)) {
          target = b.goto;
          break;
        }
      }
    }
    return target === null ? null : cap.phaseIndex.get(target)!;
  }

  result(awaitingInput: boolean): TurnResult {
    return {
      status: this.status,
      outcome: this.outcome,
      capability: this.capability,
      phase: this.phaseId ?? this.capability.phases[0].id,
      awaitingInput,
      flow: this.flow,
      reply: this.said.join('\n'),
      options: this.options,
      citations: this.citations,
      audit: this.audit,
    };
  }

  /** Hands the conversation to a person: audited, the escalated message said, nothing offered. */
  escalate(reason: string): TurnResult {
    this.setStatus('escalated', reason, 'escalated');
    this.flow.wait = 'closed';
    let message: string;
    try {
      message = this.text(this.agent.messages.escalated);
    } catch (e) {
      if (!(e instanceof RenderBudgetExceeded)) throw e;
      // Even the reserve is spent: the escalation still says something true, in plain words.
      message = ESCALATED_PLAIN;
    }
    this.say(message);
    this.options = [];
    return this.result(true);
  }

  stop(result: TurnResult): StepOutcome {
    return { kind: 'stop', result };
  }
}
