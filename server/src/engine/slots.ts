// Turns a user message into a slot value of the collect's type, or says it does not fit.
import { wordsToNumber } from './number-words.js';
import { findDates, UTC_FRAME, type DateFrame } from './dates.js';

type SlotType = 'text' | 'number' | 'integer' | 'email' | 'boolean' | 'date' | 'choice';

export interface SlotSpec {
  type: SlotType;
  /** A linear-time matcher (compilePattern). */
  pattern?: { test(text: string): boolean };
  /** For `choice`: accepted values, each with the words (value, labels) that select it. */
  choices?: { value: string; words: string[] }[];
  /** For `number` and `integer`: the accepted range. */
  min?: number;
  max?: number;
}

export type Parsed = { ok: true; value: unknown } | { ok: false };

const TRUE_WORDS = new Set(['yes', 'y', 'yeah', 'yep', 'true', '1', 'ok', 'okay', 'sure', 'si', 'sí', 'oui', 'ja', 'sim']);
const FALSE_WORDS = new Set(['no', 'n', 'nope', 'false', '0', 'non', 'nein', 'não', 'nao']);
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

function isoDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** Whether `n` lies within the slot's min and max. */
export function inRange(spec: SlotSpec, n: number): boolean {
  return (spec.min === undefined || n >= spec.min) && (spec.max === undefined || n <= spec.max);
}

/** Parses one answer; dates are read in `frame` (the user's time zone and language). */
export function parseSlot(spec: SlotSpec, raw: string, now: Date, frame: DateFrame = UTC_FRAME): Parsed {
  const text = raw.trim();
  switch (spec.type) {
    case 'text':
      if (!text) return { ok: false };
      if (spec.pattern && !spec.pattern.test(text)) return { ok: false };
      return { ok: true, value: text };
    case 'number': {
      const t = text.replace(/\s/g, '').replace(',', '.');
      const n = /^[+-]?(\d+(\.\d+)?|\.\d+)([eE][+-]?\d+)?$/.test(t) ? Number(t) : wordsToNumber(text);
      return n !== null && Number.isFinite(n) && inRange(spec, n) ? { ok: true, value: n } : { ok: false };
    }
    case 'integer': {
      const t = text.replace(/[\s_]/g, '');
      const n = /^[+-]?\d+$/.test(t) ? Number(t) : wordsToNumber(text);
      return n !== null && Number.isSafeInteger(n) && inRange(spec, n) ? { ok: true, value: n } : { ok: false };
    }
    case 'email':
      return EMAIL.test(text) && text.length <= 320 ? { ok: true, value: text } : { ok: false };
    case 'boolean': {
      const w = text.toLowerCase().replace(/[.!]+$/, '');
      if (TRUE_WORDS.has(w)) return { ok: true, value: true };
      if (FALSE_WORDS.has(w)) return { ok: true, value: false };
      return { ok: false };
    }
    case 'date': {
      const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/.exec(text);
      if (m) {
        const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
        // Reject dates that roll over (2026-02-30 → March).
        return isoDate(d) === `${m[1]}-${m[2]}-${m[3]}` ? { ok: true, value: isoDate(d) } : { ok: false };
      }
      // Natural and relative dates; an answer naming two different days is no answer.
      const days = new Set(findDates(text, now, frame).map((f) => f.value));
      return days.size === 1 ? { ok: true, value: [...days][0] } : { ok: false };
    }
    case 'choice': {
      const w = text.toLowerCase();
      for (const c of spec.choices ?? []) if (c.words.includes(w)) return { ok: true, value: c.value };
      return { ok: false };
    }
  }
}

/** Choices of a collect: its `choices`, else the phase's option values; each also matched by option labels. */
export function choiceWords(choices: string[] | undefined, options: { value: string; labels: string[] }[]): { value: string; words: string[] }[] {
  const source = choices ?? options.map((o) => o.value);
  return source.map((value) => {
    const words = new Set([value.toLowerCase()]);
    for (const o of options) if (o.value === value) for (const l of o.labels) words.add(l.toLowerCase());
    return { value, words: [...words] };
  });
}
