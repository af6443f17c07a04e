// Whether a generative answer says only what the passages it cites say (docs/generative.md,
// "Grounded answers"): each sentence that makes a claim (three content words or more, or a number)
// must find, among the passages it names by id (or, naming none, among all the answer names), one
// that holds at least `minSupport` of its content words (stemmed, stop words out) and every number
// it states. Lexical, in process, no model: it catches an answer that cites nothing, cites the
// wrong passage, or adds figures the passages do not hold; it does not judge paraphrase that
// shares few words with the passage (such a sentence is refused, which errs on the safe side).
import { terms } from './knowledge.js';

export interface GroundingPassage {
  id: string;
  title: string | null;
  text: string;
}

export interface GroundingCheck {
  supported: boolean;
  /** The passages the answer names by id. */
  cited: string[];
  /** Each sentence that makes a claim, the passage that supports it best and how much of it that passage holds (0–1). */
  claims: { sentence: string; passage: string | null; support: number; missing_numbers?: string[] }[];
}

const SENTENCES = /(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(])/u;
const NUMBER = /\d+(?:[.,]\d+)*/g;
/** Sentences checked at most: an answer longer than this is judged on its first ones and refused if it has more. */
const MAX_CLAIMS = 50;

export function checkGrounding(text: string, found: GroundingPassage[], minSupport: number): GroundingCheck {
  const named = (s: string) => found.filter((p) => s.includes(`[${p.id}]`));
  const cited = named(text);
  const held = new Map(cited.map((p) => [p.id, { terms: new Set(terms(`${p.title ?? ''} ${p.text}`)), numbers: new Set(p.text.match(NUMBER) ?? []) }]));
  const claims: GroundingCheck['claims'] = [];
  const sentences = text
    .replace(/\s*\n+\s*/g, ' ')
    .split(SENTENCES)
    .map((s) => s.trim())
    .filter(Boolean);
  for (const raw of sentences.slice(0, MAX_CLAIMS + 1)) {
    const sentence = raw.replace(/\s*\[[^\]\s]{1,200}\]/g, '');
    const numbers = sentence.match(NUMBER) ?? [];
    const words = [...new Set(terms(sentence.replace(NUMBER, ' ')))];
    if (words.length < 3 && numbers.length === 0) continue;
    let best: GroundingCheck['claims'][number] = { sentence, passage: null, support: 0 };
    const own = named(raw);
    const candidates = own.length ? own : cited;
    for (const p of candidates) {
      const h = held.get(p.id)!;
      const missing = numbers.filter((n) => !h.numbers.has(n));
      const share = words.length ? words.filter((w) => h.terms.has(w)).length / words.length : 1;
      const support = missing.length ? 0 : share;
      if (support > best.support || best.passage === null) best = { sentence, passage: p.id, support, ...(missing.length ? { missing_numbers: missing } : {}) };
    }
    claims.push({ ...best, support: Math.round(best.support * 100) / 100 });
  }
  const supported = claims.length <= MAX_CLAIMS && claims.every((c) => c.passage !== null && c.support >= minSupport);
  return { supported, cited: cited.map((p) => p.id), claims };
}
