// The similarity check: a message's cosine with the kept examples of the capability it scores
// best, which tells a message like nothing the agent was taught from one it was.

/**
 * Examples per capability kept for the similarity check: scoring compares a message with the
 * best capability's examples, so this bounds what one message costs however many examples a
 * definition brings (an even spread of them is kept).
 */
export const MAX_SIMILARITY_EXAMPLES = 400;

/** An even spread of at most `max` of `items`. */
export function spread<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  const stride = items.length / max;
  return Array.from({ length: max }, (_, k) => items[Math.floor(k * stride)]);
}

/**
 * The examples kept for the similarity check, as flat arrays: example e's columns (ascending) and
 * values (quantised to 0..255) are idx/val[offsets[e] .. offsets[e + 1]), and capability c's
 * examples are classStart[c] .. classStart[c + 1]. Flat rather than one pair of views per example:
 * a view is an object of about a hundred bytes, and a large router keeps tens of thousands.
 */
export interface Examples {
  idx: Uint16Array | Int32Array;
  val: Uint8Array;
  offsets: Int32Array;
  classStart: Int32Array;
  /** With word vectors: example e's message vector is dense[e·dims .. (e+1)·dims), × the part's `quant`. */
  dense: Int8Array | null;
}

/**
 * A message's lexical vector spread out by column (zero elsewhere), so that its cosine with each of
 * the best capability's examples reads one entry per example feature instead of merging two sorted
 * lists, which branches at every step and was most of a message's scoring time. Each router has
 * its own, as large as its vocabulary; scoring sets and clears only the message's columns.
 */
export class Scattered {
  readonly v: Float32Array;

  constructor(features: number) {
    this.v = new Float32Array(features);
  }

  /** Cosine of the message spread here and example e (both L2-normalised). */
  similarity(ex: Examples, e: number): number {
    const v = this.v;
    const end = ex.offsets[e + 1];
    const idx = ex.idx;
    const val = ex.val;
    let s = 0;
    for (let j = ex.offsets[e]; j < end; j++) s += v[idx[j]] * val[j];
    return s / 255;
  }
}
