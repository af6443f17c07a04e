// Slots from the message that chose a capability: "can I get two large margheritas" fills the
// quantity, the size and the pizza, and the phases that would ask for them are skipped. A slot is
// filled only when its type reads unambiguously from the message: exactly one value of that
// type, in words no other slot of the capability could also read. Text slots without a pattern
// never are, nor any collect with `prefill: false`.
import type { CompiledCapability } from './compile.js';
import { numberAt } from './number-words.js';
import { inRange, parseSlot, type SlotSpec } from './slots.js';
import { findDates, UTC_FRAME, type DateFrame } from './dates.js';

export interface Prefill {
  slot: string;
  /** The phase that would have asked for it. */
  phase: string;
  value: unknown;
  /** The words of the message it was read from. */
  source: string;
}

interface Candidate {
  value: unknown;
  start: number;
  end: number;
}

interface Token {
  text: string;
  start: number;
  end: number;
}

/** Words of the message with their positions, surrounding punctuation trimmed ("100001?" → "100001"). */
function tokens(message: string): Token[] {
  const out: Token[] = [];
  for (const m of message.matchAll(/\S+/g)) {
    const raw = m[0];
    const lead = /^[("'“‘[{<#¿¡$€£]*/.exec(raw)![0].length;
    const trail = /[)"'”’\]}>.,;:!?]*$/.exec(raw.slice(lead))![0].length;
    const text = raw.slice(lead, raw.length - trail);
    if (text) out.push({ text, start: m.index + lead, end: m.index + raw.length - trail });
  }
  return out;
}

/** Yes and no in an opening message: only the words that cannot mean anything else. */
const YES = new Set(['yes', 'yeah', 'yep']);
const NO = new Set(['no', 'nope']);

const isWordChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** Every place `phrase` stands as whole words in `text` (both lower-case), plural `s`/`es` allowed. */
function phraseAt(text: string, phrase: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  if (!phrase) return out;
  for (let at = text.indexOf(phrase); at !== -1; at = text.indexOf(phrase, at + 1)) {
    let end = at + phrase.length;
    if (text.startsWith('es', end) && !isWordChar(text[end + 2])) end += 2;
    else if (text[end] === 's' && !isWordChar(text[end + 1])) end += 1;
    if (!isWordChar(text[at - 1]) && !isWordChar(text[end])) out.push({ start: at, end });
  }
  return out;
}

/** What every slot of one message reads alike, worked out once for all its collects. */
interface Reading {
  message: string;
  now: Date;
  frame: DateFrame;
  words: Token[];
  /** The days the message names (chrono is the costliest read: once a message, however many date slots). */
  dates?: Candidate[];
}

/** The values of `spec`'s type that `message` holds, each where it stands. */
function candidates(spec: SlotSpec, r: Reading): Candidate[] {
  const { message, now, frame, words } = r;
  const parsed = (t: Token): Candidate[] => {
    const p = parseSlot(spec, t.text, now, frame);
    return p.ok ? [{ value: p.value, start: t.start, end: t.end }] : [];
  };
  switch (spec.type) {
    case 'text':
      return spec.pattern ? words.flatMap(parsed) : [];
    case 'email':
      return words.flatMap(parsed);
    case 'date':
      // Mentions of a day span words ("next Friday"): read from the whole message.
      return (r.dates ??= findDates(message, now, frame));
    case 'boolean':
      return words.flatMap((t) => {
        const w = t.text.toLowerCase();
        return YES.has(w) || NO.has(w) ? [{ value: YES.has(w), start: t.start, end: t.end }] : [];
      });
    case 'number':
    case 'integer': {
      const digits = words.filter((t) => /\d/.test(t.text)).flatMap(parsed);
      // Number words, with the positions of the words they span.
      const spelled: Candidate[] = [];
      const lower = [...message.toLowerCase().matchAll(/[a-z]+/g)].map((m) => ({ w: m[0], start: m.index, end: m.index + m[0].length }));
      const list = lower.map((x) => x.w);
      for (let i = 0; i < lower.length; i++) {
        const n = numberAt(list, i);
        if (!n) continue;
        if (inRange(spec, n.value)) spelled.push({ value: n.value, start: lower[i].start, end: lower[i + n.length - 1].end });
        i += n.length - 1;
      }
      return [...digits, ...spelled];
    }
    case 'choice': {
      const text = message.toLowerCase();
      return (spec.choices ?? []).flatMap((c) => c.words.flatMap((w) => phraseAt(text, w).map((at) => ({ value: c.value, ...at }))));
    }
  }
}

const overlaps = (a: Candidate, b: Candidate) => a.start < b.end && b.start < a.end;

/**
 * What the message fills among the capability's collects, in phase order: each slot once (at the
 * first phase that collects it). `checkpoint` is called before each slot is read (the turn's
 * render budget: it throws when the work the definition causes is spent).
 */
export function prefillSlots(
  capability: CompiledCapability,
  message: string,
  now: Date,
  frame: DateFrame = UTC_FRAME,
  checkpoint: () => void = () => {},
): Prefill[] {
  const reading: Reading = { message, now, frame, words: tokens(message) };
  const seen = new Set<string>();
  const collects: { slot: string; phase: string; found: Candidate[] }[] = [];
  for (const p of capability.phases) {
    const c = p.collect;
    if (!c || seen.has(c.slot)) continue;
    seen.add(c.slot);
    if (!c.prefill) continue;
    checkpoint();
    collects.push({ slot: c.slot, phase: p.id, found: candidates(c.spec, reading) });
  }
  const out: Prefill[] = [];
  for (const c of collects) {
    const values = new Set(c.found.map((f) => JSON.stringify(f.value)));
    if (values.size !== 1) continue;
    // Words another slot could also read belong to neither.
    const contested = collects.some((o) => o !== c && o.found.some((f) => c.found.some((g) => overlaps(f, g))));
    if (contested) continue;
    const first = c.found[0];
    out.push({ slot: c.slot, phase: c.phase, value: first.value, source: message.slice(first.start, first.end) });
  }
  return out;
}
