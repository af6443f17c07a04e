// Tokenisation and sparse TF-IDF features shared by the router's models.
// Hand-written: the maintained JavaScript NLP libraries (natural, wink, nlp.js) either lack
// character n-grams with sublinear TF-IDF or allocate per token far more than scoring within a
// millisecond allows; this is a few dozen lines over typed arrays.

export function normalise(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
}

export function words(text: string): string[] {
  return normalise(text).match(/[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu) ?? [];
}

/** Feature counts of a text: word unigrams, word bigrams and character 3-5-grams within words. */
export function featureCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const add = (f: string) => out.set(f, (out.get(f) ?? 0) + 1);
  const ws = words(text);
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i];
    add(`w ${w}`);
    if (i + 1 < ws.length) add(`b ${w} ${ws[i + 1]}`);
    const padded = ` ${w} `;
    for (let n = 3; n <= 5; n++) {
      for (let j = 0; j + n <= padded.length; j++) add(`c ${padded.slice(j, j + n)}`);
    }
  }
  return out;
}

export interface SparseVector {
  idx: Int32Array;
  val: Float32Array;
}

/** A vocabulary with inverse document frequencies, fitted on a list of texts. */
export class TfIdf {
  private constructor(
    private readonly vocab: Map<string, number>,
    private readonly idf: Float32Array,
  ) {}

  static fit(docs: Map<string, number>[]): TfIdf {
    const df = new Map<string, number>();
    for (const d of docs) for (const f of d.keys()) df.set(f, (df.get(f) ?? 0) + 1);
    const vocab = new Map<string, number>();
    const idf: number[] = [];
    const n = docs.length;
    for (const [f, c] of df) {
      vocab.set(f, idf.length);
      idf.push(Math.log((n + 1) / (c + 1)) + 1);
    }
    return new TfIdf(vocab, Float32Array.from(idf));
  }

  get size(): number {
    return this.idf.length;
  }

  /** Sublinear TF × IDF, L2-normalised; unknown features are dropped. */
  vector(counts: Map<string, number>): SparseVector {
    const idx: number[] = [];
    const val: number[] = [];
    let norm = 0;
    for (const [f, c] of counts) {
      const i = this.vocab.get(f);
      if (i === undefined) continue;
      const v = (1 + Math.log(c)) * this.idf[i];
      idx.push(i);
      val.push(v);
      norm += v * v;
    }
    norm = Math.sqrt(norm) || 1;
    return { idx: Int32Array.from(idx), val: Float32Array.from(val, (v) => v / norm) };
  }
}
