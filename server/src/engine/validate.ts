// Checks an agent definition beyond its schema: references between its parts, templates,
// patterns, tool schemas and what each may cost (compile.ts then compiles a sound one).
import { Ajv, type ValidateFunction } from 'ajv';
import { schemaCostProblem } from './schema-cost.js';
import { compilePattern, MAX_DEFINITION_PATTERN_COST, MAX_PATTERN_COST, patternCost, PatternTooLargeError } from './patterns.js';
import { FILE_VARIABLE_HINT, type AgentDefinition, type LocalizedText, type PhaseDef } from '@switchboard/contract';
import type { FieldProblem } from '../errors.js';
import { MAX_KNOWLEDGE_CHARS } from './knowledge.js';
import { isTimeZone } from './dates.js';
import { CompiledCondition, CompiledTemplate, explainLiquidError, templateReads } from './templates.js';

/** The capability every agent has, whether its definition names it or not. */
export const BUILTIN_FALLBACK = 'fallback';

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
      if (p.answer) {
        if (!def.knowledge_sources) add(`${pp}.answer`, 'the agent names no knowledge_sources to answer from');
        if (p.generate) add(`${pp}.answer`, 'a phase cannot both answer and generate');
        for (const key of ['call', 'collect', 'end', 'options'] as const) {
          if (p[key] !== undefined) add(`${pp}.${key}`, `an answer phase cannot also have ${key}`);
        }
        const nf = p.answer.not_found;
        if (nf !== 'escalate' && nf !== 'fallback' && !known(nf)) add(`${pp}.answer.not_found`, `unknown phase "${nf}" (or use "escalate" or "fallback")`);
      }
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
  if (def.knowledge_updates === 'release' && !def.knowledge_sources)
    add('knowledge_updates', 'the agent names no knowledge_sources whose snapshot a version could pin');
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
  if (g.knowledge && !def.knowledge?.length && !def.knowledge_sources)
    add(`${pp}.generate.knowledge`, 'the agent has no knowledge documents or knowledge_sources');
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
export function schemaValidator(schema: Record<string, unknown>): ValidateFunction {
  // One Ajv per schema: nothing compiled for one tenant stays in a cache another shares.
  const ajv = new Ajv({ strict: false, allErrors: false, code: { regExp: compilePattern as never }, loadSchema: undefined });
  return ajv.compile(schema);
}

/** Why a URL is refused: `${NAME}` is a file's variable, which only the agents CLI and AGENTS_DIR fill in. */
function notUrl(url: string): string {
  return /\$\{[A-Za-z_]/.test(url) ? `must be an http:// or https:// URL: ${FILE_VARIABLE_HINT}` : 'must be an http:// or https:// URL';
}
