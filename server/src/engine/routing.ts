// Routing a message: scoring against the routable capabilities, the entitlement gate, the
// fallback, and (when the embedded router cannot place a message) the model provider.
import type { ContextEnvelope } from '@switchboard/contract';
import type { CompiledAgent, CompiledCapability, SemanticRouter } from './compile.js';
import type { Scored } from './router/index.js';
import type { EmbedReply, EngineReply, EngineRequest, LlmRouteReply, RouteDecision, Step, TurnState } from './turn.js';

/**
 * How much likelier than the best capability the background class must be to take a message.
 * The classifier is unsure between few-example capabilities and a broad background; a margin
 * keeps in-scope messages that resemble everyday talk (docs/routing.md has the measurements).
 */
const BACKGROUND_MARGIN = 5;

function entitled(cap: CompiledCapability, context: ContextEnvelope | null): boolean {
  if (!cap.requires) return true;
  const ent = context?.context?.entitlements ?? {};
  return Object.entries(cap.requires).every(([key, allowed]) => {
    const v = Object.prototype.hasOwnProperty.call(ent, key) ? ent[key] : undefined;
    return allowed.some((a) => a === v || (typeof v === 'string' && String(a) === v));
  });
}

/** Scores a message with the agent's router of server embeddings when its embedding is given, else with its own router. */
export function scoreWith(agent: CompiledAgent, message: string, embedding?: Float32Array): Scored {
  return embedding && agent.semantic ? agent.semantic.router.score(message, embedding) : agent.router.score(message);
}

/**
 * Picks the capability for a message: the best one when its probability clears the threshold,
 * the message resembles one of its examples closely enough, and the user is entitled to it;
 * else the fallback.
 */
export function route(agent: CompiledAgent, scored: Scored, context: ContextEnvelope | null, semantic?: SemanticRouter): RouteDecision {
  const threshold = semantic?.threshold ?? agent.threshold;
  const minSimilarity = semantic?.minSimilarity ?? agent.minSimilarity;
  const router = semantic?.router ?? agent.router;
  const ranked = scored.scores.map((s) => {
    // The agent's out-of-scope messages are a class under the built-in fallback's name (compile.ts routingInput).
    const cap = agent.capabilities.get(s.name) ?? (agent.fallback.builtin && s.name === agent.fallback.name ? agent.fallback : undefined);
    if (!cap) throw new Error(`the router scores "${s.name}", which the agent does not have`);
    return { cap, score: s.score, eligible: entitled(cap, context) };
  });
  const candidates = ranked.slice(0, 5).map((s) => ({
    capability: s.cap.name,
    score: s.score,
    eligible: s.eligible,
    ...(s.eligible ? {} : { reason: 'not_entitled' }),
  }));
  const best = ranked.at(0);
  const decide = (cap: CompiledCapability, score: number, strategy: string, reason: string, notEntitled = false): RouteDecision => ({
    capability: cap,
    notEntitled,
    audit: {
      strategy,
      selected: { capability: cap.name, capability_id: cap.id, score },
      candidates,
      threshold,
      similarity: scored.similarity,
      min_similarity: minSimilarity,
      calibration: router.calibration.method,
      reason,
      model: router.model,
      ...(agent.lexical && !semantic ? { lexical: agent.lexical } : {}),
      ...(scored.background !== undefined ? { background: scored.background } : {}),
    },
  });
  if (!best) return decide(agent.fallback, 0, 'fallback', 'no_routable_capability');
  // The implicit background class (everyday messages), weighed as a capability of average size,
  // is BACKGROUND_MARGIN times likelier than the best capability.
  if (scored.background !== undefined && scored.background > BACKGROUND_MARGIN * best.score) {
    return decide(agent.fallback, best.score, 'fallback', 'background');
  }
  const clears = best.score >= threshold && scored.similarity >= minSimilarity;
  if (!clears) return decide(agent.fallback, best.score, 'fallback', best.score >= threshold ? 'low_similarity' : 'below_threshold');
  if (!best.eligible) return decide(agent.fallback, best.score, 'fallback', 'not_entitled', true);
  if (best.cap === agent.fallback) return decide(best.cap, best.score, 'classifier', 'out_of_scope');
  return decide(best.cap, best.score, 'classifier', 'best_match');
}

/**
 * Routes the turn's message to a capability: the embedded router's choice, or the model's when
 * the router is unsure and a provider is configured. A capability the user is not entitled to
 * ends the turn with the agent's not_entitled message; otherwise the flow starts at phase 0.
 */
export const routeMessage: Step = function* (t: TurnState) {
  const { agent, input } = t;
  let decision = yield* scoreMessage(t);
  const unsure = decision.audit.reason === 'below_threshold' || decision.audit.reason === 'low_similarity' || decision.audit.reason === 'background';
  if (input.llm && unsure) decision = yield* askModel(t, decision);
  t.note('routing_decision', decision.audit);
  delete t.flow.prefilled;
  if (decision.notEntitled) {
    const from = t.phaseId;
    t.capability = decision.capability;
    t.phaseId = 'not_entitled';
    t.note('phase_transition', { capability: t.capability.name, from, to: t.phaseId });
    t.flow.wait = 'open';
    t.flow.attempts = 0;
    t.say(t.text(agent.messages.not_entitled));
    return t.stop(t.result(true));
  }
  t.capability = decision.capability;
  t.flow.attempts = 0;
  t.prefill();
  return { kind: 'goto', idx: 0 };
};

/**
 * The router's decision on the turn's message: with the model server's embedding of it when the
 * agent has a router of server embeddings, else (no such router yet, or no embedding within the
 * time and budget allowed: an `embeddings_failed` error entry) with the agent's own router. The
 * decision's `embeddings` says which, and why.
 */
function* scoreMessage(t: TurnState): Generator<EngineRequest, RouteDecision, EngineReply> {
  const { agent, input } = t;
  const server = input.embeddings;
  const semantic = agent.semantic;
  let failed: EmbedReply | null = null;
  if (server && semantic) {
    const dims = semantic.router.dims;
    const reply = (yield { kind: 'embed', text: input.message, dims }) as EmbedReply;
    if (reply.vector && reply.vector.length === dims) {
      const decision = route(agent, input.score(input.message, reply.vector), input.context, semantic);
      decision.audit.embeddings = { model: reply.model, duration_ms: reply.durationMs };
      return decision;
    }
    // An embedding of another length: the model behind the name changed (the service trains the
    // router of server embeddings again); this message is routed by the agent's own router.
    failed = reply.vector
      ? {
          ...reply,
          vector: null,
          code: 'llm_error',
          error: `the model server answered an embedding of ${reply.vector.length} numbers for a router of ${dims}: the router of server embeddings is trained again`,
        }
      : reply;
    t.note('error', {
      code: failed.code === 'llm_budget_exceeded' ? 'llm_budget_exceeded' : 'embeddings_failed',
      message: failed.error ?? 'no embedding',
      model: failed.model,
    });
  }
  const decision = route(agent, input.score(input.message), input.context);
  if (failed) decision.audit.embeddings = { model: failed.model, duration_ms: failed.durationMs, error: failed.error ?? 'no embedding' };
  else if (server) decision.audit.embeddings = { model: server.model, unavailable: server.unavailable ?? 'the router of server embeddings is not trained yet' };
  return decision;
}

/** Asks the provider to place a message among the eligible capabilities; its failure keeps the router's decision. */
function* askModel(t: TurnState, decision: RouteDecision): Generator<EngineRequest, RouteDecision, EngineReply> {
  const { agent, input } = t;
  const eligible = agent.routable.filter((c) => entitled(c, input.context));
  const reply = (yield {
    kind: 'llm_route',
    message: input.message,
    candidates: eligible.map((c) => ({ name: c.name, description: c.description, examples: agent.examplesOf(c.name).slice(0, 5) })),
  }) as LlmRouteReply;
  const chosen = reply.capability ? eligible.find((c) => c.name === reply.capability) : undefined;
  const llm = { model: reply.model, duration_ms: reply.durationMs, answer: reply.capability };
  if (reply.error) {
    t.note('error', { code: 'llm_failed', message: reply.error, model: reply.model });
    return { ...decision, audit: { ...decision.audit, llm: { ...llm, error: reply.error } } };
  }
  if (!chosen) return { ...decision, audit: { ...decision.audit, llm } };
  const scores = decision.audit.candidates as { capability: string; score: number }[];
  return {
    capability: chosen,
    notEntitled: false,
    audit: {
      ...decision.audit,
      strategy: 'llm',
      selected: { capability: chosen.name, capability_id: chosen.id, score: scores.find((c) => c.capability === chosen.name)?.score ?? 0 },
      reason: 'llm',
      llm,
    },
  };
}
