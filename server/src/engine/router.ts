// Scores a message against an agent's capabilities: TF-IDF over word and character n-grams,
// cosine similarity to each capability's closest example (found through an inverted index).
import { featureCounts, TfIdf } from './text-features.js';

export interface RoutableCapability {
  name: string;
  examples: string[];
}

export interface Score {
  name: string;
  score: number;
}

export const ROUTER_MODEL = 'tfidf-knn-v1';

export class Router {
  readonly model = ROUTER_MODEL;

  private constructor(
    private readonly names: string[],
    private readonly tfidf: TfIdf,
    /** Per feature: the examples containing it, and their weights. */
    private readonly postings: { ex: Int32Array; w: Float32Array }[],
    private readonly exampleCap: Int32Array,
  ) {}

  static train(caps: RoutableCapability[]): Router {
    const docs: Map<string, number>[] = [];
    const exampleCap: number[] = [];
    caps.forEach((c, ci) => {
      for (const e of c.examples) {
        docs.push(featureCounts(e));
        exampleCap.push(ci);
      }
    });
    const tfidf = TfIdf.fit(docs);
    const lists: { ex: number[]; w: number[] }[] = Array.from({ length: tfidf.size }, () => ({ ex: [], w: [] }));
    docs.forEach((d, ei) => {
      const v = tfidf.vector(d);
      for (let k = 0; k < v.idx.length; k++) {
        const l = lists[v.idx[k]];
        l.ex.push(ei);
        l.w.push(v.val[k]);
      }
    });
    const postings = lists.map((l) => ({ ex: Int32Array.from(l.ex), w: Float32Array.from(l.w) }));
    return new Router(
      caps.map((c) => c.name),
      tfidf,
      postings,
      Int32Array.from(exampleCap),
    );
  }

  /** Every routable capability with its score in [0, 1], best first (ties by name). */
  score(message: string): Score[] {
    const q = this.tfidf.vector(featureCounts(message));
    const sims = new Map<number, number>();
    for (let k = 0; k < q.idx.length; k++) {
      const p = this.postings[q.idx[k]];
      const qv = q.val[k];
      for (let j = 0; j < p.ex.length; j++) sims.set(p.ex[j], (sims.get(p.ex[j]) ?? 0) + qv * p.w[j]);
    }
    const best = new Float64Array(this.names.length);
    for (const [ex, s] of sims) {
      const c = this.exampleCap[ex];
      if (s > best[c]) best[c] = s;
    }
    return this.names
      .map((name, i) => ({ name, score: Math.min(1, Math.round(best[i] * 10_000) / 10_000) }))
      .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : 1));
  }
}
