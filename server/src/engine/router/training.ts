// The training pipeline: examples to features (TF-IDF, the implicit background class, dense
// vectors), the calibration model and the final one, and the stored layout they are encoded into.
import { BACKGROUND } from '../background.js';
import { dot, featureCounts, TfIdf, type FeatureCounts } from '../text-features.js';
import { BACKGROUND_MIN_SIMILARITY, calibrate, DEFAULT_MIN_SIMILARITY } from './calibration.js';
import { encode } from './codec.js';
import type { Embedder } from './embedder.js';
import { combine, embedInto, partFor } from './fusion.js';
import { TrainingTooLargeError, type RoutableCapability } from './model.js';
import { epochsFor, nextTick, Softmax, type Yield } from './numerics.js';
import { MAX_SIMILARITY_EXAMPLES, spread } from './similarity.js';

/**
 * A background example whose cosine similarity to one of the agent's own examples reaches this
 * is left out for that agent: the agent's topic is not background to it.
 */
const BACKGROUND_OVERLAP = 0.5;

/** How a training runs: its fallback, its budget, its dense features, and how it yields. */
export interface TrainOptions {
  outOfScope?: string | null;
  pause?: Yield;
  maxBytes?: number;
  vectors?: Embedder | null;
  /** A full garbage collection (a training worker's), run between the calibration model and the final one. */
  collect?: () => void;
  /**
   * Given the full-precision model's class probabilities of a message (the capabilities', in
   * their order, then the background class's), before it is quantised into the stored layout:
   * what the stored router must stay close to (tests).
   */
  float?: (probs: (message: string) => Float64Array) => void;
}

/**
 * Trains on the capabilities' examples, answering the router's stored layout (router.ts reads it:
 * a router trained here and one loaded in another process are the same bytes). `outOfScope` names the capability (the agent's
 * fallback) whose examples stand for messages no other capability handles; its held-out
 * examples are not used to calibrate. Yields to the event loop while it works.
 */
export async function trainLayout(caps: RoutableCapability[], opts: TrainOptions = {}): Promise<Buffer> {
  const pause = opts.pause ?? nextTick;
  const vectors = opts.vectors ?? null;

  const outOfScope = opts.outOfScope && caps.some((c) => c.name === opts.outOfScope) ? opts.outOfScope : null;
  // No out-of-scope examples of the agent's own: the background class stands in for them.
  const background = outOfScope === null && caps.length > 0;
  const counts: FeatureCounts[] = [];
  const texts: string[] = [];
  const labels: number[] = [];
  caps.forEach((c, ci) => {
    for (const e of c.examples) {
      counts.push(featureCounts(e));
      texts.push(e);
      labels.push(ci);
    }
  });
  const own = counts.length;
  if (background) {
    for (const e of BACKGROUND) {
      counts.push(featureCounts(e));
      texts.push(e);
    }
  }
  // On a large agent, n-grams seen once are mostly noise and cost memory; a small one needs them all.
  const tfidf = TfIdf.fit(counts, own >= 2000 ? 2 : 1);
  const classes = caps.length + (background ? 1 : 0);
  const part = partFor(vectors);
  const features = tfidf.size + (part?.dims ?? 0);
  // Weights are features × classes, held twice while training (model and running average) and
  // once more for the calibration model: refuse before allocating rather than after.
  const weightBytes = features * classes * 4 * 4;
  if (opts.maxBytes !== undefined && weightBytes > opts.maxBytes) {
    throw new TrainingTooLargeError(
      `training this router needs about ${Math.ceil(weightBytes / 1048576)} MiB (${tfidf.size} features × ${caps.length} capabilities), over the budget of ${Math.floor(opts.maxBytes / 1048576)} MiB`,
    );
  }
  const lex = counts.slice(0, own).map((d) => tfidf.vector(d));
  /** Which text each feature vector is of (the background's are filtered). */
  const sources: number[] = [...lex.keys()];
  if (background) {
    // The overlap is lexical: word vectors find most everyday messages somewhat like any topic.
    for (let b = own; b < counts.length; b++) {
      const x = tfidf.vector(counts[b]);
      let near = 0;
      for (let i = 0; i < own && near < BACKGROUND_OVERLAP; i++) near = Math.max(near, dot(x, lex[i]));
      if (near >= BACKGROUND_OVERLAP) continue;
      lex.push(x);
      sources.push(b);
      labels.push(caps.length);
    }
  }
  // What training holds at its peak (the weights, twice, and every example's features) is kept
  // small: the examples' counts are dropped once they are vectors, and with word vectors each
  // example's lexical part is read back from its combined features rather than kept twice.
  counts.length = 0;
  const dense = part ? sources.map((t) => embedInto(vectors!, texts[t])) : null;
  const xs = part ? lex.map((x, i) => combine(x, dense![i], tfidf.size, part)) : lex;
  if (part) lex.length = 0;
  const ys = Int32Array.from(labels);
  const kept = xs.length - own;
  const weight = background ? own / caps.length / Math.max(1, kept) : 0;
  await pause();
  const calibration = await calibrate(
    classes,
    xs,
    ys,
    features,
    part?.dims ?? 0,
    outOfScope ? caps.findIndex((c) => c.name === outOfScope) : background ? caps.length : -1,
    background ? BACKGROUND_MIN_SIMILARITY : DEFAULT_MIN_SIMILARITY,
    pause,
  );
  // The calibration model is garbage now: collected before the final one is allocated.
  opts.collect?.();
  const softmax = new Softmax(features, classes, part?.dims ?? 0);
  if (classes > 1) await softmax.fit(xs, ys, Int32Array.from(xs.keys()), epochsFor(xs.length), pause);
  opts.float?.((message) => {
    const x = tfidf.vector(featureCounts(message));
    return Float64Array.from(softmax.probs(part ? combine(x, embedInto(vectors!, message), tfidf.size, part) : x));
  });
  // The examples kept for the similarity check, lexical and word-vector parts apart.
  const all: number[][] = caps.map(() => []);
  ys.forEach((y, i) => {
    if (y < caps.length) all[y].push(i);
  });
  const keptExamples = all.map((list) => spread(list, MAX_SIMILARITY_EXAMPLES));
  return encode({
    names: caps.map((c) => c.name),
    tfidf: tfidf.toState(),
    w: softmax.w,
    b: softmax.b,
    // With word vectors, the lexical part of an example's features, scaled back (exampleScale).
    examples: keptExamples.map((list) =>
      list.map((i) => (part ? { idx: xs[i].idx.subarray(0, xs[i].idx.length - part.dims), val: xs[i].val.subarray(0, xs[i].val.length - part.dims) } : xs[i])),
    ),
    exampleScale: part ? 1 / part.lexical : 1,
    dense: dense && keptExamples.map((list) => list.map((i) => dense[i])),
    part,
    calibration,
    outOfScope,
    background: weight,
  });
}
