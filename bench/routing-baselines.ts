// Other approaches measured by `npm run bench:routing` beside the Switchboard router.
import { createRequire } from 'node:module';
import { featureCounts, TfIdf, dot, type SparseVector } from '../server/src/engine/text-features.js';

const require = createRequire(import.meta.url);

export interface Baseline {
  name: string;
  train(data: [string, string][]): Promise<(message: string) => string>;
}

/** Nearest example by TF-IDF cosine over the same n-grams (the first Switchboard router), threshold 0.4. */
export const knnBaseline: Baseline = {
  name: 'TF-IDF nearest example (same n-grams, cosine ≥ 0.4)',
  async train(data) {
    const counts = data.map(([u]) => featureCounts(u));
    const tfidf = TfIdf.fit(counts);
    const xs: SparseVector[] = counts.map((c) => tfidf.vector(c));
    const postings = new Map<number, number[]>();
    xs.forEach((x, i) => x.idx.forEach((f) => (postings.get(f) ?? postings.set(f, []).get(f)!).push(i)));
    return (message) => {
      const q = tfidf.vector(featureCounts(message));
      const seen = new Set<number>();
      for (const f of q.idx) for (const i of postings.get(f) ?? []) seen.add(i);
      let best = -1;
      let bestSim = 0;
      for (const i of seen) {
        const s = dot(q, xs[i]);
        if (s > bestSim) [best, bestSim] = [i, s];
      }
      return best >= 0 && bestSim >= 0.4 ? data[best][1] : 'oos';
    };
  },
};

/** wink-naive-bayes-text-classifier with wink-nlp-utils tokens, stems and bigrams; out of scope as a class. */
export const winkBaseline: Baseline = {
  name: 'wink-naive-bayes-text-classifier (library)',
  async train(data) {
    const Classifier = require('wink-naive-bayes-text-classifier');
    const nlp = require('wink-nlp-utils');
    const nbc = Classifier();
    nbc.definePrepTasks([
      (text: string) => {
        const tokens = nlp.tokens.stem(nlp.tokens.removeWords(nlp.string.tokenize0(text.toLowerCase())));
        return [...tokens, ...nlp.tokens.bigrams(tokens).map((b: string[]) => b.join('_'))];
      },
    ]);
    nbc.defineConfig({ considerOnlyPresence: true, smoothingFactor: 0.5 });
    for (const [u, i] of data) nbc.learn(u, i);
    nbc.consolidate();
    return (message) => {
      try {
        return nbc.predict(message);
      } catch {
        return 'oos';
      }
    };
  },
};
