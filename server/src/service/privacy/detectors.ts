// Detectors of personal data in a message (docs/privacy.md), in process, with no network. Each
// finds candidates with a bounded, linear pattern and keeps only those a library validates:
// validator.js for e-mail addresses, payment cards (issuer prefix and Luhn), IBANs (ISO 13616
// checksum), IP addresses and Spanish DNI/NIE (control letter); libphonenumber-js (Google's
// libphonenumber metadata, the full set) for phone numbers. What no library decides is written
// here and says why: the context rules that keep order, ticket and invoice numbers from being
// taken for phone numbers, the US SSN's structure (it has no checksum), and the words around a
// birth date, a name and a street address (no library reads those in three languages offline:
// names.ts says how they are found and what they miss).
import { createRequire } from 'node:module';
import type { CountryCode } from 'libphonenumber-js/max';
import type Validator from 'validator';
import { addresses, birthDates, loadNames, names } from './names.js';

// The two libraries, with libphonenumber's full metadata, take a quarter of a second to load: they
// are loaded when a process first masks, so a command-line tool or a worker that never masks does
// not pay for them.
const require = createRequire(import.meta.url);
let libraries: { validator: typeof Validator; phones: typeof import('libphonenumber-js/max') } | undefined;
const libs = () =>
  (libraries ??= { validator: require('validator') as typeof Validator, phones: require('libphonenumber-js/max') as typeof import('libphonenumber-js/max') });

/** Loads the libraries and lists now, so that a turn's budget does not pay for their loading. */
export function loadDetectors(): void {
  libs();
  loadNames();
}

/** Whether libphonenumber knows a region's phone numbers (a policy's `phone_regions`). */
export const isPhoneRegion = (region: string): boolean => libs().phones.isSupportedCountry(region);

export const PII_TYPES = ['email', 'iban', 'card', 'ssn', 'national_id', 'ip', 'birth_date', 'phone', 'address', 'name'] as const;
export type PiiType = (typeof PII_TYPES)[number];

/** A value found: its type and where it is in the text. */
export interface Found {
  type: PiiType;
  start: number;
  end: number;
}

// Candidates. Each is linear: bounded repetitions of disjoint classes, no nested quantifiers.
const EMAIL = /[A-Za-z0-9._%+'-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}/g;
// 13 to 19 digits, in groups of any size separated by one space or hyphen; not glued to letters
// (inside an IBAN) nor after a + (a phone number's country code).
const CARD = /(?<![\dA-Za-z+-])\d(?:[ -]?\d){12,18}(?![\d-])/g;
const IBAN = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g;
const SSN = /(?<![\d-])(?!000|666|9\d\d)\d{3}[- ](?!00)\d{2}[- ](?!0000)\d{4}(?![\d-])/g;
const DNI = /(?<![A-Za-z0-9])[0-9XYZxyz]\d{7}[A-Za-z](?![A-Za-z0-9])/g;
const IPV4 = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])/g;
const IPV6 = /(?<![0-9A-Fa-f:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Fa-f:])/g;

/**
 * Words that say the number after them is a business identifier, not a phone number (English,
 * Spanish, German): a number right after one of them is kept.
 */
const BUSINESS =
  /(?<![A-Za-zÀ-ÿ])(?:order|invoice|ticket|tracking|parcel|reference|ref|sku|item|account|case|booking|pedido|factura|referencia|envío|envio|seguimiento|número de pedido|bestellung|rechnung|sendung|auftrag|kundennummer|ticketnummer|nr|no)\.?\s*(?:number|no\.?|nº|n°|#|:|nummer)?\s*[#:]?\s*$/i;
/** Words that say a number is a phone number, which a bare run of digits needs before it. */
const PHONE_WORDS =
  /(?<![A-Za-zÀ-ÿ])(?:phone|call|tel|mobile|cell|whatsapp|sms|text me|teléfono|telefono|móvil|movil|llámame|llamar|telefon|telefonnummer|handy|handynummer|mobilnummer|anrufen|rufnummer|nummer)\b[^0-9]{0,24}$/i;

/**
 * A payment card: validator.js's issuer prefixes and Luhn check, and a Mastercard's length of 16
 * (validator's Mastercard pattern lacks a group around its alternatives, so it takes a number of
 * any length that starts 51 to 55: a 13-digit SKU among them).
 */
function isCard(written: string): boolean {
  const n = written.replace(/[ -]/g, '');
  if (/^(?:5[1-5]|2[2-7])/.test(n) && n.length !== 16) return false;
  return libs().validator.isCreditCard(written);
}

function matches(re: RegExp, text: string): { start: number; end: number; value: string }[] {
  const out: { start: number; end: number; value: string }[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push({ start: m.index, end: m.index + m[0].length, value: m[0] });
  return out;
}

const before = (text: string, start: number, n = 32) => text.slice(Math.max(0, start - n), start);

const DETECT: Record<Exclude<PiiType, 'phone'>, (text: string) => Found[]> = {
  birth_date: (text) => birthDates(text).map((m) => ({ type: 'birth_date' as const, ...m })),
  address: (text) => addresses(text).map((m) => ({ type: 'address' as const, ...m })),
  name: (text) => names(text).map((m) => ({ type: 'name' as const, ...m })),
  email: (text) => matches(EMAIL, text).flatMap((m) => (libs().validator.isEmail(m.value) ? [{ type: 'email' as const, start: m.start, end: m.end }] : [])),
  // A 13-digit number after an identifier's word is a barcode (SKU 4307266969851, an EAN-13), not one of the old 13-digit Visa cards.
  card: (text) =>
    matches(CARD, text).flatMap((m) =>
      isCard(m.value) && !(m.value.replace(/[ -]/g, '').length === 13 && BUSINESS.test(before(text, m.start)))
        ? [{ type: 'card' as const, start: m.start, end: m.end }]
        : [],
    ),
  iban: (text) =>
    matches(IBAN, text).flatMap((m) => {
      // The pattern may take a word after the IBAN into its last group: the longest valid prefix wins.
      for (let end = m.end; end - m.start >= 15; end--) {
        const v = text.slice(m.start, end);
        if (!v.endsWith(' ') && libs().validator.isIBAN(v.replace(/ /g, ''))) return [{ type: 'iban' as const, start: m.start, end }];
      }
      return [];
    }),
  // No checksum exists: the structure alone (no 000, 666 or 9xx area, no 00 group, no 0000 serial), in its written forms.
  ssn: (text) => matches(SSN, text).map((m) => ({ type: 'ssn' as const, start: m.start, end: m.end })),
  national_id: (text) =>
    matches(DNI, text).flatMap((m) =>
      libs().validator.isIdentityCard(m.value.toUpperCase(), 'ES') ? [{ type: 'national_id' as const, start: m.start, end: m.end }] : [],
    ),
  ip: (text) => [
    // A dotted quad after "v" or "version" is a version number.
    ...matches(IPV4, text).flatMap((m) =>
      libs().validator.isIP(m.value, 4) && !/(?:\bv|version\s*)$/i.test(before(text, m.start, 10)) ? [{ type: 'ip' as const, start: m.start, end: m.end }] : [],
    ),
    ...matches(IPV6, text).flatMap((m) => (libs().validator.isIP(m.value, 6) ? [{ type: 'ip' as const, start: m.start, end: m.end }] : [])),
  ],
};

/**
 * Phone numbers valid for their region (international ones for theirs, national ones for one of
 * `regions`), except a number right after a word that names a business identifier, one glued to
 * letters or a hyphen (INV-2026-00042), and a bare run of digits with no phone word before it.
 */
function phones(text: string, regions: readonly CountryCode[], taken: readonly Found[] = []): Found[] {
  const out = new Map<number, Found>();
  // A comma or semicolon ends a number (a candidate holds neither): libphonenumber would read ", 10"
  // after one as its extension, and refuse one that a letter follows there (", 221B Baker Street").
  // libphonenumber is read only on what could be a number (a run of at least seven digits with
  // the signs numbers are written with): it costs a quarter of a millisecond a string otherwise.
  CANDIDATE.lastIndex = 0;
  for (let c = CANDIDATE.exec(text); c; c = CANDIDATE.exec(text)) {
    // A run another type already holds whole (a card, an IBAN) is none: libphonenumber is not asked.
    const [from, to] = [c.index, c.index + c[0].length];
    if (taken.some((k) => k.start <= from && to <= k.end)) continue;
    const digits = countDigits(c[0]);
    // Seven to seventeen digits: a number with its country code and trunk prefix, no more.
    if (digits >= 7 && digits <= 17) for (const f of segmentPhones(text, c.index, c[0], regions)) if (!out.has(f.start)) out.set(f.start, f);
  }
  return [...out.values()];
}

/**
 * What could be a phone number: digits and the signs between them (no comma or semicolon), from
 * a + or ( or digit not glued to a letter, digit, #, / or hyphen before it (a number glued so is
 * an identifier's, below).
 */
const CANDIDATE = /(?<![A-Za-z0-9#/-])[+(]?\d[\d \t()./-]{5,30}\d/g;

function segmentPhones(text: string, offset: number, segment: string, regions: readonly CountryCode[]): Found[] {
  const out = new Map<number, Found>();
  // An international number reads the same for every region: once is enough.
  const all = regions.length ? regions : (['US'] as CountryCode[]);
  for (const region of segment.startsWith('+') ? all.slice(0, 1) : all) {
    for (const found of libs().phones.findPhoneNumbersInText(segment, { defaultCountry: region })) {
      const f = { ...found, startsAt: found.startsAt + offset, endsAt: found.endsAt + offset };
      if (!f.number.isValid() || out.has(f.startsAt)) continue;
      const prior = text.slice(Math.max(0, f.startsAt - 1), f.startsAt);
      if (/[A-Za-z0-9#/-]/.test(prior)) continue;
      const head = before(text, f.startsAt);
      if (BUSINESS.test(head)) continue;
      const end = f.endsAt;
      const written = text.slice(f.startsAt, end);
      if (/^\d+$/.test(written) && !PHONE_WORDS.test(head)) continue;
      // A date (2026-11-28, 28.11.2026, 28/11/26) is none, nor the shape of an SSN (123-45-6789), whatever the metadata allows.
      if (/^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{3}[- ]\d{2}[- ]\d{4})$/.test(written)) continue;
      out.set(f.startsAt, { type: 'phone', start: f.startsAt, end });
    }
  }
  return [...out.values()];
}

/** Digits a value of each type holds at the least (an IPv6 address may be all letters and colons). */
const MIN_DIGITS: Record<PiiType, number> = {
  email: 0,
  iban: 10,
  card: 13,
  ssn: 9,
  national_id: 7,
  ip: 0,
  birth_date: 2,
  phone: 7,
  address: 0,
  name: 0,
};

function countDigits(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) n++;
  }
  return n;
}

/**
 * The values of `types` in `text`, in order, none overlapping: where two overlap, the first type
 * of PII_TYPES wins (an IBAN holds digits a card or a phone number could be read in).
 */
export function detect(text: string, types: ReadonlySet<PiiType>, regions: readonly CountryCode[]): Found[] {
  if (!text) return [];
  // What a type needs at the least, looked at once: most strings of a turn's state and audit
  // (names, ids, short words) hold none, and pass every detector's pattern and library by.
  const digits = countDigits(text);
  const kept: Found[] = [];
  for (const type of PII_TYPES) {
    if (!types.has(type) || digits < MIN_DIGITS[type] || (type === 'email' && !text.includes('@'))) continue;
    for (const f of type === 'phone' ? phones(text, regions, kept) : DETECT[type](text)) {
      if (!kept.some((k) => f.start < k.end && k.start < f.end)) kept.push(f);
    }
  }
  return kept.sort((a, b) => a.start - b.start);
}
