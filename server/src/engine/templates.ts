// Liquid templates and conditions for texts, action requests and branches. A template can
// never run code: liquidjs only reads the names it is given (own properties only), can include
// no files (an empty in-memory template map), and every render of a turn draws on one budget of
// time, output and memory (RenderBudget), so no number of phases multiplies what one turn costs.
// Conditions are parsed as Liquid expressions, never pasted into a tag, so a condition cannot
// close its own tag and smuggle others in. Values put into action URLs are percent-encoded.
import { Context, isTruthy, Liquid, Output, TokenKind, Tokenizer, toValueSync, Value, type PropertyAccessToken, type Template } from 'liquidjs';
import type { LocalizedText } from '@switchboard/contract';

/**
 * Thrown by a text, condition or action request when the turn's rendering budget is spent. It is
 * never turned into an empty text or a false condition: the engine audits it and takes the
 * phase's `on_error`, or hands the conversation to a person (engine/steps/phases.ts, run.ts).
 */
export class RenderBudgetExceeded extends Error {}

/**
 * A liquidjs Limiter look-alike: one instance shared by every render of a turn. A budget error
 * thrown deep inside a render reaches us wrapped in liquidjs's RenderError, so the limit also
 * remembers that it was exceeded.
 */
class Limit {
  used = 0;
  exceeded: string | null = null;
  constructor(
    private readonly what: string,
    public limit: number,
  ) {}
  use(n: number): void {
    if (n > 0) {
      this.used += n;
      if (this.used > this.limit) this.fail();
    }
  }
  check(n: number): void {
    if (n > this.limit) this.fail();
  }
  fail(): never {
    this.exceeded = `${this.what} limit exceeded`;
    throw new RenderBudgetExceeded(this.exceeded);
  }
}

/**
 * The render-time limit: liquidjs calls `check(performance.now())` as it renders, and this
 * compares the time spent *inside* renders (the one running included) with the allowance. Time
 * between renders (an action, a model call, another tenant's turn on the event loop) counts
 * for nothing. Node 20 has no per-thread CPU clock, so a render is timed by the monotonic clock
 * from its start; a render is synchronous, so nothing else of ours runs on this thread meanwhile.
 */
class RenderTime extends Limit {
  private startedAt: number | null = null;
  begin(): void {
    this.startedAt = performance.now();
  }
  end(): number {
    const spent = this.startedAt === null ? 0 : performance.now() - this.startedAt;
    this.startedAt = null;
    this.used += spent;
    return spent;
  }
  override check(now: number): void {
    const running = this.startedAt === null ? 0 : now - this.startedAt;
    if (this.used + running > this.limit) this.fail();
  }
}

export interface RenderBudgetOptions {
  /** Time all renders of the turn may spend rendering together, in ms (waiting between them does not count). */
  timeMs: number;
  /** Characters all renders of the turn may produce together. */
  outputChars: number;
  /** liquidjs memory units (array and string allocations in filters) for the whole turn. */
  memory?: number;
}

const DEFAULT_RENDER_BUDGET: RenderBudgetOptions = { timeMs: 250, outputChars: 1_000_000, memory: 10_000_000 };

/**
 * What one turn may spend on rendering: time spent rendering (never time spent waiting), output
 * and memory. When it is spent, one reserve is granted (`recover`) so that the turn can still say
 * its error path's text (`on_error`, or the escalated message).
 */
export class RenderBudget {
  readonly renderLimit: RenderTime;
  readonly memoryLimit: Limit;
  outputLeft: number;
  private recovered = false;
  private readonly timeMs: number;

  constructor(opts: RenderBudgetOptions = DEFAULT_RENDER_BUDGET) {
    this.timeMs = opts.timeMs;
    this.renderLimit = new RenderTime(`template time (${opts.timeMs} ms of rendering a turn)`, opts.timeMs);
    this.memoryLimit = new Limit('template memory', opts.memory ?? DEFAULT_RENDER_BUDGET.memory!);
    this.outputLeft = opts.outputChars;
  }

  /** Milliseconds spent rendering so far (what the tenant's time bucket is charged). */
  get spentMs(): number {
    return this.renderLimit.used;
  }

  /** Which limit the turn has exceeded, if any. */
  get exceeded(): string | null {
    return this.renderLimit.exceeded ?? this.memoryLimit.exceeded ?? (this.outputLeft < 0 ? 'template output limit exceeded' : null);
  }

  /** Runs one render or condition, adding its time to what the turn has spent. */
  timed<T>(fn: () => T): T {
    this.renderLimit.check(performance.now());
    this.renderLimit.begin();
    try {
      return fn();
    } catch (e) {
      throw this.explain(e);
    } finally {
      this.renderLimit.end();
    }
  }

  /** Throws RenderBudgetExceeded when the time spent so far (the running work included) is past the allowance. */
  checkpoint(): void {
    this.renderLimit.check(performance.now());
  }

  charge(chars: number): void {
    this.outputLeft -= chars;
    if (this.outputLeft < 0) throw new RenderBudgetExceeded('template output limit exceeded');
  }

  /**
   * After the budget was exceeded: a fifth of the turn's allowance (at least 10 ms, 64 KiB of
   * output) once more, for the error path's own texts. False when the reserve was already used.
   */
  recover(): boolean {
    if (this.recovered) return false;
    this.recovered = true;
    const t = this.renderLimit;
    t.exceeded = null;
    t.limit = t.used + Math.max(10, this.timeMs / 5);
    const m = this.memoryLimit;
    m.exceeded = null;
    m.limit = m.used + Math.max(1_000_000, m.limit / 5);
    this.outputLeft = Math.max(this.outputLeft, 0) + 64 * 1024;
    return true;
  }

  /**
   * What a failed render means: a RenderBudgetExceeded when the budget is spent (liquidjs wraps
   * the error), else the error as it is.
   */
  private explain(e: unknown): unknown {
    const exceeded = this.exceeded;
    return exceeded && !(e instanceof RenderBudgetExceeded) ? new RenderBudgetExceeded(exceeded) : e;
  }
}

const options = {
  ownPropertyOnly: true,
  strictFilters: true,
  strictVariables: false,
  templates: {},
  parseLimit: 100_000,
  cache: false,
} as const;

const liquid = new Liquid(options);

/**
 * Percent-encodes every value put into a URL template, so that a value is always one path
 * segment or one query value (`../admin?x=1#` cannot change the request). `{{ x | raw }}` is
 * the author's explicit way to insert a value as it is.
 */
function urlComponent(v: unknown): string {
  const s = stringify(v);
  // "." and ".." (even encoded) are path navigation to a URL parser, whatever encoding says.
  if (s === '.' || s === '..') throw new Error(`the value "${s}" cannot be put into a URL`);
  return encodeURIComponent(s);
}
const urlLiquid = new Liquid({ ...options, outputEscape: urlComponent });
// A value the author encodes with url_encode is already a URL component: not encoded twice.
urlLiquid.registerFilter('url_encode', { handler: (v: unknown) => encodeURIComponent(stringify(v)).replace(/%20/g, '+'), raw: true });

function stringify(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(stringify).join('');
  // An object reads as String() prints it, as before any filter saw it.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string
  return String(v);
}

/** liquidjs's emitter, but one that stops the render as soon as the turn's output budget is spent. */
class BoundedEmitter {
  buffer = '';
  constructor(private readonly budget: RenderBudget) {}
  write(html: unknown): void {
    this.buffer += stringify(html);
    if (this.buffer.length > this.budget.outputLeft) {
      this.budget.outputLeft = -1;
      throw new RenderBudgetExceeded('template output limit exceeded');
    }
  }
}

export type Scope = Record<string, unknown>;

function contextFor(engine: Liquid, scope: Scope, budget: RenderBudget): Context {
  return new Context(
    scope,
    engine.options,
    { sync: true },
    {
      renderLimit: budget.renderLimit as never,
      memoryLimit: budget.memoryLimit as never,
      liquid: engine,
    },
  );
}

export class CompiledTemplate {
  private constructor(
    readonly source: string,
    private readonly tpls: Template[] | null,
    private readonly engine: Liquid,
  ) {}

  /** `url: true` percent-encodes every output (action URLs). */
  static parse(source: string, opts: { url?: boolean } = {}): CompiledTemplate {
    const engine = opts.url ? urlLiquid : liquid;
    // Plain text renders as itself: most texts have no markup, and skipping Liquid keeps them cheap.
    if (!source.includes('{')) return new CompiledTemplate(source, null, engine);
    return new CompiledTemplate(source, engine.parse(source), engine);
  }

  render(scope: Scope, budget: RenderBudget = new RenderBudget()): string {
    if (!this.tpls) {
      budget.charge(this.source.length);
      return this.source;
    }
    const emitter = new BoundedEmitter(budget);
    const ctx = contextFor(this.engine, scope, budget);
    budget.timed(() => void toValueSync(this.engine.renderer.renderTemplates(this.tpls!, ctx, emitter as never)));
    budget.charge(emitter.buffer.length);
    return emitter.buffer;
  }
}

/** A branch condition: a Liquid expression judged by Liquid's own truthiness, as `{% if %}` would. */
export class CompiledCondition {
  /** The parsed expression (what templateReads checks). */
  readonly value: Value;
  constructor(readonly source: string) {
    const tokenizer = new Tokenizer(source, liquid.options.operators);
    const token = tokenizer.readFilteredValue();
    // Everything must be the expression: leftovers such as `%}{% for …` are refused.
    while (tokenizer.p < tokenizer.N && /\s/.test(source[tokenizer.p])) tokenizer.p++;
    if (tokenizer.p < tokenizer.N) {
      throw new Error(`unexpected "${source.slice(tokenizer.p, tokenizer.p + 20)}" after the expression`);
    }
    this.value = new Value(token, liquid);
  }
  holds(scope: Scope, budget: RenderBudget = new RenderBudget()): boolean {
    const ctx = contextFor(liquid, scope, budget);
    return budget.timed(() => isTruthy(toValueSync(this.value.value(ctx, false)), ctx));
  }
}

/** A text in one or several languages. */
export class CompiledText {
  private constructor(private readonly byLang: Map<string, CompiledTemplate>) {}

  static from(text: LocalizedText): CompiledText {
    const map = new Map<string, CompiledTemplate>();
    if (typeof text === 'string') map.set('*', CompiledTemplate.parse(text));
    else for (const [lang, t] of Object.entries(text)) map.set(lang.toLowerCase(), CompiledTemplate.parse(t));
    return new CompiledText(map);
  }

  /** The exact language, then its base language (pt-BR → pt), then the agent's default, then the first given. */
  pick(lang: string, defaultLang: string): CompiledTemplate {
    const m = this.byLang;
    return m.get('*') ?? m.get(lang) ?? m.get(lang.split('-')[0]) ?? m.get(defaultLang) ?? m.get(defaultLang.split('-')[0]) ?? m.values().next().value!;
  }

  render(scope: Scope, lang: string, defaultLang: string, budget?: RenderBudget): string {
    return this.pick(lang, defaultLang).render(scope, budget);
  }

  /** Every variant, for matching user input against option labels in any language. */
  variants(): CompiledTemplate[] {
    return [...this.byLang.values()];
  }
}

/** Renders every string inside a JSON value as a template (action bodies). */
export type JsonTemplate =
  | { kind: 'text'; tpl: CompiledTemplate }
  | { kind: 'value'; value: unknown }
  | { kind: 'array'; items: JsonTemplate[] }
  | { kind: 'object'; entries: [string, JsonTemplate][] };

export function compileJson(value: unknown): JsonTemplate {
  if (typeof value === 'string') return { kind: 'text', tpl: CompiledTemplate.parse(value) };
  if (Array.isArray(value)) return { kind: 'array', items: value.map(compileJson) };
  if (value && typeof value === 'object') {
    return { kind: 'object', entries: Object.entries(value).map(([k, v]) => [k, compileJson(v)]) };
  }
  return { kind: 'value', value };
}

export function renderJson(t: JsonTemplate, scope: Scope, budget?: RenderBudget): unknown {
  switch (t.kind) {
    case 'text':
      return t.tpl.render(scope, budget);
    case 'value':
      return t.value;
    case 'array':
      return t.items.map((i) => renderJson(i, scope, budget));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of t.entries)
        Object.defineProperty(out, k, { value: renderJson(v, scope, budget), enumerable: true, writable: true, configurable: true });
      return out;
    }
  }
}

/**
 * Every property access (`a.b[c]`) in parsed Liquid: tags, outputs, filter arguments, branches
 * and nested templates alike. liquidjs keeps no list of them (its static analysis reports
 * `[k].x` as if it were `k.x`), so the parse tree is walked as data, skipping the engine each
 * node points back to.
 */
function propertyAccesses(node: unknown, out: PropertyAccessToken[] = [], seen = new Set<object>()): PropertyAccessToken[] {
  if (node === null || typeof node !== 'object' || seen.has(node) || node instanceof Liquid) return out;
  seen.add(node);
  if ((node as { kind?: unknown }).kind === TokenKind.PropertyAccess) out.push(node as PropertyAccessToken);
  for (const [key, value] of Object.entries(node)) if (key !== 'liquid' && typeof value === 'object') propertyAccesses(value, out, seen);
  return out;
}

/** The name an access starts from: null when it is computed (`[k].x`) or quoted (`["secrets"].x`), or starts from a literal. */
function rootName(a: PropertyAccessToken): string | null | undefined {
  if (a.variable) return undefined;
  const first = a.props[0] as { kind?: unknown; content?: unknown } | undefined;
  return first?.kind === TokenKind.Word && typeof first.content === 'string' ? first.content : null;
}

const COMPUTED_ROOT = 'a variable must start with a name ([k] or ["name"] at its start is not allowed): use slots[k], context[k] or the like';

/**
 * What a template may read, decided on its parse tree: every variable starts with a name (no
 * computed or quoted name can reach a scope, `secrets` included); `secrets` is read only where
 * `allowSecrets`, and there only whole, as a bare output `{{ secrets.NAME }}` (optionally
 * `| raw` in a URL), so no filter, tag or expression can transform a secret and rendering with
 * masks in place of secrets shows exactly where each went. Returns the secret names read, or a
 * problem.
 */
export function templateReads(source: string | Value, allowSecrets: boolean): { names: string[] } | { error: string } {
  let parsed: unknown;
  try {
    parsed = typeof source === 'string' ? liquid.parse(source) : source;
  } catch {
    return { names: [] }; // a parse error is reported by whoever parses it
  }
  const wholeSecrets = new Set<PropertyAccessToken>();
  if (Array.isArray(parsed)) {
    for (const t of parsed as unknown[]) {
      const value = (t as { value?: { initial?: { postfix?: unknown[] }; filters?: { name: string }[] } }).value;
      const postfix = value?.initial?.postfix;
      const only = postfix?.length === 1 ? (postfix[0] as PropertyAccessToken) : null;
      const filtersOk = (value?.filters ?? []).every((f) => f.name === 'raw');
      if (!(t instanceof Output) || !only || only.kind !== TokenKind.PropertyAccess || !filtersOk) continue;
      const name = only.props[1] as { kind?: unknown } | undefined;
      if (rootName(only) === 'secrets' && only.props.length === 2 && name?.kind === TokenKind.Word) wholeSecrets.add(only);
    }
  }
  const names: string[] = [];
  for (const a of propertyAccesses(parsed)) {
    const root = rootName(a);
    if (root === null) return { error: COMPUTED_ROOT };
    if (root !== 'secrets') continue;
    if (!allowSecrets) return { error: 'secrets can be read only in action url, headers and body' };
    if (!wholeSecrets.has(a)) return { error: 'a secret can be read only whole, as {{ secrets.NAME }} (no filters, tags or expressions on it)' };
    names.push((a.props[1] as { content: string }).content);
  }
  return { names: [...new Set(names)] };
}

/**
 * A Liquid parse error in the author's words: the usual slips of someone who writes JavaScript or
 * Python (`&&`, `||`, `!`, `===`, `=`) get the Liquid to write instead, and the rest keep
 * liquidjs's message with its line and column.
 */
export function explainLiquidError(source: string, err: unknown): string {
  const raw = (err instanceof Error ? err.message : String(err)).split('\n')[0];
  const at = /, (line:\d+, col:\d+)$/.exec(raw);
  const where = at ? ` (${at[1].replace('line:', 'line ').replace('col:', 'column ')})` : '';
  // What the hints look at: the inside of tags and outputs (a condition is all inside), strings
  // blanked, `assign` tags left out (their `=` is right).
  const inside = /\{[{%]/.test(source) ? [...source.matchAll(/\{[{%]-?([\s\S]*?)-?[}%]\}/g)].map((m) => m[1]).filter((t) => !/^\s*assign\b/.test(t)) : [source];
  const code = inside.join(' ; ').replace(/'[^']*'|"[^"]*"/g, "''");
  const hints: [RegExp, string][] = [
    [/&&/, '`&&` is not a Liquid operator: use `and`'],
    [/\|\|/, '`||` is not a Liquid operator: use `or`'],
    [/===/, '`===` is not a Liquid operator: use `==`'],
    [/!==/, '`!==` is not a Liquid operator: use `!=`'],
    [/(^|[\s({])!(?!=)/, 'Liquid has no `!`: compare instead (`slots.x == false`, or `slots.x == blank` for an empty value), or use `unless`'],
    [/[^=!<>]=[^=]/, '`=` is not a comparison in Liquid: use `==`'],
  ];
  for (const [re, hint] of hints) if (re.test(code)) return hint + where;
  const filter = /^undefined filter: ([\w-]+)/.exec(raw);
  if (filter) return `there is no filter "${filter[1]}" (docs/agents.md lists the filters)${where}`;
  const open = /^tag \{%\s*(\w+)/.exec(raw);
  if (open && / not closed/.test(raw)) return `{% ${open[1]} %} is never closed: add {% end${open[1]} %}${where}`;
  return raw;
}
