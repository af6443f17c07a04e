// Tokenisation and hashed n-gram features for the router.
// Hand-written: the maintained JavaScript NLP libraries (natural, wink, nlp.js) tokenise into
// strings and count them in string-keyed maps, which costs more per message than scoring within a
// millisecond allows; here every n-gram is hashed (FNV-1a) straight from the characters.
import { findSorted, strictlyAscending } from '../lib/sorted.js';

function normalise(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
}

/** Words: runs of letters and digits, an inner apostrophe kept (don't, l'eau). */
export function words(text: string): string[] {
  return normalise(text).match(/[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu) ?? [];
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv(h: number, s: string, from: number, to: number): number {
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

// Different seeds keep words, bigrams and character n-grams apart.
const WORD = fnv(FNV_OFFSET, 'w', 0, 1);
const BIGRAM = fnv(FNV_OFFSET, 'b', 0, 1);
const CHARS = fnv(FNV_OFFSET, 'c', 0, 1);

/** A word's hash: the key of its vector in word-vectors.ts (the same as its unigram feature). */
export function wordHash(word: string): number {
  return fnv(WORD, word, 0, word.length);
}

/** The distinct features of a text (ascending hashes) and how often each occurs. */
export interface FeatureCounts {
  keys: Uint32Array;
  counts: Uint16Array;
}

let scratch = new Uint32Array(1024);

/**
 * Feature counts of a text, keyed by 32-bit hashes: word unigrams and bigrams (counted twice),
 * and character 2- to 4-grams of each word padded with spaces (so prefixes and suffixes are
 * features of their own). docs/routing.md compares the alternatives that were measured.
 * Counted by sorting the hashes rather than in a map: it allocates two small arrays per text.
 */
export function featureCounts(text: string): FeatureCounts {
  const ws = words(text);
  let n = 0;
  const push = (h: number) => {
    if (n === scratch.length) {
      const bigger = new Uint32Array(scratch.length * 2);
      bigger.set(scratch);
      scratch = bigger;
    }
    scratch[n++] = h;
  };
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i];
    // Whole words and word pairs count double against the many character n-grams of a message.
    const wh = fnv(WORD, w, 0, w.length);
    push(wh);
    push(wh);
    if (i + 1 < ws.length) {
      const next = ws[i + 1];
      const bh = fnv(fnv(BIGRAM, w, 0, w.length) ^ 0x20, next, 0, next.length);
      push(bh);
      push(bh);
    }
    const padded = ` ${w} `;
    for (let g = 2; g <= 4; g++) {
      for (let j = 0; j + g <= padded.length; j++) push(fnv(CHARS + g, padded, j, j + g));
    }
  }
  const sorted = scratch.subarray(0, n).sort();
  let distinct = 0;
  for (let k = 0; k < n; k++) if (k === 0 || sorted[k] !== sorted[k - 1]) distinct++;
  const keys = new Uint32Array(distinct);
  const counts = new Uint16Array(distinct);
  let d = -1;
  for (let k = 0; k < n; k++) {
    if (k === 0 || sorted[k] !== sorted[k - 1]) keys[++d] = sorted[k];
    counts[d] = Math.min(65535, counts[d] + 1);
  }
  return { keys, counts };
}

export interface SparseVector {
  /** Column indexes, ascending. */
  idx: Int32Array;
  val: Float32Array;
}

/** A vocabulary with inverse document frequencies, fitted on a list of feature counts. */
export class TfIdf {
  private constructor(
    /** Feature hash → column: a map while fitting, a search over sorted keys once stored. */
    private readonly column: (feature: number) => number | undefined,
    private readonly idf: Float32Array,
    private readonly vocab: Map<number, number> | null,
  ) {}

  /** Keeps features seen in at least `minDf` documents. */
  static fit(docs: FeatureCounts[], minDf = 1): TfIdf {
    const df = new Map<number, number>();
    for (const d of docs) for (const f of d.keys) df.set(f, (df.get(f) ?? 0) + 1);
    const vocab = new Map<number, number>();
    const idf: number[] = [];
    const n = docs.length;
    for (const [f, c] of df) {
      if (c < minDf) continue;
      vocab.set(f, idf.length);
      idf.push(Math.log((n + 1) / (c + 1)) + 1);
    }
    return new TfIdf((f) => vocab.get(f), Float32Array.from(idf), vocab);
  }

  get size(): number {
    return this.idf.length;
  }

  /** Plain data: the feature hashes ascending, each with its column. */
  toState(): { keys: Float64Array; cols: Int32Array; idf: Float32Array } {
    if (!this.vocab) throw new Error('a stored vocabulary is its state already');
    const keys = Float64Array.from(this.vocab.keys()).sort();
    const cols = Int32Array.from(keys, (k) => this.vocab!.get(k)!);
    return { keys, cols, idf: this.idf };
  }

  /**
   * A vocabulary over stored arrays (views, not copies): `keys` ascending, found by binary
   * search. A map of tens of thousands of entries cost more memory than the arrays themselves
   * and milliseconds to build on every load.
   */
  static fromState(s: { keys: Float64Array; cols: Int32Array; idf: Float32Array }): TfIdf {
    const { keys, cols, idf } = s;
    if (cols.length !== keys.length) throw new Error('vocabulary keys and columns do not match');
    if (!strictlyAscending(keys)) throw new Error('vocabulary keys are not ascending');
    for (let i = 0; i < cols.length; i++) if (!(cols[i] >= 0 && cols[i] < idf.length)) throw new Error('a vocabulary column outside its weights');
    for (let i = 0; i < idf.length; i++) if (!Number.isFinite(idf[i])) throw new Error('a vocabulary weight that is not a number');
    const column = (f: number): number | undefined => {
      const at = findSorted(keys, f);
      return at < 0 ? undefined : cols[at];
    };
    return new TfIdf(column, idf, null);
  }

  /** Sublinear TF × IDF, L2-normalised; unknown features are dropped. */
  vector(doc: FeatureCounts): SparseVector {
    // Column and count packed into one number, so one typed-array sort orders them by column
    // (counts above 4095 are capped; under sublinear TF that changes nothing that matters).
    const packed = new Float64Array(doc.keys.length);
    let m = 0;
    for (let k = 0; k < doc.keys.length; k++) {
      const i = this.column(doc.keys[k]);
      if (i !== undefined) packed[m++] = i * 4096 + Math.min(doc.counts[k], 4095);
    }
    const sorted = packed.subarray(0, m).sort();
    const idx = new Int32Array(m);
    const val = new Float32Array(m);
    let norm = 0;
    for (let k = 0; k < m; k++) {
      const col = Math.floor(sorted[k] / 4096);
      const v = (1 + Math.log(sorted[k] - col * 4096)) * this.idf[col];
      idx[k] = col;
      val[k] = v;
      norm += v * v;
    }
    norm = Math.sqrt(norm) || 1;
    for (let k = 0; k < m; k++) val[k] /= norm;
    return { idx, val };
  }
}

/** Cosine of two L2-normalised sparse vectors. */
export function dot(a: SparseVector, b: SparseVector): number {
  let i = 0;
  let j = 0;
  let s = 0;
  while (i < a.idx.length && j < b.idx.length) {
    const x = a.idx[i];
    const y = b.idx[j];
    if (x === y) s += a.val[i++] * b.val[j++];
    else if (x < y) i++;
    else j++;
  }
  return s;
}
