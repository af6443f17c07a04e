// Validates an agent definition beyond its schema (references, templates, patterns) and
// compiles it once per version: parsed templates, phase indexes and the trained router.
import { Ajv, type ValidateFunction } from 'ajv';
import { schemaCostProblem } from './schema-cost.js';
import { compileBounded, MAX_DEFINITION_PATTERN_COST, MAX_PATTERN_COST, patternCost, PatternTooLargeError } from './patterns.js';
import { v5 as uuidv5 } from 'uuid';
import type { AgentDefinition, CapabilityDef, FillDef, GenerateDef, LocalizedText, PhaseDef } from '@switchboard/contract';
import { FILE_VARIABLE_HINT } from '@switchboard/contract';
import type { FieldProblem } from '../errors.js';
import { KnowledgeIndex, MAX_KNOWLEDGE_CHARS } from './knowledge.js';
import { embedderFor, Router, ROUTER_MODEL, type DenseTable, type RoutableCapability } from './router/index.js';
import { NO_VECTORS, type LexicalReason, type VectorsStatus } from './word-vectors.js';
import { choiceWords, type SlotSpec } from './slots.js';
import { isTimeZone } from './dates.js';
import { CompiledCondition, CompiledTemplate, CompiledText, compileJson, explainLiquidError, templateReads, type JsonTemplate } from './templates.js';

const BUILTIN_FALLBACK = 'fallback';
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
}

/** A generative phase (docs/generative.md). */
export interface CompiledGenerate {
  instructions: CompiledText;
  /** Actions offered as tools. */
  tools: string[];
  knowledge: boolean;
  fills: Map<string, SlotSpec>;
  maxSteps: number;
  history: number;
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
  /** The most earlier turns any generative phase sends (0: none has one). */
  historyTurns: number;
}

/** Stable per agent and capability name, across versions. */
export function capabilityId(agentId: string, name: string): string {
  return uuidv5(`capability:${name}`, agentId);
}

const SAVE_PATH = /^(ok|status|body)(\.[A-Za-z0-9_-]+)*$/;

/** Every problem of a schema-valid definition, each with its path. Empty when it is sound. */
export function validateDefinition(def: AgentDefinition): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const tryTemplate = (path: string, source: string, allowSecrets = false) => {
    try {
      CompiledTemplate.parse(source);
    } catch (e) {
      add(path, `invalid template: ${explainLiquidError(source, e)}`);
      return;
    }
    const reads = templateReads(source, allowSecrets);
    if ('error' in reads) add(path, reads.error);
  };
  const tryText = (path: string, t: LocalizedText | undefined) => {
    if (t === undefined) return;
    if (typeof t === 'string') tryTemplate(path, t);
    else for (const [lang, s] of Object.entries(t)) tryTemplate(`${path}.${lang}`, s);
  };

  // Paths name capabilities and phases (capabilities.order_status.phases.lookup.next) where the
  // name is unique, and fall back to the index where it is not; lib/yaml-source.ts finds either.
  if (def.time_zone !== undefined && !isTimeZone(def.time_zone))
    add('time_zone', `unknown time zone "${def.time_zone}": an IANA name such as Europe/Lisbon, or UTC`);
  const count = <T>(items: T[], key: (t: T) => string) => {
    const n = new Map<string, number>();
    for (const i of items) n.set(key(i), (n.get(key(i)) ?? 0) + 1);
    return n;
  };
  const capCount = count(def.capabilities, (c) => c.name);
  const names = new Set<string>();
  def.capabilities.forEach((c, ci) => {
    const cp = capCount.get(c.name) === 1 ? `capabilities.${c.name}` : `capabilities[${ci}]`;
    if (names.has(c.name)) add(`${cp}.name`, `duplicate capability name "${c.name}"`);
    names.add(c.name);
    const ids = new Set<string>();
    const phaseCount = count(c.phases, (p) => p.id);
    const phasePath = (p: PhaseDef, pi: number) => (phaseCount.get(p.id) === 1 ? `${cp}.phases.${p.id}` : `${cp}.phases[${pi}]`);
    c.phases.forEach((p, pi) => {
      if (ids.has(p.id)) add(`${phasePath(p, pi)}.id`, `duplicate phase id "${p.id}" in capability "${c.name}"`);
      ids.add(p.id);
    });
    c.phases.forEach((p, pi) => {
      const pp = phasePath(p, pi);
      const known = (id: string) => ids.has(id);
      tryText(`${pp}.say`, p.say);
      p.options?.forEach((o, oi) => tryText(`${pp}.options[${oi}].label`, o.label));
      if (typeof p.next === 'string' && !known(p.next)) add(`${pp}.next`, `unknown phase "${p.next}"`);
      if (Array.isArray(p.next)) {
        p.next.forEach((b, bi) => {
          if (!known(b.goto)) add(`${pp}.next[${bi}].goto`, `unknown phase "${b.goto}"`);
          if (b.if !== undefined) {
            try {
              const reads = templateReads(new CompiledCondition(b.if).value, false);
              if ('error' in reads) add(`${pp}.next[${bi}].if`, reads.error);
            } catch (e) {
              add(`${pp}.next[${bi}].if`, `invalid condition: ${explainLiquidError(b.if, e)}`);
            }
          }
        });
      }
      if (p.call !== undefined && !def.actions?.[p.call]) add(`${pp}.call`, `unknown action "${p.call}"`);
      if (p.generate) validateGenerate(def, p, pp, add, tryText);
      if (p.on_error !== undefined) {
        if (p.call === undefined && p.generate === undefined) add(`${pp}.on_error`, 'on_error needs a call or generate in the same phase');
        else if (p.on_error !== 'escalate' && !known(p.on_error)) add(`${pp}.on_error`, `unknown phase "${p.on_error}" (or use "escalate")`);
      }
      if (p.end !== undefined && p.next !== undefined) add(`${pp}.next`, 'a phase with end cannot have next');
      if (p.end !== undefined && p.collect !== undefined) add(`${pp}.collect`, 'a phase with end cannot collect');
      if (p.outcome !== undefined && p.end === undefined) add(`${pp}.outcome`, 'outcome needs end');
      const col = p.collect;
      if (col) {
        if (col.pattern !== undefined) {
          if (col.type !== 'text') add(`${pp}.collect.pattern`, 'pattern applies only to type text');
          const problem = patternProblem(col.pattern);
          if (problem) add(`${pp}.collect.pattern`, problem);
        }
        if (col.choices !== undefined && col.type !== 'choice') add(`${pp}.collect.choices`, 'choices apply only to type choice');
        if (col.type === 'choice' && !col.choices && !p.options?.length) {
          add(`${pp}.collect.choices`, 'type choice needs choices or options on the phase');
        }
        tryText(`${pp}.collect.retry`, col.retry);
        for (const bound of ['min', 'max'] as const) {
          if (col[bound] !== undefined && col.type !== 'number' && col.type !== 'integer') {
            add(`${pp}.collect.${bound}`, `${bound} applies only to type number or integer`);
          }
        }
        if (col.min !== undefined && col.max !== undefined && col.min > col.max) add(`${pp}.collect.min`, 'min must not be greater than max');
      }
    });
  });
  if (def.routing?.out_of_scope?.length && def.routing.fallback === undefined && names.has(BUILTIN_FALLBACK)) {
    add(
      'routing.out_of_scope',
      `a capability named "${BUILTIN_FALLBACK}" that is not routing.fallback would take these messages: make it routing.fallback, or rename it`,
    );
  }
  if (def.routing?.fallback !== undefined && !names.has(def.routing.fallback)) {
    add('routing.fallback', `unknown capability "${def.routing.fallback}"`);
  }
  for (const [k, t] of Object.entries(def.messages ?? {})) tryText(`messages.${k}`, t);
  def.webhooks?.forEach((h, i) => {
    if (!/^https?:\/\//i.test(h.url)) add(`webhooks[${i}].url`, notUrl(h.url));
  });
  for (const [name, a] of Object.entries(def.actions ?? {})) {
    const ap = `actions.${name}`;
    tryTemplate(`${ap}.url`, a.url, true);
    if (!/^\s*(https?:\/\/|\{\{)/i.test(a.url)) add(`${ap}.url`, notUrl(a.url));
    for (const [h, v] of Object.entries(a.headers ?? {})) {
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(h)) add(`${ap}.headers.${h}`, 'invalid header name');
      tryTemplate(`${ap}.headers.${h}`, v, true);
    }
    if (a.body !== undefined) {
      if (a.method === 'GET' || a.method === 'DELETE') add(`${ap}.body`, `a ${a.method} request has no body`);
      const walk = (v: unknown, path: string) => {
        if (typeof v === 'string') tryTemplate(path, v, true);
        else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
        else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
      };
      walk(a.body, `${ap}.body`);
    }
    for (const [slot, path] of Object.entries(a.save ?? {})) {
      if (!SAVE_PATH.test(path)) add(`${ap}.save.${slot}`, 'must be a path such as body.eta or body.items.0.id');
    }
    if (a.parameters !== undefined) {
      const problem = parametersProblem(a.parameters);
      if (problem) add(`${ap}.parameters`, problem);
    }
  }
  const docIds = new Set<string>();
  const knowledgeChars = (def.knowledge ?? []).reduce((n, d) => n + d.text.length + (d.title?.length ?? 0), 0);
  if (knowledgeChars > MAX_KNOWLEDGE_CHARS) {
    add('knowledge', `the documents hold ${knowledgeChars} characters, more than ${MAX_KNOWLEDGE_CHARS}: keep what the agent needs to answer from`);
  }
  def.knowledge?.forEach((d, i) => {
    if (docIds.has(d.id)) add(`knowledge[${i}].id`, `duplicate knowledge id "${d.id}"`);
    docIds.add(d.id);
  });
  // Patterns refused on their own are reported as such, not counted again here.
  const cost = definitionPatterns(def)
    .map(patternCost)
    .filter((c) => c <= MAX_PATTERN_COST)
    .reduce((sum, c) => sum + c, 0);
  if (cost > MAX_DEFINITION_PATTERN_COST) {
    add('(root)', `the definition's patterns together are too large (cost ${cost}, at most ${MAX_DEFINITION_PATTERN_COST}: length plus repetition counts)`);
  }
  return problems;
}

/** Every regular expression of a definition: slot patterns, fill patterns, `pattern` keywords of tool schemas. */
function definitionPatterns(def: AgentDefinition): string[] {
  const out: string[] = [];
  const inSchema = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === 'pattern' && typeof x === 'string') out.push(x);
      else if (k === 'patternProperties' && x && typeof x === 'object') out.push(...Object.keys(x));
      inSchema(x);
    }
  };
  for (const c of def.capabilities) {
    for (const p of c.phases) {
      if (p.collect?.pattern !== undefined) out.push(p.collect.pattern);
      for (const f of Object.values(p.generate?.fills ?? {})) if (f.pattern !== undefined) out.push(f.pattern);
    }
  }
  for (const a of Object.values(def.actions ?? {})) inSchema(a.parameters);
  return out;
}

/** Why a pattern is refused (RE2 syntax, size), or null. */
function patternProblem(source: string): string | null {
  try {
    compilePattern(source);
    return null;
  } catch (e) {
    if (e instanceof PatternTooLargeError) return `pattern too large: ${e.message}`;
    return `invalid regular expression (RE2 syntax, see docs/agents.md): ${(e as Error).message}`;
  }
}

/** Names the model may call besides the agent's actions. */
const BUILTIN_TOOLS = new Set(['finish', 'escalate', 'fill']);
const MAX_SCHEMA_BYTES = 16 * 1024;
const MAX_SCHEMA_DEPTH = 12;

function validateGenerate(
  def: AgentDefinition,
  p: PhaseDef,
  pp: string,
  add: (path: string, message: string) => void,
  tryText: (path: string, t: LocalizedText | undefined) => void,
): void {
  const g = p.generate!;
  for (const key of ['call', 'collect', 'end', 'options'] as const) {
    if (p[key] !== undefined) add(`${pp}.${key}`, `a generate phase cannot also have ${key}`);
  }
  tryText(`${pp}.generate.instructions`, g.instructions);
  const seen = new Set<string>();
  g.tools?.forEach((name, i) => {
    const at = `${pp}.generate.tools[${i}]`;
    if (seen.has(name)) add(at, `"${name}" is listed twice`);
    seen.add(name);
    if (BUILTIN_TOOLS.has(name)) add(at, `"${name}" is a built-in tool, always offered: remove it from tools`);
    else if (!def.actions?.[name]) add(at, `unknown action "${name}"`);
    else if (def.actions[name].parameters === undefined) add(at, `action "${name}" needs parameters (a JSON Schema of its arguments) to be offered as a tool`);
  });
  if (g.knowledge && !def.knowledge?.length) add(`${pp}.generate.knowledge`, 'the agent has no knowledge documents');
  for (const [slot, f] of Object.entries(g.fills ?? {})) {
    const fp = `${pp}.generate.fills.${slot}`;
    if (f.pattern !== undefined) {
      if (f.type !== 'text') add(`${fp}.pattern`, 'pattern applies only to type text');
      const problem = patternProblem(f.pattern);
      if (problem) add(`${fp}.pattern`, problem);
    }
    if (f.type === 'choice' && !f.choices) add(`${fp}.choices`, 'type choice needs choices');
    if (f.choices !== undefined && f.type !== 'choice') add(`${fp}.choices`, 'choices apply only to type choice');
    for (const bound of ['min', 'max'] as const) {
      if (f[bound] !== undefined && f.type !== 'number' && f.type !== 'integer') add(`${fp}.${bound}`, `${bound} applies only to type number or integer`);
    }
  }
}

function depth(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  for (const x of Object.values(v)) d = Math.max(d, depth(x));
  return d + 1;
}

/**
 * A definition's JSON Schema is a tenant's input compiled into a validator: it must be an object
 * schema, small and shallow enough to compile quickly, with local references only, no larger
 * than MAX_SCHEMA_NODES with its references followed (schema-cost.ts), and every
 * `pattern` in RE2 syntax (matched in linear time, whatever the model sends).
 */
function parametersProblem(schema: Record<string, unknown>): string | null {
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) return `must be at most ${MAX_SCHEMA_BYTES} bytes of JSON`;
  if (depth(schema) > MAX_SCHEMA_DEPTH) return `must be at most ${MAX_SCHEMA_DEPTH} levels deep`;
  if (schema.type !== 'object') return 'must be a JSON Schema of type object (the arguments are an object)';
  if (/"\$ref"\s*:\s*"(?!#)/.test(JSON.stringify(schema))) return 'only local references ("#/…") are allowed';
  const cost = schemaCostProblem(schema);
  if (cost) return cost;
  try {
    schemaValidator(schema);
  } catch (e) {
    return `invalid JSON Schema: ${(e as Error).message.replace(/^schema is invalid: /, '')}`;
  }
  return null;
}

/** A validator for a tool's arguments; throws on an invalid schema. */
function schemaValidator(schema: Record<string, unknown>): ValidateFunction {
  // One Ajv per schema: nothing compiled for one tenant stays in a cache another shares.
  const ajv = new Ajv({ strict: false, allErrors: false, code: { regExp: compilePattern as never }, loadSchema: undefined });
  return ajv.compile(schema);
}

/**
 * A slot pattern on RE2JS, a linear-time engine: no pattern can backtrack, whatever the user
 * sends. Matching is a search (like RegExp.test); anchor with ^ and $ for a whole-message match.
 */
export function compilePattern(source: string): { test(text: string): boolean } {
  const re = compileBounded(source);
  return { test: (text) => re.matcher(text).find() };
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
    historyTurns: generative.reduce((n, g) => Math.max(n, g.history), 0),
  };
}

/** Why a URL is refused: `${NAME}` is a file's variable, which only the agents CLI and AGENTS_DIR fill in. */
function notUrl(url: string): string {
  return /\$\{[A-Za-z_]/.test(url) ? `must be an http:// or https:// URL: ${FILE_VARIABLE_HINT}` : 'must be an http:// or https:// URL';
}
