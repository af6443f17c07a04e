// Small numbers written as English words: "two", "twenty-five", "a dozen", "half a dozen",
// "a couple". Hand-written: the libraries that read number words (words-to-numbers and the like)
// are unmaintained or parse whole sentences loosely; this reads only what it is sure of.

const UNITS = new Map(
  [
    'zero',
    'one',
    'two',
    'three',
    'four',
    'five',
    'six',
    'seven',
    'eight',
    'nine',
    'ten',
    'eleven',
    'twelve',
    'thirteen',
    'fourteen',
    'fifteen',
    'sixteen',
    'seventeen',
    'eighteen',
    'nineteen',
  ].map((w, i) => [w, i] as const),
);
const TENS = new Map(['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'].map((w, i) => [w, 20 + 10 * i] as const));
/** Phrases that stand for a number, longest first. */
const PHRASES: [string[], number][] = [
  [['half', 'a', 'dozen'], 6],
  [['a', 'dozen'], 12],
  [['a', 'couple', 'of'], 2],
  [['a', 'couple'], 2],
  [['a', 'hundred'], 100],
  [['one', 'hundred'], 100],
  [['dozen'], 12],
];

/**
 * The number the words at `words[at]` onwards spell, and how many words it took; null when they
 * spell none. `words` are lower-case, hyphens already split ("twenty-five" → twenty, five).
 */
export function numberAt(words: string[], at: number): { value: number; length: number } | null {
  for (const [phrase, value] of PHRASES) {
    if (phrase.every((w, k) => words[at + k] === w)) return { value, length: phrase.length };
  }
  const w = words[at];
  const tens = TENS.get(w);
  if (tens !== undefined) {
    const unit = UNITS.get(words[at + 1]);
    if (unit !== undefined && unit > 0 && unit < 10) return { value: tens + unit, length: 2 };
    return { value: tens, length: 1 };
  }
  const unit = UNITS.get(w);
  return unit === undefined ? null : { value: unit, length: 1 };
}

/** Splits text into lower-case words for numberAt: letters only, hyphens and spaces separate. */
function numberWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean);
}

/** The number a whole answer spells in words ("two", "a dozen"), or null. */
export function wordsToNumber(text: string): number | null {
  const words = numberWords(text);
  if (words.length === 0 || /[0-9]/.test(text)) return null;
  const n = numberAt(words, 0);
  return n && n.length === words.length ? n.value : null;
}
