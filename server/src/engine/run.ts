// Runs one user turn of a conversation: routes it when needed, advances the capability's flow
// phase by phase (say, call, collect, branch, end) and returns the new state, the reply and the
// audit entries. No I/O and no clock: action calls are yielded to the caller, which sends their
// results back in, and `now` comes in with the input.
import type { ContextEnvelope, ConversationStatus, Option } from '@switchboard/contract';
import type { ActionResult, AuditDraft, FlowState } from '../domain.js';
import {
  DEFAULT_MAX_REPLY_BYTES,
  MAX_PHASES_PER_TURN,
  SECRET_MASK,
  type CompiledAction,
  type CompiledAgent,
  type CompiledCapability,
  type CompiledPhase,
} from './compile.js';
import type { Scored } from './router.js';
import { parseSlot } from './slots.js';
import { RenderBudget, renderJson, type CompiledCondition, type CompiledText, type Scope } from './templates.js';

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
  /** Scores the message against the routable capabilities (the service times it). */
  score: (message: string) => Scored;
  /** Ask the LLM provider about messages the embedded router cannot place. */
  llm?: boolean;
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

/** The provider's choice (null: none fits), or why it could not answer. */
export interface LlmRouteReply {
  capability: string | null;
  model: string;
  durationMs: number;
  error?: string;
}

export type EngineRequest = ActionRequest | LlmRouteRequest;
export type EngineReply = ActionReply | LlmRouteReply;

export interface TurnResult {
  status: ConversationStatus;
  outcome: string | null;
  capability: CompiledCapability;
  phase: string;
  awaitingInput: boolean;
  flow: FlowState;
  reply: string;
  options: Option[];
  audit: AuditDraft[];
}

export function languageOf(context: ContextEnvelope | null, fallback: string): string {
  const lang = context?.context?.preferences?.language;
  return typeof lang === 'string' && lang ? lang.toLowerCase() : fallback;
}

/** Whether a capability's `requires` gate holds for the context's entitlements. */
export function entitled(cap: CompiledCapability, context: ContextEnvelope | null): boolean {
  if (!cap.requires) return true;
  const ent = context?.context?.entitlements ?? {};
  return Object.entries(cap.requires).every(([key, allowed]) => {
    const v = Object.prototype.hasOwnProperty.call(ent, key) ? ent[key] : undefined;
    return allowed.some((a) => a === v || (typeof v === 'string' && String(a) === v));
  });
}

/**
 * Picks the capability for a message: the best one when its probability clears the threshold,
 * the message resembles one of its examples closely enough, and the user is entitled to it;
 * else the fallback.
 */
export function route(agent: CompiledAgent, scored: Scored, context: ContextEnvelope | null): RouteDecision {
  const threshold = agent.threshold;
  const ranked = scored.scores.map((s) => {
    const cap = agent.capabilities.get(s.name)!;
    return { cap, score: s.score, eligible: entitled(cap, context) };
  });
  const candidates = ranked.slice(0, 5).map((s) => ({
    capability: s.cap.name,
    score: s.score,
    eligible: s.eligible,
    ...(s.eligible ? {} : { reason: 'not_entitled' }),
  }));
  const best = ranked[0];
  const decide = (cap: CompiledCapability, score: number, strategy: string, reason: string, notEntitled = false): RouteDecision => ({
    capability: cap,
    notEntitled,
    audit: {
      strategy,
      selected: { capability: cap.name, capability_id: cap.id, score },
      candidates,
      threshold,
      similarity: scored.similarity,
      min_similarity: agent.minSimilarity,
      calibration: agent.router.calibration.method,
      reason,
      model: agent.router.model,
    },
  });
  if (!best) return decide(agent.fallback, 0, 'fallback', 'no_routable_capability');
  const clears = best.score >= threshold && scored.similarity >= agent.minSimilarity;
  if (!clears) return decide(agent.fallback, best.score, 'fallback', best.score >= threshold ? 'low_similarity' : 'below_threshold');
  if (!best.eligible) return decide(agent.fallback, best.score, 'fallback', 'not_entitled', true);
  if (best.cap === agent.fallback) return decide(best.cap, best.score, 'classifier', 'out_of_scope');
  return decide(best.cap, best.score, 'classifier', 'best_match');
}

function getPath(root: unknown, path: string[]): unknown {
  let cur = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

export function* runTurn(input: TurnInput): Generator<EngineRequest, TurnResult, EngineReply> {
  const { agent, prior, now, turnIndex } = input;
  const lang = languageOf(input.context, agent.defaultLanguage);
  const audit: AuditDraft[] = [];
  const note = (type: AuditDraft['type'], data: Record<string, unknown>, durationMs: number | null = null) =>
    audit.push({ type, turnIndex, timestamp: now, durationMs, data });

  const flow: FlowState = prior
    ? { slots: { ...prior.flow.slots }, actions: { ...prior.flow.actions }, attempts: prior.flow.attempts, wait: prior.flow.wait }
    : { slots: {}, actions: {}, attempts: 0, wait: 'open' };
  let status: ConversationStatus = prior ? prior.status : 'active';
  let outcome: string | null = prior?.outcome ?? null;
  let capability = prior ? (agent.capabilities.get(prior.capability) ?? agent.fallback) : agent.fallback;
  let phaseId: string | null = prior ? prior.phase : null;
  const said: string[] = [];
  let options: Option[] = [];
  const budget = input.budget ?? new RenderBudget();
  const maxReply = input.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
  let replyBytes = 0;
  let replyCut = false;
  // What the turn says, up to its cap: the first text past it is cut at a character boundary.
  const say = (t: string) => {
    if (replyCut) return;
    const bytes = Buffer.byteLength(t) + (said.length ? 1 : 0);
    if (replyBytes + bytes <= maxReply) {
      said.push(t);
      replyBytes += bytes;
      return;
    }
    replyCut = true;
    const room = Math.max(0, maxReply - replyBytes - (said.length ? 1 : 0));
    const cut = Buffer.from(t).subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
    if (cut) said.push(cut);
    note('error', { code: 'reply_limit', message: `the reply was cut at ${maxReply} bytes` });
  };

  const user = input.context?.context?.identity ?? {};
  const scope = (withSecrets?: Readonly<Record<string, string>>): Scope => ({
    slots: flow.slots,
    actions: flow.actions,
    user: { id: input.userId, name: user.user_name ?? null, email: user.user_email ?? null },
    context: input.context?.context ?? {},
    message: input.message,
    conversation: { id: input.conversationId, turn_count: (prior?.turnCount ?? 0) + 1 },
    ...(withSecrets ? { secrets: withSecrets } : {}),
  });
  // A template that fails at render time (a limit hit, a bad filter argument) says nothing and
  // is audited; the turn goes on.
  const text = (t: CompiledText): string => {
    try {
      return t.render(scope(), lang, agent.defaultLanguage, budget);
    } catch (e) {
      note('error', { code: 'template_error', message: (e as Error).message.split('\n')[0] });
      return '';
    }
  };
  const holds = (c: CompiledCondition): boolean => {
    try {
      return c.holds(scope(), budget);
    } catch (e) {
      note('error', { code: 'condition_error', message: (e as Error).message.split('\n')[0], condition: c.source });
      return false;
    }
  };
  const setStatus = (to: ConversationStatus, reason: string, out: string | null) => {
    note('status_change', { from: status, to, reason, outcome: out });
    status = to;
    outcome = out;
  };
  const renderOptions = (p: CompiledPhase): Option[] =>
    p.options.map((o) => ({ label: text(o.label), value: o.value }));
  const result = (awaitingInput: boolean): TurnResult => ({
    status,
    outcome,
    capability,
    phase: phaseId ?? capability.phases[0].id,
    awaitingInput,
    flow,
    reply: said.join('\n'),
    options,
    audit,
  });
  const escalate = (reason: string): TurnResult => {
    setStatus('escalated', reason, 'escalated');
    flow.wait = 'closed';
    say(text(agent.messages.escalated));
    options = [];
    return result(true);
  };

  if (!prior) note('status_change', { from: null, to: 'active', reason: 'created', outcome: null });

  // An escalated conversation belongs to a human: the turn is recorded and answered, nothing moves.
  if (status === 'escalated') {
    say(text(agent.messages.escalated));
    return result(true);
  }
  if (status === 'paused') setStatus('active', 'user_message', null);

  // Where the flow picks up: the phase after a filled collect, or a freshly routed capability.
  let start: number | null = null;
  if (flow.wait === 'collecting') {
    const idx = phaseId === null ? undefined : capability.phaseIndex.get(phaseId);
    const phase = idx === undefined ? undefined : capability.phases[idx];
    if (phase?.collect) {
      const parsed = parseSlot(phase.collect.spec, input.message, new Date(now));
      if (parsed.ok) {
        flow.slots[phase.collect.slot] = parsed.value;
        flow.attempts = 0;
        flow.wait = 'open';
        start = nextOf(phase, idx!);
        if (start === null) {
          // A collect with nowhere to go: the flow has run out of phases.
          return result(true);
        }
      } else if (agent.switchThreshold !== null) {
        // A message that does not fill the slot but plainly asks for something else moves there.
        const scored = input.score(input.message);
        const decision = route(agent, scored, input.context);
        const target = decision.capability;
        if (!decision.notEntitled && target !== capability && target !== agent.fallback && scored.scores[0].score >= agent.switchThreshold) {
          note('routing_decision', {
            ...decision.audit,
            reason: 'switch',
            from: { capability: capability.name, phase: phaseId },
            switch_threshold: agent.switchThreshold,
          });
          capability = target;
          flow.wait = 'open';
          flow.attempts = 0;
          start = 0;
        }
      }
      if (start === null && !parsed.ok) {
        flow.attempts += 1;
        if (flow.attempts >= phase.collect.maxAttempts) {
          note('error', { code: 'max_attempts', message: `slot "${phase.collect.slot}" not filled after ${flow.attempts} attempts` });
          return escalate('max_attempts');
        }
        say(text(phase.collect.retry ?? agent.messages.retry));
        if (phase.say) say(text(phase.say));
        options = renderOptions(phase);
        return result(true);
      }
    }
  }
  if (start === null) {
    let decision = route(agent, input.score(input.message), input.context);
    const unsure = decision.audit.reason === 'below_threshold' || decision.audit.reason === 'low_similarity';
    if (input.llm && unsure) {
      // The embedded router cannot place the message: ask the provider among the eligible capabilities.
      const eligible = agent.routable.filter((c) => entitled(c, input.context));
      const reply = (yield {
        kind: 'llm_route',
        message: input.message,
        candidates: eligible.map((c) => ({ name: c.name, description: c.description, examples: agent.examplesOf(c.name).slice(0, 5) })),
      }) as LlmRouteReply;
      const chosen = reply.capability ? eligible.find((c) => c.name === reply.capability) : undefined;
      const llm = { model: reply.model, duration_ms: reply.durationMs, answer: reply.capability };
      if (reply.error) {
        note('error', { code: 'llm_failed', message: reply.error, model: reply.model });
        decision = { ...decision, audit: { ...decision.audit, llm: { ...llm, error: reply.error } } };
      } else if (chosen) {
        const score = decision.audit.candidates as { capability: string; score: number }[];
        decision = {
          capability: chosen,
          notEntitled: false,
          audit: {
            ...decision.audit,
            strategy: 'llm',
            selected: { capability: chosen.name, capability_id: chosen.id, score: score.find((c) => c.capability === chosen.name)?.score ?? 0 },
            reason: 'llm',
            llm,
          },
        };
      } else {
        decision = { ...decision, audit: { ...decision.audit, llm } };
      }
    }
    note('routing_decision', decision.audit);
    if (decision.notEntitled) {
      const from = phaseId;
      capability = decision.capability;
      phaseId = 'not_entitled';
      note('phase_transition', { capability: capability.name, from, to: phaseId });
      flow.wait = 'open';
      flow.attempts = 0;
      say(text(agent.messages.not_entitled));
      return result(true);
    }
    capability = decision.capability;
    flow.attempts = 0;
    start = 0;
  }

  function nextOf(p: CompiledPhase, idx: number): number | null {
    const target = (() => {
      if (p.next === null) return idx + 1 < capability.phases.length ? capability.phases[idx + 1].id : null;
      for (const b of p.next) if (!b.when || holds(b.when)) return b.goto;
      return idx + 1 < capability.phases.length ? capability.phases[idx + 1].id : null;
    })();
    return target === null ? null : capability.phaseIndex.get(target)!;
  }

  let idx: number | null = start;
  let steps = 0;
  while (idx !== null) {
    const p: CompiledPhase = capability.phases[idx];
    if (++steps > MAX_PHASES_PER_TURN) {
      note('error', { code: 'phase_limit', message: `more than ${MAX_PHASES_PER_TURN} phases in one turn`, capability: capability.name, phase: p.id });
      return escalate('phase_limit');
    }
    note('phase_transition', { capability: capability.name, from: phaseId, to: p.id });
    phaseId = p.id;

    if (p.call) {
      const action = agent.actions.get(p.call)!;
      let request: ActionRequest | null = null;
      // A secret the tenant has not been granted reads exactly as one that does not exist.
      const missing = action.secrets.find((n) => !Object.prototype.hasOwnProperty.call(input.secrets, n));
      if (missing !== undefined) {
        note('error', { code: 'secret_unavailable', message: `secret "${missing}" is not available to this tenant`, action: action.name });
      } else {
        try {
          const real = Object.fromEntries(action.secrets.map((n) => [n, input.secrets[n]]));
          const masks = Object.fromEntries(action.secrets.map((n) => [n, SECRET_MASK]));
          const render = (sc: Scope) => ({
            url: action.url.render(sc, budget),
            headers: Object.fromEntries(action.headers.map(([h, t]) => [h, t.render(sc, budget)])),
            body: action.body ? renderJson(action.body, sc, budget) : undefined,
          });
          // Rendered twice: with the secrets for the wire, and with masks in their place for the
          // record, so no filter or echo can carry a secret into an audit entry.
          const wire = render(scope(real));
          request = { kind: 'action', action, method: action.method, ...wire, masked: render(scope(masks)), secretValues: Object.values(real) };
        } catch (e) {
          note('error', { code: 'template_error', message: (e as Error).message.split('\n')[0], action: action.name });
        }
      }
      const reply: ActionReply = request
        ? ((yield request) as ActionReply)
        : { result: { ok: false, status: 0, body: null }, audit: { type: 'error', turnIndex, timestamp: now, durationMs: null, data: { code: 'action_not_sent', message: `action "${action.name}" could not be rendered`, action: action.name } } };
      audit.push(reply.audit);
      flow.actions[action.name] = reply.result;
      if (reply.result.ok) {
        for (const [slot, path] of action.save) {
          const v = getPath(reply.result, path);
          if (v !== undefined) flow.slots[slot] = v;
        }
      } else {
        if (p.onError === 'escalate') return escalate('action_failed');
        idx = capability.phaseIndex.get(p.onError)!;
        continue;
      }
    }
    if (p.say) say(text(p.say));
    if (p.collect) {
      flow.wait = 'collecting';
      flow.attempts = 0;
      options = renderOptions(p);
      return result(true);
    }
    if (p.end) {
      options = renderOptions(p);
      flow.wait = p.end === 'paused' ? 'open' : 'closed';
      if (p.end === 'completed') setStatus('completed', 'flow_end', p.outcome);
      else if (p.end === 'escalated') setStatus('escalated', 'flow_end', 'escalated');
      else setStatus('paused', 'flow_end', null);
      return result(p.end !== 'completed');
    }
    const next = nextOf(p, idx);
    if (next === null) {
      // Out of phases without an end: back to routing on the next message.
      flow.wait = 'open';
      options = renderOptions(p);
      return result(true);
    }
    idx = next;
  }
  return result(true);
}

