// How well an agent's definition routes: the warnings a PUT answers with (and slots read but never
// set), and the report of `npm run agents -- eval` (cross-validation over the agent's own
// examples, or labelled data).
import type { AgentDefinition, DefinitionWarning } from '@switchboard/contract';
import { compileAgent, type CompiledAgent, type TrainRouter } from './compile.js';
import { route } from './routing.js';

/** Fewer examples than this, and a capability routes unreliably (docs/routing.md, small agents). */
const MIN_EXAMPLES = 5;
/**
 * The nearest-neighbour check runs at PUT on definitions up to this many examples: it runs on
 * the request's thread, and this bounds it to tens of milliseconds (`npm run bench:routing`
 * prints its cost). The eval command runs it on any size.
 */
const PUT_PAIRWISE_LIMIT = 1000;
/** Similarity below which an example's nearest neighbour elsewhere is not worth a warning. */
const CLOSER_FLOOR = 0.3;
/** Warnings of one kind listed at most (the worst first); the rest are counted in one more. */
const MAX_LISTED = 20;

const normal = (s: string) => s.trim().toLowerCase().replace(/\s+/g, ' ');

/** Capabilities the router learns from: those with examples (the description counts as one, as the router reads it). */
function routable(def: AgentDefinition): { name: string; examples: string[] }[] {
  return def.capabilities.filter((c) => (c.examples?.length ?? 0) > 0).map((c) => ({ name: c.name, examples: c.examples! }));
}

/**
 * What is likely to route badly in a definition, without training: capabilities with too few
 * examples, one example under two capabilities, and examples whose nearest neighbour (by the
 * words they share) belongs to another capability.
 */
export function routingWarnings(def: AgentDefinition, pairwiseLimit = PUT_PAIRWISE_LIMIT): DefinitionWarning[] {
  const caps = routable(def);
  const out: DefinitionWarning[] = [];
  const fallback = def.routing?.fallback;
  const thin: DefinitionWarning[] = [];
  for (const c of caps) {
    if (c.name !== fallback && c.examples.length < MIN_EXAMPLES) {
      thin.push({
        code: 'thin_capability',
        capability: c.name,
        message: `"${c.name}" has ${c.examples.length} example${c.examples.length === 1 ? '' : 's'}; ${MIN_EXAMPLES} or more, in different words, route more reliably`,
      });
    }
  }
  out.push(...listed(thin));
  out.push(...thinFallback(def));
  const owner = new Map<string, string>();
  const duplicates: DefinitionWarning[] = [];
  for (const c of caps) {
    for (const e of new Set(c.examples.map(normal))) {
      const first = owner.get(e);
      if (first !== undefined && first !== c.name) {
        duplicates.push({
          code: 'duplicate_example',
          capability: c.name,
          other: first,
          example: e,
          message: `"${e}" is an example of both "${first}" and "${c.name}"`,
        });
      } else owner.set(e, c.name);
    }
  }
  out.push(...listed(duplicates));
  const total = caps.reduce((n, c) => n + c.examples.length, 0);
  if (caps.length > 1 && total <= pairwiseLimit) out.push(...listed(closerToOther(caps)));
  return out;
}

/** A fallback's examples that say nothing about what to turn away. */
const PLACEHOLDER = /^(something else|anything else|none of (these|the above)|other|others|none|n\/a|misc|unknown|fallback)$/;
/** Fewer examples than this, and a fallback's examples stand in for the background class poorly. */
const MIN_FALLBACK_EXAMPLES = 8;

/**
 * A fallback with a few or placeholder examples: they replace the router's built-in background
 * class of everyday messages, so off-topic messages ("what's the weather like?") go to the closest
 * capability instead of the fallback (docs/agents.md, small agents).
 */
function thinFallback(def: AgentDefinition): DefinitionWarning[] {
  const name = def.routing?.fallback ?? 'fallback';
  const examples = def.capabilities.find((c) => c.name === name)?.examples ?? [];
  if (examples.length === 0) return [];
  const placeholders = examples.filter((e) => PLACEHOLDER.test(normal(e).replace(/[.!?]+$/, '')));
  if (examples.length >= MIN_FALLBACK_EXAMPLES && placeholders.length === 0) return [];
  const shown = (placeholders.length ? placeholders : examples)
    .slice(0, 3)
    .map((e) => `"${e}"`)
    .join(', ');
  const what = placeholders.length ? `placeholder examples (${shown})` : `${examples.length} example${examples.length === 1 ? '' : 's'} (${shown})`;
  return [
    {
      code: 'thin_fallback',
      capability: name,
      message: `the fallback "${name}" has ${what}: a fallback's examples replace the built-in class of everyday messages, so off-topic messages ("what's the weather like?") go to the closest capability; leave them out, or give ${MIN_FALLBACK_EXAMPLES} or more real messages the agent should turn away`,
    },
  ];
}

/** Names of the slots a text reads: `slots.name` and `slots['name']`. */
function slotReads(text: string): string[] {
  return [...text.matchAll(/\bslots(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([^'"]+)['"]\s*\])/g)].map((m) => (m[1] as string | undefined) ?? m[2]);
}

/** Every string inside a value, each with its path. */
function strings(v: unknown, path: string, out: [string, string][] = []): [string, string][] {
  if (typeof v === 'string') out.push([path, v]);
  else if (Array.isArray(v)) v.forEach((x, i) => strings(x, `${path}[${i}]`, out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) strings(x, path ? `${path}.${k}` : k, out);
  return out;
}

/**
 * Templates and conditions that read a slot no phase collects and no action saves: it is always
 * empty there, most often a misspelt name. Paths as in validation problems.
 */
export function slotWarnings(def: AgentDefinition): DefinitionWarning[] {
  const known = new Set<string>();
  for (const c of def.capabilities) {
    for (const p of c.phases) {
      if (p.collect) known.add(p.collect.slot);
      for (const slot of Object.keys(p.generate?.fills ?? {})) known.add(slot);
    }
  }
  for (const a of Object.values(def.actions ?? {})) for (const k of Object.keys(a.save ?? {})) known.add(k);
  const out: DefinitionWarning[] = [];
  const check = (path: string, value: unknown, capability?: string) => {
    for (const [at, text] of strings(value, path)) {
      for (const name of new Set(slotReads(text))) {
        if (known.has(name)) continue;
        out.push({
          code: 'unknown_slot',
          ...(capability !== undefined ? { capability } : {}),
          path: at,
          message: `"slots.${name}" is read here, but no phase collects it and no action saves it: it is always empty`,
        });
      }
    }
  };
  const capCount = new Map<string, number>();
  for (const c of def.capabilities) capCount.set(c.name, (capCount.get(c.name) ?? 0) + 1);
  def.capabilities.forEach((c, ci) => {
    const cp = capCount.get(c.name) === 1 ? `capabilities.${c.name}` : `capabilities[${ci}]`;
    const ids = new Map<string, number>();
    for (const p of c.phases) ids.set(p.id, (ids.get(p.id) ?? 0) + 1);
    c.phases.forEach((p, pi) => {
      const { id: _id, ...rest } = p;
      check(ids.get(p.id) === 1 ? `${cp}.phases.${p.id}` : `${cp}.phases[${pi}]`, rest, c.name);
    });
  });
  check('messages', def.messages ?? {});
  for (const [name, a] of Object.entries(def.actions ?? {})) {
    const { save: _save, parameters: _parameters, ...rest } = a;
    check(`actions.${name}`, rest);
  }
  return listed(out);
}

function listed(warnings: DefinitionWarning[]): DefinitionWarning[] {
  if (warnings.length <= MAX_LISTED) return warnings;
  const rest = warnings.length - MAX_LISTED;
  return [...warnings.slice(0, MAX_LISTED), { code: warnings[0].code, capability: '*', message: `and ${rest} more like these` }];
}

/** Word unigrams and bigrams of a text, accents folded and lower-cased. */
function terms(text: string): string[] {
  const ws =
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  const out = new Set(ws);
  for (let i = 1; i < ws.length; i++) out.add(`${ws[i - 1]} ${ws[i]}`);
  return [...out];
}

/**
 * Examples whose nearest other example belongs to another capability, the clearest cases first.
 * Nearness is the cosine of binary TF-IDF vectors over words and word pairs, found through an
 * inverted index: an example is compared only with those it shares a term with, so the check
 * costs what the overlaps cost rather than every pair (a few milliseconds for a few hundred
 * examples). Words, not the router's character n-grams: a person reading the warning sees why.
 */
function closerToOther(caps: { name: string; examples: string[] }[]): DefinitionWarning[] {
  const rows: { cap: number; text: string; terms: string[] }[] = [];
  caps.forEach((c, ci) => {
    for (const text of c.examples) rows.push({ cap: ci, text, terms: terms(text) });
  });
  const n = rows.length;
  const df = new Map<string, number>();
  for (const r of rows) for (const t of r.terms) df.set(t, (df.get(t) ?? 0) + 1);
  const weights = rows.map((r) => {
    const w = r.terms.map((t) => Math.log((n + 1) / (df.get(t)! + 1)) + 1);
    const norm = Math.hypot(...w) || 1;
    return w.map((x) => x / norm);
  });
  const postings = new Map<string, { doc: number; w: number }[]>();
  rows.forEach((r, i) => {
    r.terms.forEach((t, k) => (postings.get(t) ?? postings.set(t, []).get(t)!).push({ doc: i, w: weights[i][k] }));
  });
  const sizes = caps.map((c) => c.examples.length);
  const score = new Float64Array(n);
  const touched: number[] = [];
  const found: (DefinitionWarning & { gap: number })[] = [];
  for (let i = 0; i < n; i++) {
    // A capability's only example has no neighbour of its own: thin_capability says it already.
    if (sizes[rows[i].cap] < 2) continue;
    rows[i].terms.forEach((t, k) => {
      for (const p of postings.get(t)!) {
        if (p.doc === i) continue;
        if (score[p.doc] === 0) touched.push(p.doc);
        score[p.doc] += weights[i][k] * p.w;
      }
    });
    let own = 0;
    let other = 0;
    let otherCap = -1;
    for (const j of touched) {
      if (rows[j].cap === rows[i].cap) own = Math.max(own, score[j]);
      else if (score[j] > other) {
        other = score[j];
        otherCap = rows[j].cap;
      }
      score[j] = 0;
    }
    touched.length = 0;
    if (otherCap >= 0 && other > own && other >= CLOSER_FLOOR) {
      const name = caps[rows[i].cap].name;
      const near = caps[otherCap].name;
      found.push({
        code: 'example_closer_to_other',
        capability: name,
        other: near,
        example: rows[i].text,
        message: `"${rows[i].text}" (${name}) is closer to an example of "${near}" than to any of its own`,
        gap: other - own,
      });
    }
  }
  found.sort((a, b) => b.gap - a.gap);
  return found.map(({ gap: _gap, ...w }) => w);
}

export interface Prediction {
  message: string;
  expected: string;
  got: string;
}

export interface RoutingReport {
  method: string;
  total: number;
  accuracy: number;
  capabilities: { name: string; support: number; precision: number | null; recall: number | null }[];
  confused: { expected: string; got: string; count: number; messages: string[] }[];
  warnings: DefinitionWarning[];
}

const NIL = '00000000-0000-4000-8000-000000000000';

/** Routes messages as the server would, with no context (no entitlements). */
function routeAll(agent: CompiledAgent, items: { message: string; expected: string }[]): Prediction[] {
  return items.map(({ message, expected }) => ({ message, expected, got: route(agent, agent.router.score(message), null).capability.name }));
}

/**
 * Stratified k-fold cross-validation over the definition's examples: each capability's examples
 * are dealt into `folds` folds in turn; each fold is routed by an agent trained on the others.
 * A capability with fewer examples than folds keeps one always in training.
 */
export async function crossValidate(
  def: AgentDefinition,
  folds = 5,
  progress?: (done: number, of: number) => void,
  train?: TrainRouter,
): Promise<Prediction[]> {
  const out: Prediction[] = [];
  for (let f = 0; f < folds; f++) {
    const held: { message: string; expected: string }[] = [];
    const capabilities = def.capabilities.map((c) => {
      const ex = c.examples ?? [];
      if (ex.length < 2) return c;
      const isHeld = (k: number) => k % folds === f && !(k === 0 && ex.length < folds);
      ex.forEach((message, k) => {
        if (isHeld(k)) held.push({ message, expected: c.name });
      });
      return { ...c, examples: ex.filter((_, k) => !isHeld(k)) };
    });
    if (held.length) out.push(...routeAll(await compileAgent(NIL, 1, { ...def, capabilities }, train), held));
    progress?.(f + 1, folds);
  }
  return out;
}

/** Routes labelled messages through the agent trained on the whole definition. */
export async function evaluateLabelled(def: AgentDefinition, items: { message: string; expected: string }[]): Promise<Prediction[]> {
  const agent = await compileAgent(NIL, 1, def);
  return routeAll(agent, items);
}

/** The confusion matrix of predictions: counts[i][j] messages of labels[i] routed to labels[j]. */
export function confusionMatrix(predictions: Prediction[]): { labels: string[]; counts: number[][] } {
  const labels = [...new Set(predictions.flatMap((p) => [p.expected, p.got]))].sort();
  const at = new Map(labels.map((l, i) => [l, i]));
  const counts = labels.map(() => labels.map(() => 0));
  for (const p of predictions) counts[at.get(p.expected)!][at.get(p.got)!]++;
  return { labels, counts };
}

/** Accuracy, per-capability precision and recall, and the most confused pairs. */
export function summarise(method: string, def: AgentDefinition, predictions: Prediction[], warnings: DefinitionWarning[]): RoutingReport {
  const names = new Set<string>([...def.capabilities.map((c) => c.name), ...predictions.map((p) => p.expected), ...predictions.map((p) => p.got)]);
  const capabilities = [...names].map((name) => {
    const support = predictions.filter((p) => p.expected === name).length;
    const predicted = predictions.filter((p) => p.got === name).length;
    const right = predictions.filter((p) => p.expected === name && p.got === name).length;
    return { name, support, precision: predicted ? right / predicted : null, recall: support ? right / support : null };
  });
  const pairs = new Map<string, { expected: string; got: string; count: number; messages: string[] }>();
  for (const p of predictions) {
    if (p.expected === p.got) continue;
    const key = `${p.expected}\u0000${p.got}`;
    const e = pairs.get(key) ?? pairs.set(key, { expected: p.expected, got: p.got, count: 0, messages: [] }).get(key)!;
    e.count++;
    if (e.messages.length < 3) e.messages.push(p.message);
  }
  const right = predictions.filter((p) => p.expected === p.got).length;
  return {
    method,
    total: predictions.length,
    accuracy: predictions.length ? right / predictions.length : 0,
    capabilities: capabilities.filter((c) => c.support > 0 || (c.precision !== null && c.precision < 1)),
    confused: [...pairs.values()].sort((a, b) => b.count - a.count).slice(0, 10),
    warnings,
  };
}
