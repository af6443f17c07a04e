// Masking (docs/privacy.md): what a privacy policy does with each value the detectors and the
// policy's own patterns find. `redact` puts a typed placeholder in its place ([EMAIL]); `hash`
// adds a keyed hash of the value, the same for the same value within a tenant ([EMAIL
// #3f9a1c2b7d]); `keep_last: n` keeps the last n letters and digits ([CARD …1111]); `keep` leaves
// it. A Masker counts what it masked, by type, for the turn's audit and the metrics.
import { createHmac } from 'node:crypto';
import type { CountryCode } from 'libphonenumber-js/max';
import type { RE2JS } from 're2js';
import { detect, loadDetectors, PII_TYPES, type Found, type PiiType } from './detectors.js';

export type MaskMode = 'redact' | 'keep' | 'hash' | { keep_last: number };

/** A pattern of the policy's own, masked under its name. */
export interface CustomDetector {
  name: string;
  re: RE2JS;
  mode: MaskMode;
}

/** A compiled policy: a mode for each type it masks, its own patterns, and the regions national phone numbers are read for. */
export interface MaskPolicy {
  modes: Partial<Record<PiiType, MaskMode>>;
  regions: CountryCode[];
  custom?: CustomDetector[];
  /** The tenant's key for `hash` (derived from SECRETS_KEY); a policy with `hash` has one. */
  hashKey?: Buffer;
}

/** The regions a language's national phone numbers are read for, when the policy names none. */
const REGIONS: Record<string, CountryCode[]> = {
  en: ['US', 'GB'],
  es: ['ES', 'MX'],
  de: ['DE', 'AT', 'CH'],
  fr: ['FR', 'BE'],
  pt: ['PT', 'BR'],
  it: ['IT'],
  nl: ['NL', 'BE'],
};

/** The regions of a policy: its own, else those of the agent's languages (a tag's region first: en-IE → IE). */
export function regionsFor(own: readonly string[] | undefined, languages: readonly string[]): CountryCode[] {
  if (own?.length) return [...own] as CountryCode[];
  const out = new Set<CountryCode>();
  for (const tag of languages) {
    const [lang, region] = tag.split('-');
    if (region && /^[A-Z]{2}$/.test(region)) out.add(region as CountryCode);
    for (const r of REGIONS[lang.toLowerCase()] ?? []) out.add(r);
  }
  return out.size ? [...out] : ['US'];
}

/** What `hash` hashes: the value without case, spaces or punctuation, so 4111 1111… and 4111-1111… mask alike. */
const normalised = (value: string) =>
  value
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}@.]/gu, '');

/** The placeholder of a value: [EMAIL], [CARD …1111], [EMAIL #3f9a1c2b7d]; numbered (`n`) for a model: [EMAIL_1]. */
function placeholder(type: string, value: string, mode: Exclude<MaskMode, 'keep'>, key: Buffer | undefined, n?: number): string {
  const label = n ? `${type.toUpperCase()}_${n}` : type.toUpperCase();
  // A policy with `hash` is refused where no key exists; one kept from before SECRETS_KEY was
  // removed redacts (masked still, only no longer the same way across messages).
  if (mode === 'redact' || (mode === 'hash' && !key)) return `[${label}]`;
  if (mode === 'hash') {
    const h = createHmac('sha256', key!)
      .update(`${type}\0${normalised(value)}`)
      .digest('hex')
      .slice(0, 10);
    return `[${label} #${h}]`;
  }
  const kept = value.replace(/[^A-Za-z0-9]/g, '').slice(-mode.keep_last);
  return `[${label} …${kept}]`;
}

/** The text with its %XX escapes decoded, or as it is when they are not UTF-8. */
function percentDecoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Where a policy's own pattern matches, as findings under its name. */
function customFound(text: string, custom: readonly CustomDetector[], kept: { start: number; end: number; type: string }[]): void {
  for (const c of custom) {
    const m = c.re.matcher(text);
    while (m.find()) {
      const start = m.start();
      const end = m.end();
      if (end > start && !kept.some((k) => start < k.end && k.start < end)) kept.push({ type: c.name, start, end });
    }
  }
}

/**
 * What reading a turn's text may cost (the maskers of one turn share one): milliseconds of the
 * detectors' work. A phone region costs about 6 ms per 4,000 characters of digits, so an action
 * whose saved results are large and full of numbers could otherwise hold the process for seconds.
 */
export interface MaskBudget {
  ms: number;
  spentMs: number;
  /** Texts kept or sent as [UNREAD] by the maskers sharing it. */
  unread: number;
  /** Texts the turn's maskers read (not a model's, whose placeholders are numbered), with what they made of them. */
  seen?: Map<string, { masked: string; counts: [string, number][] }>;
}

/**
 * The longest string the detectors read (MAX_REPLY_BYTES' default: a reply is read whole); a
 * longer one (a saved action result) is kept as [UNREAD]. One string is read whole once begun, so
 * this bounds what the last string a turn reads may cost past its budget.
 */
export const MAX_READ_CHARS = 16_384;

/** What a numbered masker (one per turn's model calls) gave each value: [EMAIL_1] and the value it stands for. */
interface Numbered {
  /** By type and value as hashed: its placeholder. */
  byValue: Map<string, string>;
  /** By placeholder: the value as written. */
  byPlaceholder: Map<string, string>;
  /** Values numbered so far, by type. */
  count: Map<string, number>;
}

export class Masker {
  /** What this masker masked, by type (`sensitive`: values of sensitive slots). */
  readonly counts: Partial<Record<string, number>> = {};
  private readonly types: Set<PiiType>;
  /** Values of sensitive slots and their placeholders, longest first. */
  private readonly literals: [string, string][] = [];

  private readonly numbered: Numbered | null;
  /** Texts read, with what was made of them and counted: the turn's, shared through its budget, else this masker's own. */
  private readonly seen: Map<string, { masked: string; counts: [string, number][] }>;
  private readonly budget: MaskBudget | undefined;

  /**
   * `numbered`: each value gets a placeholder numbered by type ([EMAIL_1], [CARD_2 …1111]), the
   * same for the same value as long as this masker lives (a turn's model calls), and `restore`
   * puts the values back.
   */
  constructor(
    private readonly policy: MaskPolicy,
    opts: { numbered?: boolean; budget?: MaskBudget } = {},
  ) {
    this.budget = opts.budget;
    this.seen = (!opts.numbered && opts.budget?.seen) || new Map<string, { masked: string; counts: [string, number][] }>();
    this.numbered = opts.numbered ? { byValue: new Map(), byPlaceholder: new Map(), count: new Map() } : null;
    this.types = new Set(PII_TYPES.filter((t) => policy.modes[t] !== undefined && policy.modes[t] !== 'keep'));
    // The first masker of a process loads the detectors' libraries here, not in a turn's budget.
    if (this.types.size) loadDetectors();
  }

  /** Masks `value` wherever it appears, as `placeholder` (a sensitive slot's answer). */
  literal(value: string, placeholder: string): void {
    if (!value) return;
    this.literals.push([value, placeholder]);
    this.literals.sort((a, b) => b[0].length - a[0].length);
  }

  /** The text with every value found masked. */
  text(s: string): string {
    if (!s) return s;
    for (const [value, placeholder] of this.literals) {
      if (!s.includes(value)) continue;
      const parts = s.split(value);
      this.counts.sensitive = (this.counts.sensitive ?? 0) + parts.length - 1;
      s = parts.join(placeholder);
    }
    if (!this.types.size && !this.policy.custom?.length) return s;
    // A turn keeps one text in several places (the message, the slot it filled, the audit): read once.
    const seen = this.seen.get(s);
    if (seen) {
      for (const [type, n] of seen.counts) this.counts[type] = (this.counts[type] ?? 0) + n;
      return seen.masked;
    }
    // What the detectors may spend is bounded (MaskBudget): past it, or in one string too long to
    // read within it, nothing is read and nothing kept: the string is kept as [UNREAD].
    const budget = this.budget;
    if (budget && (s.length > MAX_READ_CHARS || budget.spentMs >= budget.ms)) {
      this.counts.unread = (this.counts.unread ?? 0) + 1;
      budget.unread++;
      return `[UNREAD: ${s.length} characters]`;
    }
    const started = budget ? performance.now() : 0;
    const before = { ...this.counts };
    try {
      const masked = this.read(s);
      const counts = Object.entries(this.counts).flatMap(([type, n]) =>
        n! > (before[type] ?? 0) ? [[type, n! - (before[type] ?? 0)] as [string, number]] : [],
      );
      this.seen.set(s, { masked, counts });
      return masked;
    } finally {
      if (budget) budget.spentMs += performance.now() - started;
    }
  }

  private read(s: string): string {
    // A value percent-encoded (a URL's query: jane.doe%40example.com) is read decoded, and kept so.
    if (s.includes('%')) {
      const decoded = percentDecoded(s);
      if (decoded !== s) {
        const masked = this.found(decoded);
        if (masked !== decoded) return masked;
      }
    }
    return this.found(s);
  }

  /** The text with every value the detectors and the policy's patterns find masked. */
  private found(s: string): string {
    const custom = this.policy.custom ?? [];
    const found: (Found | { type: string; start: number; end: number })[] = detect(s, this.types, this.policy.regions);
    if (custom.length) {
      customFound(s, custom, found);
      found.sort((a, b) => a.start - b.start);
    }
    if (!found.length) return s;
    let out = '';
    let at = 0;
    for (const f of found) {
      const mode = (this.policy.modes[f.type as PiiType] ?? custom.find((c) => c.name === f.type)!.mode) as Exclude<MaskMode, 'keep'>;
      const value = s.slice(f.start, f.end);
      out += s.slice(at, f.start) + (this.numbered ? this.number(f.type, value, mode) : placeholder(f.type, value, mode, this.policy.hashKey));
      at = f.end;
      this.counts[f.type] = (this.counts[f.type] ?? 0) + 1;
    }
    return out + s.slice(at);
  }

  /** The numbered placeholder of a value: the one it had, or the type's next number. */
  private number(type: string, value: string, mode: Exclude<MaskMode, 'keep'>): string {
    const n = this.numbered!;
    const key = `${type}\0${normalised(value)}`;
    let p = n.byValue.get(key);
    if (!p) {
      const i = (n.count.get(type) ?? 0) + 1;
      n.count.set(type, i);
      p = placeholder(type, value, mode, this.policy.hashKey, i);
      n.byValue.set(key, p);
      n.byPlaceholder.set(p, value);
    }
    return p;
  }

  /** A copy of a JSON value with each numbered placeholder in its strings replaced by its value (a numbered masker's). */
  restore<T>(value: T): T {
    const n = this.numbered;
    if (!n?.byPlaceholder.size) return value;
    if (typeof value === 'string') {
      let s: string = value;
      for (const [p, v] of n.byPlaceholder) if (s.includes(p)) s = s.split(p).join(v);
      return s as T;
    }
    if (Array.isArray(value)) return value.map((v: unknown) => this.restore(v)) as T;
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.restore(v)])) as T;
    return value;
  }

  /** A copy of a JSON value with every string in it masked (keys are left as they are). */
  json<T>(value: T): T {
    if (typeof value === 'string') return this.text(value) as T;
    if (Array.isArray(value)) return value.map((v: unknown) => this.json(v)) as T;
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = this.json(v);
      return out as T;
    }
    return value;
  }

  /** Whether it masked anything. */
  get masked(): boolean {
    return Object.keys(this.counts).length > 0;
  }
}
