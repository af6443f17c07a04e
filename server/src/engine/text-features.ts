// Tokenisation and hashed n-gram features for the router.
// Hand-written: the maintained JavaScript NLP libraries (natural, wink, nlp.js) tokenise into
// strings and count them in string-keyed maps, which costs more per message than scoring within a
// millisecond allows; here every n-gram is hashed (FNV-1a) straight from the characters.

export function normalise(text: string): string {
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

/**
 * Feature counts of a text, keyed by 32-bit hashes: word unigrams and bigrams (counted twice),
 * and character 2- to 4-grams of each word padded with spaces (so prefixes and suffixes are
 * features of their own). docs/routing.md compares the alternatives that were measured.
 */
export function featureCounts(text: string): Map<number, number> {
  const out = new Map<number, number>();
  const add = (f: number) => out.set(f, (out.get(f) ?? 0) + 1);
  const ws = words(text);
  // Whole words and word pairs count double against the many character n-grams of a message.
  const addw = (f: number) => out.set(f, (out.get(f) ?? 0) + 2);
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i];
    addw(fnv(WORD, w, 0, w.length));
    if (i + 1 < ws.length) {
      const n = ws[i + 1];
      addw(fnv(fnv(BIGRAM, w, 0, w.length) ^ 0x20, n, 0, n.length));
    }
    const padded = ` ${w} `;
    for (let n = 2; n <= 4; n++) {
      for (let j = 0; j + n <= padded.length; j++) add(fnv(CHARS + n, padded, j, j + n));
    }
  }
  return out;
}

export interface SparseVector {
  /** Column indexes, ascending. */
  idx: Int32Array;
  val: Float32Array;
}

/** A vocabulary with inverse document frequencies, fitted on a list of feature counts. */
export class TfIdf {
  private constructor(
    private readonly vocab: Map<number, number>,
    private readonly idf: Float32Array,
  ) {}

  /** Keeps features seen in at least `minDf` documents. */
  static fit(docs: Map<number, number>[], minDf = 1): TfIdf {
    const df = new Map<number, number>();
    for (const d of docs) for (const f of d.keys()) df.set(f, (df.get(f) ?? 0) + 1);
    const vocab = new Map<number, number>();
    const idf: number[] = [];
    const n = docs.length;
    for (const [f, c] of df) {
      if (c < minDf) continue;
      vocab.set(f, idf.length);
      idf.push(Math.log((n + 1) / (c + 1)) + 1);
    }
    return new TfIdf(vocab, Float32Array.from(idf));
  }

  get size(): number {
    return this.idf.length;
  }

  /** Sublinear TF × IDF, L2-normalised; unknown features are dropped. */
  vector(counts: Map<number, number>): SparseVector {
    const cols: number[] = [];
    for (const f of counts.keys()) {
      const i = this.vocab.get(f);
      if (i !== undefined) cols.push(i);
    }
    const idx = Int32Array.from(cols).sort();
    const val = new Float32Array(idx.length);
    const byCol = new Map<number, number>();
    for (const [f, c] of counts) {
      const i = this.vocab.get(f);
      if (i !== undefined) byCol.set(i, c);
    }
    let norm = 0;
    for (let k = 0; k < idx.length; k++) {
      const v = (1 + Math.log(byCol.get(idx[k])!)) * this.idf[idx[k]];
      val[k] = v;
      norm += v * v;
    }
    norm = Math.sqrt(norm) || 1;
    for (let k = 0; k < val.length; k++) val[k] /= norm;
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
