// Masking (docs/privacy.md): what an agent's `privacy` policy does with each value the detectors
// find. `redact` puts a typed placeholder in its place ([EMAIL]); `keep_last: n` keeps the last n
// letters and digits after the type ([CARD …1111]); `keep` leaves it. A Masker counts what it
// masked, by type, for the turn's audit and the metrics.
import type { CountryCode } from 'libphonenumber-js/max';
import { detect, PII_TYPES, type PiiType } from './detectors.js';

export type MaskMode = 'redact' | 'keep' | { keep_last: number };

/** A compiled policy: a mode for each type it masks, and the regions national phone numbers are read for. */
export interface MaskPolicy {
  modes: Partial<Record<PiiType, MaskMode>>;
  regions: CountryCode[];
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

const LABEL: Record<PiiType, string> = {
  email: 'EMAIL',
  card: 'CARD',
  iban: 'IBAN',
  ssn: 'SSN',
  national_id: 'NATIONAL_ID',
  ip: 'IP',
  phone: 'PHONE',
};

function placeholder(type: PiiType, value: string, mode: Exclude<MaskMode, 'keep'>): string {
  if (mode === 'redact') return `[${LABEL[type]}]`;
  const kept = value.replace(/[^A-Za-z0-9]/g, '').slice(-mode.keep_last);
  return `[${LABEL[type]} …${kept}]`;
}

export class Masker {
  /** What this masker masked, by type (`sensitive`: values of sensitive slots). */
  readonly counts: Partial<Record<PiiType | 'sensitive', number>> = {};
  private readonly types: Set<PiiType>;
  /** Values of sensitive slots and their placeholders, longest first. */
  private readonly literals: [string, string][] = [];

  constructor(private readonly policy: MaskPolicy) {
    this.types = new Set(PII_TYPES.filter((t) => policy.modes[t] !== undefined && policy.modes[t] !== 'keep'));
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
    if (!this.types.size) return s;
    const found = detect(s, this.types, this.policy.regions);
    if (!found.length) return s;
    let out = '';
    let at = 0;
    for (const f of found) {
      const mode = this.policy.modes[f.type] as Exclude<MaskMode, 'keep'>;
      out += s.slice(at, f.start) + placeholder(f.type, s.slice(f.start, f.end), mode);
      at = f.end;
      this.counts[f.type] = (this.counts[f.type] ?? 0) + 1;
    }
    return out + s.slice(at);
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
