// Liquid templates and conditions for texts, action requests and branches. A template can
// never run code: liquidjs only reads the names it is given (own properties only), can include
// no files (an empty in-memory template map), and parsing and rendering are bounded.
import { Liquid, type Template } from 'liquidjs';
import type { LocalizedText } from '@switchboard/contract';

const liquid = new Liquid({
  ownPropertyOnly: true,
  strictFilters: true,
  strictVariables: false,
  templates: {},
  parseLimit: 100_000,
  renderLimit: 200,
  memoryLimit: 10_000_000,
  cache: false,
});

export type Scope = Record<string, unknown>;

export class CompiledTemplate {
  private constructor(
    readonly source: string,
    private readonly tpls: Template[] | null,
  ) {}

  static parse(source: string): CompiledTemplate {
    // Plain text renders as itself: most texts have no markup, and skipping Liquid keeps them cheap.
    if (!source.includes('{')) return new CompiledTemplate(source, null);
    return new CompiledTemplate(source, liquid.parse(source));
  }

  render(scope: Scope): string {
    if (!this.tpls) return this.source;
    return liquid.renderSync(this.tpls, scope) as string;
  }
}

/** A branch condition: Liquid's own truthiness, as `{% if %}` would judge it. */
export class CompiledCondition {
  private readonly tpl: Template[];
  constructor(readonly source: string) {
    this.tpl = liquid.parse(`{% if ${source} %}1{% endif %}`);
  }
  holds(scope: Scope): boolean {
    return liquid.renderSync(this.tpl, scope) === '1';
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
    return (
      m.get('*') ??
      m.get(lang) ??
      m.get(lang.split('-')[0]) ??
      m.get(defaultLang) ??
      m.get(defaultLang.split('-')[0]) ??
      m.values().next().value!
    );
  }

  render(scope: Scope, lang: string, defaultLang: string): string {
    return this.pick(lang, defaultLang).render(scope);
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

export function renderJson(t: JsonTemplate, scope: Scope): unknown {
  switch (t.kind) {
    case 'text':
      return t.tpl.render(scope);
    case 'value':
      return t.value;
    case 'array':
      return t.items.map((i) => renderJson(i, scope));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of t.entries) Object.defineProperty(out, k, { value: renderJson(v, scope), enumerable: true, writable: true, configurable: true });
      return out;
    }
  }
}
