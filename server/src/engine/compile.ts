// Compiles an agent definition validate.ts found sound, once per version: parsed templates,
// phase indexes and the trained router.
import type { ValidateFunction } from 'ajv';
import { v5 as uuidv5 } from 'uuid';
import type { AgentDefinition, CapabilityDef, FillDef, GenerateDef, PhaseDef } from '@switchboard/contract';
import { KnowledgeIndex } from './knowledge-index.js';
import { embedderFor, Router, ROUTER_MODEL, type DenseTable, type RoutableCapability } from './router/index.js';
import { NO_VECTORS, type LexicalReason, type VectorsStatus } from './word-vectors.js';
import { choiceWords, type SlotSpec } from './slots.js';
export { validateDefinition } from './validate.js';
export { compilePattern } from './patterns.js';
import { BUILTIN_FALLBACK, schemaValidator } from './validate.js';
import { compilePattern } from './patterns.js';
import { CompiledCondition, CompiledTemplate, CompiledText, compileJson, templateReads, type JsonTemplate } from './templates.js';

export const MAX_PHASES_PER_TURN = 50;
/** What one turn may say unless the operator sets MAX_REPLY_BYTES. */
export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024;
/** What audit entries and logs show in place of a secret. */
export const SECRET_MASK = '***';

const DEFAULT_MESSAGES = {
  fallback: "Sorry, I can't help with that yet.",
  escalated: 'A colleague will take over here shortly.',
  not_entitled: 'That is not part of your plan.',
  retry: "Sorry, I didn't get that.",
} as const;

/** Probability a switch away from a waiting collect needs, unless the agent says otherwise. */
const DEFAULT_SWITCH_THRESHOLD = 0.8;

export interface CompiledPhase {
  id: string;
  say?: CompiledText;
  options: { label: CompiledText; value: string }[];
  collect?: { slot: string; spec: SlotSpec; retry?: CompiledText; maxAttempts: number; prefill: boolean };
  call?: string;
  onError: string; // a phase id or "escalate"
  next: { goto: string; when?: CompiledCondition }[] | null;
  end?: 'completed' | 'escalated' | 'paused';
  /** The author's outcome for `end: completed`; null: what `finish` gave, else "resolved". */
  outcome: string | null;
  generate?: CompiledGenerate;
  /** An answer phase: the best passages of the knowledge sources (docs/knowledge.md). */
  answer?: { minConfidence: number; passages: number; notFound: string };
}

/** How much of a question the best passage must hold for an answer phase to say it, unless the phase says otherwise. */
const DEFAULT_MIN_CONFIDENCE = 0.7;

/** A generative phase (docs/generative.md). */
export interface CompiledGenerate {
  instructions: CompiledText;
  /** Actions offered as tools. */
  tools: string[];
  knowledge: boolean;
  fills: Map<string, SlotSpec>;
  maxSteps: number;
  history: number;
  /** Answers checked against the passages they cite (null: the default, grounded when the phase reads knowledge sources). */
  grounded: boolean | null;
  minSupport: number;
}

export interface CompiledCapability {
  name: string;
  id: string;
  description: string | null;
  requires: Record<string, (string | number | boolean)[]> | null;
  phases: CompiledPhase[];
  phaseIndex: Map<string, number>;
  builtin: boolean;
}

export interface CompiledAction {
  name: string;
  method: string;
  url: CompiledTemplate;
  headers: [string, CompiledTemplate][];
  body: JsonTemplate | null;
  /** Names of the secrets its url, headers and body read. */
  secrets: string[];
  timeoutMs: number;
  retries: number;
  save: [string, string[]][];
  /** For a model offered the action as a tool. */
  description: string | null;
  parameters: Record<string, unknown> | null;
  /** Checks a tool call's arguments against `parameters` (Ajv, with linear-time patterns). */
  validate: ValidateFunction | null;
}

export interface CompiledAgent {
  agentId: string;
  version: number;
  definition: AgentDefinition;
  defaultLanguage: string;
  /** Where "today" is for dates when the context names no time zone (IANA; UTC by default). */
  timeZone: string;
  /** The author's routing.threshold, else the router's calibrated one. */
  threshold: number;
  /** The author's routing.min_similarity, else the router's calibrated one. */
  minSimilarity: number;
  /** Mid-flow switching: null when off, else the probability a switch needs. */
  switchThreshold: number | null;
  capabilities: Map<string, CompiledCapability>;
  /** Capabilities with examples, in definition order. */
  routable: CompiledCapability[];
  fallback: CompiledCapability;
  actions: Map<string, CompiledAction>;
  messages: Record<keyof typeof DEFAULT_MESSAGES, CompiledText>;
  router: Router;
  /**
   * The router of a model server's embeddings (LLM_EMBEDDINGS_MODEL), beside `router`, which
   * answers whenever it cannot: set by the service once it is trained or loaded (null: none yet).
   */
  semantic: SemanticRouter | null;
  /** Why the router is lexical alone where word vectors could have been used (null: it uses them). */
  lexical: LexicalReason | null;
  /** Secrets any of its actions read (fetched for the tenant only when there are some). */
  secretNames: string[];
  /** Approximate bytes this compiled version holds in memory (the cache is bounded by them). */
  bytes: number;
  /** A capability's routing examples (for the LLM provider's prompt). */
  examplesOf(name: string): string[];
  /** The agent's `llm` defaults for model calls. */
  llm: { model: string | null; temperature: number; maxOutputTokens: number };
  /** Passages of the agent's `knowledge`, indexed; null without any. */
  knowledge: KnowledgeIndex | null;
  /** The tenant's knowledge sources its answer and generative phases search (names and tags); null without any. */
  knowledgeSources: { names: string[]; tags: string[] } | null;
  /** The knowledge snapshot the version pins (set by whoever knows the stored version); null: the sources as they are now. */
  knowledgeSnapshot: number | null;
  /** The most earlier turns any generative phase sends (0: none has one). */
  historyTurns: number;
}

/** Stable per agent and capability name, across versions. */
export function capabilityId(agentId: string, name: string): string {
  return uuidv5(`capability:${name}`, agentId);
}

/** Every string inside a JSON value (the templates of an action body). */
function jsonStrings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(jsonStrings);
  if (v && typeof v === 'object') return Object.values(v).flatMap(jsonStrings);
  return [];
}

function compilePhase(p: PhaseDef): CompiledPhase {
  const options = (p.options ?? []).map((o) => ({ label: CompiledText.from(o.label), value: o.value }));
  let collect: CompiledPhase['collect'];
  if (p.collect) {
    const c = p.collect;
    const labels = options.map((o) => ({ value: o.value, labels: o.label.variants().map((v) => v.source) }));
    collect = {
      slot: c.slot,
      spec: {
        type: c.type,
        pattern: c.pattern !== undefined ? compilePattern(c.pattern) : undefined,
        choices: c.type === 'choice' ? choiceWords(c.choices, labels) : undefined,
        min: c.min,
        max: c.max,
      },
      prefill: c.prefill !== false,
      retry: c.retry !== undefined ? CompiledText.from(c.retry) : undefined,
      maxAttempts: c.max_attempts,
    };
  }
  return {
    id: p.id,
    say: p.say !== undefined ? CompiledText.from(p.say) : undefined,
    options,
    collect,
    call: p.call,
    onError: p.on_error ?? 'escalate',
    next:
      p.next === undefined
        ? null
        : typeof p.next === 'string'
          ? [{ goto: p.next }]
          : p.next.map((b) => ({ goto: b.goto, when: b.if !== undefined ? new CompiledCondition(b.if) : undefined })),
    end: p.end,
    outcome: p.outcome ?? null,
    generate: p.generate ? compileGenerate(p.generate) : undefined,
    answer: p.answer
      ? { minConfidence: p.answer.min_confidence ?? DEFAULT_MIN_CONFIDENCE, passages: p.answer.passages, notFound: p.answer.not_found }
      : undefined,
  };
}

function slotSpec(f: FillDef): SlotSpec {
  return {
    type: f.type,
    pattern: f.pattern !== undefined ? compilePattern(f.pattern) : undefined,
    choices: f.type === 'choice' ? choiceWords(f.choices, []) : undefined,
    min: f.min,
    max: f.max,
  };
}

function compileGenerate(g: GenerateDef): CompiledGenerate {
  return {
    instructions: CompiledText.from(g.instructions),
    tools: g.tools ?? [],
    knowledge: g.knowledge,
    fills: new Map(Object.entries(g.fills ?? {}).map(([slot, f]) => [slot, slotSpec(f)])),
    maxSteps: g.max_steps,
    history: g.history,
    grounded: g.grounded ?? null,
    minSupport: g.min_support ?? 0.6,
  };
}

function compileCapability(agentId: string, c: CapabilityDef): CompiledCapability {
  const phases = c.phases.map(compilePhase);
  return {
    name: c.name,
    id: capabilityId(agentId, c.name),
    description: c.description ?? null,
    requires: c.requires ?? null,
    phases,
    phaseIndex: new Map(phases.map((p, i) => [p.id, i])),
    builtin: false,
  };
}

/**
 * Trains a router; by default here, yielding as it goes (the server passes a worker pool's).
 * `vectors`: whether the definition's language lets the process's word vectors (English) be used.
 */
export type TrainRouter = (caps: RoutableCapability[], outOfScope: string | null, vectors: boolean | DenseTable) => Promise<Router>;

/** Trains here, with these word vectors for English definitions. */
const trainHere =
  (words: VectorsStatus): TrainRouter =>
  (caps, outOfScope, vectors) =>
    Router.train(caps, { outOfScope, vectors: embedderFor(vectors, words.vectors) });

/** The word vectors are English: an agent in another language routes lexically. */
function english(def: AgentDefinition): boolean {
  return /^en(?:$|[-_])/i.test(def.default_language);
}

/** A router of a model server's embeddings, with the thresholds it routes by. */
export interface SemanticRouter {
  router: Router;
  /** The author's routing.threshold, else this router's calibrated one. */
  threshold: number;
  /** The author's routing.min_similarity, else this router's calibrated one. */
  minSimilarity: number;
}

/**
 * What a definition's router is trained on: its capabilities with examples (the description counts
 * as one) and the fallback's name. The agent's out-of-scope messages (routing.out_of_scope) are
 * examples of its fallback capability when that has examples; else they are a class of their own
 * under the built-in fallback's name, beside the router's class of everyday messages (a message
 * it wins is routed to the built-in fallback, as out of scope).
 */
export function routingInput(def: AgentDefinition): { caps: RoutableCapability[]; outOfScope: string | null } {
  const outOfScope = def.routing?.fallback ?? null;
  const extra = def.routing?.out_of_scope ?? [];
  const fallbackRoutes = outOfScope !== null && (def.capabilities.find((c) => c.name === outOfScope)?.examples?.length ?? 0) > 0;
  const caps = def.capabilities
    .filter((c) => (c.examples?.length ?? 0) > 0)
    .map((c) => {
      const examples = c.description ? [...c.examples!, c.description] : c.examples!;
      return { name: c.name, examples: fallbackRoutes && c.name === outOfScope ? [...examples, ...extra] : examples };
    });
  if (!fallbackRoutes && extra.length) caps.push({ name: BUILTIN_FALLBACK, examples: extra });
  return { caps, outOfScope };
}

/** A router of server embeddings with the definition's thresholds. */
export function semanticRouter(def: AgentDefinition, router: Router): SemanticRouter {
  return {
    router,
    threshold: def.routing?.threshold ?? router.calibration.threshold,
    minSimilarity: def.routing?.min_similarity ?? router.calibration.minSimilarity,
  };
}

/**
 * Compiles a definition that passed validateDefinition and trains its router (`train`: here by
 * default, with `words`, the app's word vectors, which also say why a router is lexical).
 */
export async function compileAgent(
  agentId: string,
  version: number,
  def: AgentDefinition,
  train?: TrainRouter,
  words: VectorsStatus = NO_VECTORS,
): Promise<CompiledAgent> {
  train ??= trainHere(words);
  const capabilities = new Map(def.capabilities.map((c) => [c.name, compileCapability(agentId, c)]));
  const messages = Object.fromEntries(
    (Object.keys(DEFAULT_MESSAGES) as (keyof typeof DEFAULT_MESSAGES)[]).map((k) => [k, CompiledText.from(def.messages?.[k] ?? DEFAULT_MESSAGES[k])]),
  ) as CompiledAgent['messages'];
  const fallback: CompiledCapability = def.routing?.fallback
    ? capabilities.get(def.routing.fallback)!
    : {
        name: BUILTIN_FALLBACK,
        id: capabilityId(agentId, BUILTIN_FALLBACK),
        description: null,
        requires: null,
        phases: [{ id: BUILTIN_FALLBACK, say: messages.fallback, options: [], onError: 'escalate', next: null, outcome: null }],
        phaseIndex: new Map([[BUILTIN_FALLBACK, 0]]),
        builtin: true,
      };
  const routableDefs = def.capabilities.filter((c) => (c.examples?.length ?? 0) > 0);
  const input = routingInput(def);
  const router = await train(input.caps, input.outOfScope, english(def));
  const actions = new Map<string, CompiledAction>();
  for (const [name, a] of Object.entries(def.actions ?? {})) {
    const sources = [a.url, ...Object.values(a.headers ?? {}), ...jsonStrings(a.body)];
    const secrets = [
      ...new Set(
        sources.flatMap((src) => {
          const r = templateReads(src, true);
          return 'names' in r ? r.names : [];
        }),
      ),
    ];
    actions.set(name, {
      name,
      method: a.method,
      url: CompiledTemplate.parse(a.url, { url: true }),
      secrets,
      headers: Object.entries(a.headers ?? {}).map(([h, v]) => [h.toLowerCase(), CompiledTemplate.parse(v)]),
      body: a.body !== undefined ? compileJson(a.body) : null,
      timeoutMs: a.timeout_ms,
      retries: a.retries,
      save: Object.entries(a.save ?? {}).map(([slot, path]) => [slot, path.split('.')]),
      description: a.description ?? null,
      parameters: a.parameters ?? null,
      validate: a.parameters ? schemaValidator(a.parameters) : null,
    });
  }
  const knowledge = def.knowledge?.length ? await KnowledgeIndex.build(def.knowledge) : null;
  const generative = def.capabilities.flatMap((c) => c.phases.flatMap((p) => (p.generate ? [p.generate] : [])));
  return {
    agentId,
    version,
    definition: def,
    defaultLanguage: def.default_language,
    timeZone: def.time_zone ?? 'UTC',
    threshold: def.routing?.threshold ?? router.calibration.threshold,
    minSimilarity: def.routing?.min_similarity ?? router.calibration.minSimilarity,
    switchThreshold:
      def.routing?.switching?.enabled === false ? null : (def.routing?.switching?.threshold ?? Math.max(DEFAULT_SWITCH_THRESHOLD, def.routing?.threshold ?? 0)),
    capabilities,
    routable: routableDefs.map((c) => capabilities.get(c.name)!),
    fallback,
    actions,
    messages,
    router,
    semantic: null,
    lexical: router.model !== ROUTER_MODEL ? null : !english(def) ? 'language' : (words.reason ?? 'stored'),
    secretNames: [...new Set([...actions.values()].flatMap((a) => a.secrets))],
    // The definition is kept too (as parsed JSON: roughly twice its text).
    bytes: router.bytes + 2 * JSON.stringify(def).length + (knowledge?.bytes ?? 0),
    examplesOf: (name) => def.capabilities.find((c) => c.name === name)?.examples ?? [],
    llm: { model: def.llm?.model ?? null, temperature: def.llm?.temperature ?? 0, maxOutputTokens: def.llm?.max_output_tokens ?? 500 },
    knowledge,
    knowledgeSources: knowledgeSourcesOf(def),
    knowledgeSnapshot: null,
    historyTurns: generative.reduce((n, g) => Math.max(n, g.history), 0),
  };
}

/** The knowledge sources a definition names: names, and the tags that choose sources; null without any. */
export function knowledgeSourcesOf(def: AgentDefinition): { names: string[]; tags: string[] } | null {
  return def.knowledge_sources
    ? {
        names: def.knowledge_sources.filter((k): k is string => typeof k === 'string'),
        tags: def.knowledge_sources.flatMap((k) => (typeof k === 'string' ? [] : [k.tag])),
      }
    : null;
}
