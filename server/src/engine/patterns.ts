// Regular expressions a tenant writes (slot patterns, `pattern` in tool schemas, reply
// expectations of test conversations), on RE2JS: a linear-time engine, so no pattern can
// backtrack. Linear is not cheap: `.{0,1000}` 55 times is a 110,000-instruction program that
// takes 200 ms to compile and seconds to run over one long message. So every pattern is held to
// a size before it is compiled (its source, and the counted repetitions it asks for), and to a
// program size after; matching time is then at most program size × text length, and the engine
// charges it to the turn's budget. RE2JS already refuses nested repetitions over 1,000.
import { RE2JS } from 're2js';

/** Characters of one pattern's source. */
const MAX_PATTERN_CHARS = 500;
/** Instructions of one compiled pattern (RE2's "program size"). */
const MAX_PATTERN_PROGRAM = 500;
/** The estimated cost (see patternCost) of one pattern, checked before it is compiled. */
export const MAX_PATTERN_COST = MAX_PATTERN_PROGRAM * 4;
/** The estimated cost of all the patterns of one definition together. */
export const MAX_DEFINITION_PATTERN_COST = 20_000;

export class PatternTooLargeError extends Error {}

/**
 * An upper-bound estimate of a pattern's program size, read off its text without compiling it:
 * its length plus every counted repetition's largest count (`{n}`, `{n,}`, `{n,m}`).
 */
export function patternCost(source: string): number {
  let cost = source.length;
  for (const m of source.matchAll(/\{(\d+)(?:,(\d*))?\}/g)) cost += Math.max(Number(m[1]), Number(m[2] || 0));
  return cost;
}

/**
 * Compiles a pattern within the bounds: too long or too costly to compile is refused before
 * compiling, too large a program after. Throws PatternTooLargeError or RE2JS's syntax errors.
 */
export function compileBounded(source: string, flags = 0): RE2JS {
  if (source.length > MAX_PATTERN_CHARS) throw new PatternTooLargeError(`a pattern may be at most ${MAX_PATTERN_CHARS} characters`);
  if (patternCost(source) > MAX_PATTERN_COST) {
    throw new PatternTooLargeError(`the pattern's repetition counts are too large (at most ${MAX_PATTERN_PROGRAM} instructions once compiled)`);
  }
  const re = RE2JS.compile(source, flags);
  if (re.programSize() > MAX_PATTERN_PROGRAM) {
    throw new PatternTooLargeError(`the pattern compiles to ${re.programSize()} instructions, more than ${MAX_PATTERN_PROGRAM}: use smaller repetition counts`);
  }
  return re;
}

/**
 * A slot pattern on RE2JS, a linear-time engine: no pattern can backtrack, whatever the user
 * sends. Matching is a search (like RegExp.test); anchor with ^ and $ for a whole-message match.
 */
export function compilePattern(source: string): { test(text: string): boolean } {
  const re = compileBounded(source);
  return { test: (text) => re.matcher(text).find() };
}
