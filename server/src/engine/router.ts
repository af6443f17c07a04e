// Scores a message against an agent's capabilities, and says when none fits.
//
// Model: multinomial logistic regression over TF-IDF of hashed word and character n-grams,
// trained by SGD with a constant step and weight averaging (averaged SGD generalises like a
// well-regularised model without a search over regularisation strengths). Out-of-scope messages
// are recognised twice over: a capability named as the agent's fallback may have examples of its
// own (a class like any other), and a message whose best probability, or whose similarity to the
// closest example of the best capability, is below a threshold calibrated on held-out examples of
// the agent's own is out of scope. An agent without out-of-scope examples gets an implicit
// background class of everyday messages (background.ts) instead: a message it wins is out of
// scope too. For English agents, when the process has word vectors (word-vectors.ts), each
// message's word vector is a hundred more features beside the n-grams, in the same softmax and the
// same similarity check. docs/routing.md has the measurements behind each choice.
import { BACKGROUND } from './background.js';
import { dot, featureCounts, TfIdf, type FeatureCounts, type SparseVector } from './text-features.js';
import { z } from 'zod';
import { allFinite, magicOf, readSections, SectionsError, writeSections, type AnyArray } from '../lib/sections.js';

/**
 * What gives a text its dense vector: the process's word vectors (word-vectors.ts), or a table of
 * a model server's embeddings of the training texts (tableEmbedder). `id` names the vectors: a
 * router is only ever scored with the vectors it was trained on.
 */
export interface Embedder {
  readonly id: string;
  readonly dims: number;
  /** Writes the text's unit vector into `out` (zeros when nothing of it is known); answers how much was known. */
  embed(text: string, out: Float32Array): number;
}

/** The id prefix of embeddings from a model server (`embeddings:<model>`): a message's vector comes with it to score(). */
export const SERVER_EMBEDDINGS = 'embeddings:';

/**
 * A model server's embeddings of the training texts, each L2-normalised (`data` holds them one
 * after another, in the order of `texts`). A text not in the table has no vector.
 */
export function tableEmbedder(id: string, dims: number, texts: string[], data: Float32Array): Embedder {
  const at = new Map<string, number>();
  texts.forEach((t, i) => at.set(t, i));
  return {
    id,
    dims,
    embed(text, out) {
      const i = at.get(text);
      if (i === undefined) {
        out.fill(0);
        return 0;
      }
      out.set(data.subarray(i * dims, (i + 1) * dims));
      return 1;
    },
  };
}

/** A model server's embeddings of the texts a router is trained on (tableEmbedder's arguments). */
export interface DenseTable {
  id: string;
  dims: number;
  texts: string[];
  data: Float32Array;
}

/** The embedder a training uses: the app's word vectors `words` (true), a server's table, or none. */
export function embedderFor(vectors: boolean | DenseTable, words: Embedder | null): Embedder | null {
  if (vectors === true) return words;
  return vectors ? tableEmbedder(vectors.id, vectors.dims, vectors.texts, vectors.data) : null;
}

/** A router of server embeddings, loaded: each message's vector is given to score(). */
function givenEmbedder(id: string, dims: number): Embedder {
  return {
    id,
    dims,
    embed() {
      throw new RouterVectorsError(`this router needs the message's embedding from ${id}`);
    },
  };
}

/** The texts a router is trained on, for a server to embed: the capabilities' examples and, without out-of-scope examples, the background class's. */
export function trainingTexts(caps: RoutableCapability[], outOfScope: string | null): string[] {
  const texts = caps.flatMap((c) => c.examples);
  const own = outOfScope && caps.some((c) => c.name === outOfScope);
  return own || caps.length === 0 ? texts : [...texts, ...BACKGROUND];
}

export interface RoutableCapability {
  name: string;
  examples: string[];
}

interface Score {
  name: string;
  score: number;
}

export interface Scored {
  /** Every routable capability with its probability, best first. */
  scores: Score[];
  /** Cosine similarity of the message to the closest example of the best capability. */
  similarity: number;
  /**
   * When the router has the implicit background class (everyday messages no capability handles):
   * its probability weighed by its size against the capabilities' (what a class of as many
   * examples as the average capability would get), comparable with `scores`.
   */
  background?: number;
}

export interface Calibration {
  /** Lowest probability at which the best capability is taken. */
  threshold: number;
  /** Lowest similarity to the best capability's closest example at which it is taken. */
  minSimilarity: number;
  /** How the figures were found: `held_out` examples, or `default` (too few examples to hold any out). */
  method: 'held_out' | 'default';
}

/**
 * The training method. A change that alters what training produces renames it: stored routers of
 * an older model still answer (their layout is the same) while they are trained again.
 */
export const ROUTER_MODEL = 'tfidf-logreg-v3';
/**
 * The training method with dense features beside the lexical ones (word vectors, a server's
 * embeddings). v4 scores them, in the first epoch, for the likeliest classes only (Softmax.fit);
 * the lexical model is unchanged, so its name is too.
 */
export const FUSED_MODEL = 'tfidf-logreg-v4';

/**
 * The model of a router trained with these vectors (null: the lexical model alone). The name
 * carries the vectors' identity: a router is only ever scored with the vectors it was trained on.
 */
export function routerModel(vectors: Pick<Embedder, 'id'> | null): string {
  return vectors ? `${FUSED_MODEL}+${vectors.id}` : ROUTER_MODEL;
}

/** The name the training method before v4 gave a router of these dense features. */
export function previousFusedModel(vectors: Pick<Embedder, 'id'>): string {
  return `${ROUTER_MODEL}+${vectors.id}`;
}

/**
 * Weight of a message's word-vector features against its lexical ones: the two parts of a
 * feature vector have norms 1/√(1+α²) and α/√(1+α²), so that the whole has norm 1 and the
 * similarity of two messages is the weighted sum of their lexical and semantic cosines.
 * Chosen on CLINC150 and the small-agent benchmark (docs/routing.md, "Word vectors").
 */
const VECTOR_WEIGHT = 0.5;

/** Thrown when a stored router needs word vectors this process does not have. */
export class RouterVectorsError extends Error {}

/**
 * A background example whose cosine similarity to one of the agent's own examples reaches this
 * is left out for that agent: the agent's topic is not background to it.
 */
const BACKGROUND_OVERLAP = 0.5;

/** Share of correctly routed held-out examples the calibrated thresholds may turn away. */
const CALIBRATION_QUANTILE = 0.01;
const MAX_CALIBRATION_POINTS = 2000;
const DEFAULT_MIN_SIMILARITY = 0.2;
/** The floor with a background class, which turns away most unrelated messages itself (docs/routing.md). */
const BACKGROUND_MIN_SIMILARITY = 0.15;
/** Epochs of the calibration model: one with the full softmax, one over candidates. */
const CALIBRATION_EPOCHS = 2;
const STEP = 3;
/** Classes kept per example for the cheaper epochs of SGD. */
const CANDIDATES = 16;
/**
 * Examples per capability kept for the similarity check: scoring compares a message with the
 * best capability's examples, so this bounds what one message costs however many examples a
 * definition brings (an even spread of them is kept).
 */
const MAX_SIMILARITY_EXAMPLES = 400;

/** Thrown when training would need more memory than its budget allows. */
export class TrainingTooLargeError extends Error {}

function spread<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  const stride = items.length / max;
  return Array.from({ length: max }, (_, k) => items[Math.floor(k * stride)]);
}

type Yield = () => Promise<void>;
const nextTick: Yield = () => new Promise((r) => setImmediate(r));

/** A deterministic shuffle (the same examples always give the same model). */
function shuffle(a: Int32Array, seed: number): void {
  let s = seed >>> 0 || 1;
  for (let i = a.length - 1; i > 0; i--) {
    s = Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9;
    s >>>= 0;
    const j = s % (i + 1);
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/** Weights of a linear softmax model, features × classes, row-major by feature. */
class Softmax {
  readonly w: Float32Array;
  readonly b: Float32Array;
  private readonly z: Float64Array;

  constructor(
    readonly features: number,
    readonly classes: number,
    /** The last `dense` features are dense: every example has them all, as its last entries (combine()). */
    readonly dense = 0,
    w?: Float32Array,
    b?: Float32Array,
  ) {
    this.w = w ?? new Float32Array(features * classes);
    this.b = b ?? new Float32Array(classes);
    this.z = new Float64Array(classes);
  }

  /** Class probabilities of x (the returned array is reused by the next call). */
  probs(x: SparseVector): Float64Array {
    return softmax(this.scores(x, x.idx.length));
  }

  /** Scores (logits) of x's first `end` features into this.z. */
  private scores(x: SparseVector, end: number): Float64Array {
    const C = this.classes;
    const z = this.z;
    const w = this.w;
    for (let c = 0; c < C; c++) z[c] = this.b[c];
    const idx = x.idx;
    const val = x.val;
    for (let k = 0; k < end; k++) {
      const base = idx[k] * C;
      const v = val[k];
      // Unrolled by four: this loop is most of the training time, and V8 does not unroll it itself.
      let c = 0;
      for (; c + 3 < C; c += 4) {
        z[c] += v * w[base + c];
        z[c + 1] += v * w[base + c + 1];
        z[c + 2] += v * w[base + c + 2];
        z[c + 3] += v * w[base + c + 3];
      }
      for (; c < C; c++) z[c] += v * w[base + c];
    }
    return z;
  }

  /**
   * Averaged SGD on the cross-entropy, yielding to the event loop every few thousand steps.
   * The first epoch uses the full softmax and remembers, per example, the
   * classes with the highest probabilities; the later epochs compute the softmax over those
   * candidates only. Classes outside them have vanishing probability, so the gradient is nearly
   * the same, and a step costs a sixth as much.
   *
   * Dense features (word vectors, a server's embeddings: the last `dense` of every example) are
   * scored in the first epoch only for the CANDIDATES classes their sparse features score highest
   * (and the truth): every class of every example would cost classes × dimensions a step, as much
   * again as all its sparse features on CLINC150, for scores that only move classes the sparse ones
   * already rank near the top. Their weights are held class by class while training (`wd`), so
   * that a class's dense weights are one run of memory, and written into `w` at the end.
   */
  async fit(xs: SparseVector[], ys: Int32Array, rows: Int32Array, epochs: number, pause: Yield): Promise<void> {
    const C = this.classes;
    const K = Math.min(C, CANDIDATES);
    const w = this.w;
    const b = this.b;
    const z = this.z;
    const D = this.dense;
    const F = this.features - D;
    const wd = new Float32Array(C * D);
    for (let d = 0; d < D; d++) for (let c = 0; c < C; c++) wd[c * D + d] = w[(F + d) * C + c];
    const sumW = new Float32Array(w.length);
    const sumWd = new Float32Array(wd.length);
    const sumB = new Float64Array(C);
    const order = Int32Array.from(rows);
    const cand = new Int32Array(xs.length * K);
    const zk = new Float64Array(K);
    const active = new Int32Array(C);
    const grad = new Float64Array(C);
    for (let e = 0; e < epochs; e++) {
      shuffle(order, 0x5eed + e);
      const full = K === C || e === 0;
      for (let n = 0; n < order.length; n++) {
        const i = order[n];
        const x = xs[i];
        const idx = x.idx;
        const val = x.val;
        // The sparse features are idx[0 .. split), the dense ones val[split ..).
        const split = idx.length - D;
        let m = 0;
        if (full) {
          this.scores(x, split);
          if (D > 0 && K < C) {
            // Dense scores for the classes the sparse ones rank highest (and the truth) only.
            topK(z, ys[i], cand, i * K, K);
            for (let a = 0; a < K; a++) z[cand[i * K + a]] += denseDot(val, split, wd, cand[i * K + a] * D, D);
          } else if (D > 0) for (let c = 0; c < C; c++) z[c] += denseDot(val, split, wd, c * D, D);
          const p = softmax(z);
          if (K < C) topK(p, ys[i], cand, i * K, K);
          p[ys[i]] -= 1;
          for (let c = 0; c < C; c++) {
            const g = p[c];
            if (g > 1e-5 || g < -1e-5) {
              active[m] = c;
              grad[m++] = g;
            }
          }
        } else {
          const off = i * K;
          for (let a = 0; a < K; a++) zk[a] = b[cand[off + a]] + denseDot(val, split, wd, cand[off + a] * D, D);
          for (let k = 0; k < split; k++) {
            const base = idx[k] * C;
            const v = val[k];
            for (let a = 0; a < K; a++) zk[a] += v * w[base + cand[off + a]];
          }
          let max = -Infinity;
          for (let a = 0; a < K; a++) if (zk[a] > max) max = zk[a];
          let sum = 0;
          for (let a = 0; a < K; a++) sum += zk[a] = Math.exp(zk[a] - max);
          for (let a = 0; a < K; a++) {
            const c = cand[off + a];
            const g = zk[a] / sum - (c === ys[i] ? 1 : 0);
            if (g > 1e-5 || g < -1e-5) {
              active[m] = c;
              grad[m++] = g;
            }
          }
        }
        for (let a = 0; a < m; a++) b[active[a]] -= STEP * grad[a];
        for (let k = 0; k < split; k++) {
          const base = idx[k] * C;
          const v = val[k] * STEP;
          for (let a = 0; a < m; a++) w[base + active[a]] -= v * grad[a];
        }
        for (let a = 0; a < m && D > 0; a++) {
          const g = STEP * grad[a];
          const base = active[a] * D;
          for (let d = 0; d < D; d++) wd[base + d] -= val[split + d] * g;
        }
        if ((n & 2047) === 2047) await pause();
      }
      for (let q = 0; q < w.length; q++) sumW[q] += w[q];
      for (let q = 0; q < wd.length; q++) sumWd[q] += wd[q];
      for (let c = 0; c < C; c++) sumB[c] += b[c];
    }
    for (let q = 0; q < w.length; q++) w[q] = sumW[q] / epochs;
    for (let d = 0; d < D; d++) for (let c = 0; c < C; c++) w[(F + d) * C + c] = sumWd[c * D + d] / epochs;
    for (let c = 0; c < C; c++) b[c] = sumB[c] / epochs;
  }
}

/** Σ val[from + d] · wd[at + d] for d < n. */
function denseDot(val: Float32Array, from: number, wd: Float32Array, at: number, n: number): number {
  let s = 0;
  for (let d = 0; d < n; d++) s += val[from + d] * wd[at + d];
  return s;
}

/** Turns scores into probabilities in place (z is returned). */
function softmax(z: Float64Array): Float64Array {
  let max = -Infinity;
  for (let c = 0; c < z.length; c++) if (z[c] > max) max = z[c];
  let sum = 0;
  for (let c = 0; c < z.length; c++) sum += z[c] = Math.exp(z[c] - max);
  for (let c = 0; c < z.length; c++) z[c] /= sum;
  return z;
}

/** Writes the K most probable classes of p into out[at..], the true class always among them. */
function topK(p: Float64Array, truth: number, out: Int32Array, at: number, K: number): void {
  out[at] = truth;
  let filled = 1;
  let worst = -1;
  for (let c = 0; c < p.length; c++) {
    if (c === truth) continue;
    if (filled < K) {
      out[at + filled++] = c;
      if (filled === K) worst = weakest(p, out, at, K);
    } else if (p[c] > p[out[at + worst]]) {
      out[at + worst] = c;
      worst = weakest(p, out, at, K);
    }
  }
}

/** Slot of the least probable kept class, the truth (slot 0) aside. */
function weakest(p: Float64Array, out: Int32Array, at: number, K: number): number {
  let worst = 1;
  for (let a = 2; a < K; a++) if (p[out[at + a]] < p[out[at + worst]]) worst = a;
  return worst;
}

function epochsFor(examples: number): number {
  return Math.max(6, Math.min(60, Math.ceil(60_000 / Math.max(1, examples))));
}

function quantile(values: number[], q: number): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/**
 * The examples kept for the similarity check, as flat arrays: example e's columns (ascending) and
 * values (quantised to 0..255) are idx/val[offsets[e] .. offsets[e + 1]), and capability c's
 * examples are classStart[c] .. classStart[c + 1]. Flat rather than one pair of views per example:
 * a view is an object of about a hundred bytes, and a large router keeps tens of thousands.
 */
interface Examples {
  idx: Uint16Array | Int32Array;
  val: Uint8Array;
  offsets: Int32Array;
  classStart: Int32Array;
  /** With word vectors: example e's message vector is dense[e·dims .. (e+1)·dims), × the part's `quant`. */
  dense: Int8Array | null;
}

/** How a router's features combine lexical and word-vector parts (absent: lexical only). */
interface VectorPart {
  /** The vectors' id (Embedder.id). */
  id: string;
  dims: number;
  /** Norm of the lexical part of a feature vector, and of the word-vector part. */
  lexical: number;
  dense: number;
  /**
   * What the stored example vectors were multiplied by before rounding to int8: 127 for word
   * vectors (absent), else 127 over the largest component of any kept example (a server's
   * embeddings have a thousand or more dimensions, most far below 1).
   */
  quant?: number;
}

/** A message's features: its TF-IDF vector with its word-vector dimensions appended as columns F… */
function combine(x: SparseVector, e: Float32Array, F: number, part: VectorPart): SparseVector {
  const n = x.idx.length;
  const idx = new Int32Array(n + part.dims);
  const val = new Float32Array(n + part.dims);
  for (let k = 0; k < n; k++) {
    idx[k] = x.idx[k];
    val[k] = x.val[k] * part.lexical;
  }
  for (let d = 0; d < part.dims; d++) {
    idx[n + d] = F + d;
    val[n + d] = e[d] * part.dense;
  }
  return { idx, val };
}

/**
 * A message's lexical vector spread out by column (zero elsewhere), so that its cosine with each of
 * the best capability's examples reads one entry per example feature instead of merging two sorted
 * lists, which branches at every step and was most of a message's scoring time. One array serves
 * every router of the process, since scoring runs to its end without yielding; it grows to the
 * largest vocabulary met, and score() sets and clears only the message's columns.
 */
let scattered = new Float32Array(1024);

/** Cosine of the message in `scattered` and example e (both L2-normalised). */
function similarity(ex: Examples, e: number): number {
  const end = ex.offsets[e + 1];
  const idx = ex.idx;
  const val = ex.val;
  let s = 0;
  for (let j = ex.offsets[e]; j < end; j++) s += scattered[idx[j]] * val[j];
  return s / 255;
}

export class Router {
  /** Scratch for probs(): scoring allocates no array of its own. */
  private readonly z: Float64Array;

  private constructor(
    private readonly names: string[],
    private readonly tfidf: TfIdf,
    /** Classes of the model: the capabilities, and the background class last when there is one. */
    private readonly classes: number,
    /** Weights, features × classes, row-major by feature, as int8 scaled per feature row. */
    private readonly w: Int8Array,
    private readonly scale: Float32Array,
    private readonly b: Float32Array,
    /** Example vectors per capability, for the similarity check. */
    private readonly examples: Examples,
    readonly calibration: Calibration,
    /** Name of the capability whose examples are out-of-scope messages, if any. */
    readonly outOfScope: string | null,
    /** Weight of the background class, the model's last (0: none; see Scored.background). */
    private readonly background: number,
    /** The stored layout this router's arrays are views on (storeRouter). */
    readonly stored: Buffer,
    /** The word-vector part of its features, and the vectors (the process's) that embed a message. */
    private readonly part: VectorPart | null,
    private readonly vectors: Embedder | null,
    /** The model that trained it, when it is known to be another than this process's (loadRouter). */
    model?: string,
  ) {
    this.z = new Float64Array(classes);
    this.e = new Float32Array(part?.dims ?? 0);
    this.model = model ?? routerModel(vectors);
  }

  /** lexical, or lexical + word vectors (with their id). */
  readonly model: string;
  /** Scratch for a message's word vector. */
  private readonly e: Float32Array;

  /**
   * Trains on the capabilities' examples. `outOfScope` names the capability (the agent's
   * fallback) whose examples stand for messages no other capability handles; its held-out
   * examples are not used to calibrate. Yields to the event loop while it works.
   */
  static async train(
    caps: RoutableCapability[],
    opts: {
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
    } = {},
  ): Promise<Router> {
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
    const part: VectorPart | null = vectors
      ? { id: vectors.id, dims: vectors.dims, lexical: 1 / Math.hypot(1, VECTOR_WEIGHT), dense: VECTOR_WEIGHT / Math.hypot(1, VECTOR_WEIGHT) }
      : null;
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
    const calibration = await Router.calibrate(
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
    // The router that answers is the stored layout's: a trained router and one loaded in another
    // process are the same bytes, and score every message alike.
    return loadRouter(
      encode({
        names: caps.map((c) => c.name),
        tfidf: tfidf.toState(),
        w: softmax.w,
        b: softmax.b,
        // With word vectors, the lexical part of an example's features, scaled back (exampleScale).
        examples: keptExamples.map((list) =>
          list.map((i) =>
            part ? { idx: xs[i].idx.subarray(0, xs[i].idx.length - part.dims), val: xs[i].val.subarray(0, xs[i].val.length - part.dims) } : xs[i],
          ),
        ),
        exampleScale: part ? 1 / part.lexical : 1,
        dense: dense && keptExamples.map((list) => list.map((i) => dense[i])),
        part,
        calibration,
        outOfScope,
        background: weight,
      }),
      vectors,
    );
  }

  /**
   * Thresholds from a stratified hold-out: a third of each class's examples (one of two, none of
   * one) is scored by a model trained on the rest, and the thresholds are set so that only
   * CALIBRATION_QUANTILE of those in-scope examples would have been turned away. Out-of-scope
   * examples (class `oos`, -1 for none) are left out: they are what the thresholds are for.
   */
  private static async calibrate(
    C: number,
    xs: SparseVector[],
    ys: Int32Array,
    features: number,
    dense: number,
    oos: number,
    floor: number,
    pause: Yield,
  ): Promise<Calibration> {
    const fallback: Calibration = { threshold: C < 2 ? 0 : round4(1 / C), minSimilarity: floor, method: 'default' };
    const perClass: number[][] = Array.from({ length: C }, () => []);
    ys.forEach((y, i) => perClass[y].push(i));
    const held = new Uint8Array(xs.length);
    for (const members of perClass) members.forEach((i, k) => (held[i] = members.length >= 2 && k % 3 === 1 ? 1 : 0));
    const trainRows = Int32Array.from([...xs.keys()].filter((i) => !held[i]));
    let testRows = [...xs.keys()].filter((i) => held[i] && ys[i] !== oos);
    if (C < 2 || testRows.length < 2) return fallback;
    // Quantiles need a few thousand points at most; scoring more costs time and changes nothing.
    if (testRows.length > MAX_CALIBRATION_POINTS) {
      const stride = testRows.length / MAX_CALIBRATION_POINTS;
      testRows = Array.from({ length: MAX_CALIBRATION_POINTS }, (_, k) => testRows[Math.floor(k * stride)]);
    }
    const model = new Softmax(features, C, dense);
    await model.fit(xs, ys, trainRows, trainRows.length >= 5000 ? CALIBRATION_EPOCHS : epochsFor(trainRows.length), pause);
    const byClass: SparseVector[][] = Array.from({ length: C }, () => []);
    for (const i of trainRows) byClass[ys[i]].push(xs[i]);
    for (let c = 0; c < C; c++) byClass[c] = spread(byClass[c], MAX_SIMILARITY_EXAMPLES);
    const probs: number[] = [];
    const sims: number[] = [];
    for (const i of testRows) {
      const p = model.probs(xs[i]);
      let best = oos === 0 ? 1 : 0;
      for (let c = best + 1; c < C; c++) if (c !== oos && p[c] > p[best]) best = c;
      probs.push(p[best]);
      let sim = 0;
      for (const e of byClass[best]) sim = Math.max(sim, dot(xs[i], e));
      sims.push(sim);
    }
    await pause();
    return {
      threshold: round4(quantile(probs, CALIBRATION_QUANTILE)),
      // A handful of held-out examples says little about the tail: never go below the default floor.
      minSimilarity: round4(Math.max(floor, quantile(sims, CALIBRATION_QUANTILE))),
      method: 'held_out',
    };
  }

  /**
   * Scores a message: probabilities of every capability, best first (ties by name). A router of
   * a server's embeddings is given the message's (`dense`, L2-normalised); word vectors are the
   * router's own.
   */
  score(message: string, dense?: Float32Array): Scored {
    const x = this.tfidf.vector(featureCounts(message));
    const part = this.part;
    let known = 0;
    if (part && dense) {
      if (dense.length !== part.dims) throw new RouterVectorsError(`an embedding of ${dense.length} numbers for a router of ${part.dims}`);
      this.e.set(dense);
      known = 1;
    } else if (part) {
      known = this.vectors!.embed(message, this.e);
    }
    const p = this.classes > 1 ? this.probs(x) : Float64Array.of(x.idx.length || known ? 1 : 0);
    const scores = this.names.map((name, i) => ({ name, score: round4(p[i]), i })).sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : 1));
    let best = 0;
    if (scores.length) {
      const c = scores[0].i;
      const ex = this.examples;
      if (scattered.length < this.tfidf.size) scattered = new Float32Array(this.tfidf.size);
      for (let k = 0; k < x.idx.length; k++) scattered[x.idx[k]] = x.val[k];
      for (let e = ex.classStart[c]; e < ex.classStart[c + 1]; e++) {
        let sim = similarity(ex, e);
        if (part) {
          // Both parts' cosines, weighed as the features are (see combine()).
          let d = 0;
          const base = e * part.dims;
          for (let k = 0; k < part.dims; k++) d += this.e[k] * ex.dense![base + k];
          sim = sim * part.lexical * part.lexical + (d / (part.quant ?? 127)) * part.dense * part.dense;
        }
        if (sim > best) best = sim;
      }
      for (let k = 0; k < x.idx.length; k++) scattered[x.idx[k]] = 0;
    }
    const out: Scored = { scores: scores.map(({ name, score }) => ({ name, score })), similarity: round4(best) };
    if (this.background > 0) out.background = round4(p[this.names.length] * this.background);
    return out;
  }

  /** Class probabilities of x under the int8 weights (the returned array is reused by the next call). */
  private probs(x: SparseVector): Float64Array {
    const C = this.classes;
    const z = this.z;
    const w = this.w;
    const lexical = this.part?.lexical ?? 1;
    for (let c = 0; c < C; c++) z[c] = this.b[c];
    for (let k = 0; k < x.idx.length; k++) {
      const col = x.idx[k];
      const v = x.val[k] * lexical * this.scale[col];
      if (v === 0) continue;
      const base = col * C;
      for (let c = 0; c < C; c++) z[c] += v * w[base + c];
    }
    if (this.part) {
      const F = this.tfidf.size;
      for (let d = 0; d < this.part.dims; d++) {
        const col = F + d;
        const v = this.e[d] * this.part.dense * this.scale[col];
        if (v === 0) continue;
        const base = col * C;
        for (let c = 0; c < C; c++) z[c] += v * w[base + c];
      }
    }
    return softmax(z);
  }

  /** The capabilities it routes among, in the definition's order. */
  get capabilities(): readonly string[] {
    return this.names;
  }

  /** The dense dimensions it scores (word vectors, a server's embeddings); 0 for a lexical router. */
  get dims(): number {
    return this.part?.dims ?? 0;
  }

  /** Bytes held: the stored layout its arrays are views on, and the examples' offsets. */
  get bytes(): number {
    return this.stored.length + this.examples.offsets.byteLength + this.examples.classStart.byteLength + 1024;
  }

  /**
   * A router from bytes of the current layout or format 2 (loadRouter reads format 1 too), scored
   * with `vectors` when it was trained with word vectors (RouterVectorsError: not these vectors).
   */
  static fromLayout(bytes: Buffer, vectors: Embedder | null, model?: string): Router {
    if (magicOf(bytes) === MAGIC_V2) {
      // Format 2 is format 3 without vectors: the same bytes under the current magic, which is what the router stores again.
      const copy = Buffer.alloc(bytes.length);
      bytes.copy(copy);
      copy.writeUInt32LE(MAGIC, 0);
      bytes = copy;
    }
    const l = readSections(bytes, MAGIC, Header, 'stored router');
    const h = l.header;
    const part = h.vectors ?? null;
    if (part?.id.startsWith(SERVER_EMBEDDINGS)) vectors = givenEmbedder(part.id, part.dims);
    if (part && part.id !== vectors?.id) {
      throw new RouterVectorsError(`this router was trained with the word vectors ${part.id}; this process has ${vectors ? vectors.id : 'none'}`);
    }
    // Every count is checked against the bytes before anything is built from it.
    const lengths = l.view('lengths', 'i32');
    const idx = l.view('idx', ['u16', 'i32']);
    const val = l.view('val', 'u8');
    const examples = exampleIndex(h.perClass, lengths, idx.length);
    if (val.length !== idx.length) throw new SectionsError('stored router: examples do not add up');
    const dense = part ? l.view('dense', 'i8') : null;
    if (dense && dense.length !== lengths.length * part!.dims) throw new SectionsError('stored router: example vectors do not add up');
    const tfidf = TfIdf.fromState({ keys: l.view('keys', 'f64'), cols: l.view('cols', 'i32'), idf: l.view('idf', 'f32') });
    for (let k = 0; k < idx.length; k++)
      if (idx[k] >= tfidf.size || idx[k] < 0) throw new SectionsError('stored router: an example feature outside its vocabulary');
    const b = l.view('b', 'f32');
    const w = l.view('w', 'i8');
    const scale = l.view('scale', 'f32');
    const rows = tfidf.size + (part?.dims ?? 0);
    if (w.length !== rows * b.length || scale.length !== rows || b.length !== h.names.length + (h.background > 0 ? 1 : 0)) {
      throw new SectionsError('stored router: weights do not match its vocabulary and classes');
    }
    if (!allFinite(b) || !allFinite(scale)) throw new SectionsError('stored router: weights that are not numbers');
    return new Router(
      h.names,
      tfidf,
      b.length,
      w,
      scale,
      b,
      { idx, val, ...examples, dense },
      h.calibration,
      h.outOfScope,
      h.background,
      l.data,
      part,
      part ? vectors : null,
      model,
    );
  }
}

/**
 * Where each kept example starts (`offsets`, from their lengths) and each class's first example
 * (`classStart`, from the examples per class), after checking that the counts add up to the
 * sections they index: a header cannot make the loader build more than its bytes hold.
 */
function exampleIndex(perClass: number[], lengths: Int32Array, entries: number): { offsets: Int32Array; classStart: Int32Array } {
  let examples = 0;
  for (const n of perClass) examples += n;
  if (examples !== lengths.length) throw new SectionsError('stored router: examples do not add up');
  const offsets = new Int32Array(lengths.length + 1);
  for (let e = 0; e < lengths.length; e++) {
    const len = lengths[e];
    if (len < 0 || offsets[e] + len > entries) throw new SectionsError('stored router: examples do not add up');
    offsets[e + 1] = offsets[e] + len;
  }
  if (offsets[lengths.length] !== entries) throw new SectionsError('stored router: examples do not add up');
  const classStart = new Int32Array(perClass.length + 1);
  perClass.forEach((n, c) => (classStart[c + 1] = classStart[c] + n));
  return { offsets, classStart };
}

/**
 * Layout of a stored router (storeRouter/loadRouter). A new layout bumps it; loadRouter reads the
 * layouts before it too (converting them), and the service stores such a router again in the
 * current one.
 *
 * Written by hand rather than with v8.serialize: a router is a few typed arrays, and this layout
 * lets a router's arrays be views on the very bytes read from the database. Deserialising copied
 * them once more, and the copies of routers loaded at once piled up as garbage until V8 collected
 * them.
 *
 *   magic · u32 length of the header · header (JSON: names, calibration, outOfScope, background,
 *   examples per class, and each section's type, offset and length) · sections, each at an
 *   offset that is a multiple of 8.
 *
 * Format 2 ("SBR2"): w (int8, features × classes), scale (f32 per feature row), b, tfidf
 * keys (ascending)/cols/idf, example lengths, example indexes (u16 when the vocabulary fits, else
 * i32), example values (u8, the value × 255). A 150-capability router (CLINC150) is 8.5 MiB
 * instead of the 26.2 MiB of format 1 ("SBR1": f32 weights, i32 indexes, f32 values, keys in no
 * order), and routes the same (docs/routing.md, "Stored once, loaded everywhere").
 *
 * Format 3 ("SBR3"): format 2, and for a router trained with word vectors, the header's `vectors`
 * (their id, dimensions and the two parts' norms), weight rows for the vector dimensions after
 * the vocabulary's, and `dense` (int8, examples × dimensions, the example's unit vector × 127).
 * Format 2 bytes are read as a lexical router of format 3.
 */
export const ROUTER_STATE_FORMAT = 3;
const MAGIC = 0x33524253; // "SBR3", little-endian
const MAGIC_V2 = 0x32524253; // "SBR2"
const MAGIC_V1 = 0x31524253; // "SBR1"

const finite = z.number().finite();
/** A stored router's header, as every format writes it (format 1 has no `vectors`). */
const Header = z
  .object({
    names: z.array(z.string()),
    calibration: z.object({ threshold: finite, minSimilarity: finite, method: z.enum(['held_out', 'default']) }),
    outOfScope: z.string().nullable(),
    background: finite.min(0),
    perClass: z.array(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)),
    vectors: z
      .object({
        id: z.string().min(1).max(300),
        dims: z.number().int().min(1).max(4096),
        lexical: finite,
        dense: finite,
        quant: finite.positive().optional(),
      })
      .nullable()
      .optional(),
  })
  .refine((h) => h.perClass.length === h.names.length, 'examples per class for every capability')
  .refine((h) => h.outOfScope === null || h.names.includes(h.outOfScope), 'an out-of-scope capability among its capabilities');

/** What training produces, at full precision. */
interface Trained {
  names: string[];
  tfidf: ReturnType<TfIdf['toState']>;
  w: Float32Array;
  b: Float32Array;
  examples: SparseVector[][];
  /** What the examples' values are multiplied by before they are stored (1 when absent). */
  exampleScale?: number;
  /** With word vectors: each kept example's unit vector, as `examples`. */
  dense: Float32Array[][] | null;
  part: VectorPart | null;
  calibration: Calibration;
  outOfScope: string | null;
  background: number;
}

/** A trained router in the current layout: weights as int8 per feature row, example values as u8. */
function encode(t: Trained): Buffer {
  const C = t.b.length;
  const F = t.tfidf.idf.length;
  const rows = F + (t.part?.dims ?? 0);
  const w = new Int8Array(rows * C);
  const scale = new Float32Array(rows);
  for (let f = 0; f < rows; f++) {
    const base = f * C;
    let max = 0;
    for (let c = 0; c < C; c++) max = Math.max(max, Math.abs(t.w[base + c]));
    if (max === 0) continue;
    scale[f] = max / 127;
    const inv = 127 / max;
    for (let c = 0; c < C; c++) w[base + c] = Math.round(t.w[base + c] * inv);
  }
  const flat = t.examples.flat();
  const exampleScale = t.exampleScale ?? 1;
  const lengths = Int32Array.from(flat, (e) => e.idx.length);
  const total = lengths.reduce((a, n) => a + n, 0);
  const idx = F <= 65536 ? new Uint16Array(total) : new Int32Array(total);
  const val = new Uint8Array(total);
  let at = 0;
  for (const e of flat) {
    idx.set(e.idx, at);
    for (let k = 0; k < e.val.length; k++) val[at + k] = Math.round(Math.min(1, e.val[k] * exampleScale) * 255);
    at += e.idx.length;
  }
  // Vocabulary keys ascending (TfIdf.fromState searches them); format 1 kept them unordered.
  const order = Array.from(t.tfidf.keys.keys()).sort((a, b) => t.tfidf.keys[a] - t.tfidf.keys[b]);
  const keys = Float64Array.from(order, (i) => t.tfidf.keys[i]);
  const cols = Int32Array.from(order, (i) => t.tfidf.cols[i]);
  const arrays: Record<string, AnyArray> = { w, scale, b: t.b, keys, cols, idf: t.tfidf.idf, lengths, idx, val };
  let part = t.part;
  if (part && t.dense) {
    const dims = part.dims;
    const flatDense = t.dense.flat();
    // Word vectors are quantised × 127 (their components are large enough); a server's
    // embeddings spread over many more dimensions, so theirs are scaled to their largest component.
    let quant = 127;
    if (part.id.startsWith(SERVER_EMBEDDINGS)) {
      let max = 0;
      for (const e of flatDense) for (let d = 0; d < dims; d++) max = Math.max(max, Math.abs(e[d]));
      quant = max > 0 ? 127 / max : 127;
      part = { ...part, quant };
    }
    const dense = new Int8Array(flatDense.length * dims);
    flatDense.forEach((e, i) => {
      for (let d = 0; d < dims; d++) dense[i * dims + d] = Math.round(e[d] * quant);
    });
    arrays.dense = dense;
  }
  return writeSections(
    MAGIC,
    {
      names: t.names,
      calibration: t.calibration,
      outOfScope: t.outOfScope,
      background: t.background,
      perClass: t.examples.map((l) => l.length),
      // The table goes here: the header's keys keep the order every stored router has.
      sections: undefined,
      ...(part ? { vectors: part } : {}),
    },
    arrays,
    { table: true },
  );
}

/** A trained router as bytes, to store and load in another process. */
export function storeRouter(router: Router): Buffer {
  return router.stored;
}

/**
 * A router from storeRouter's bytes, of this format or format 1. Its arrays are views on
 * `bytes` (on a converted copy for format 1). Throws on bytes that are not a stored router.
 * `model` is the model that trained it, as stored beside the bytes (default: this process's).
 */
export function loadRouter(bytes: Buffer, vectors: Embedder | null = null, model?: string): Router {
  if (magicOf(bytes) === MAGIC_V1) return Router.fromLayout(encode(readV1(bytes)), vectors, model);
  return Router.fromLayout(bytes, vectors, model);
}

/** What the service does with a stored router (storedPlan). */
export type StoredPlan =
  /** Stored by this model in this layout: answers as it is. */
  | { plan: 'use'; router: Router }
  /** An older layout (1, 2) of the same model: answers, and the converted bytes are stored in its place, with no training. */
  | { plan: 'convert'; router: Router }
  /** Another model's: answers now, and is trained again in the background. */
  | { plan: 'retrain'; router: Router }
  /** None, or none this process can use: trained now (and stored over it). */
  | { plan: 'train'; reason: string };

/**
 * The one decision on a stored router: whether its bytes are a layout this process reads (the
 * stored format and the bytes' own magic agree), decode within their own bounds, are scored with
 * vectors this process has, and route the definition's capabilities under its fallback, in that
 * order. Bytes that pass are used, converted or retrained by their format and model; anything
 * else is trained now. `expected.model` is the model this process trains for the definition.
 */
export function storedPlan(
  stored: { format: number; model: string; state: Buffer } | null,
  expected: { model: string; caps: RoutableCapability[]; outOfScope: string | null },
  vectors: Embedder | null,
): StoredPlan {
  if (!stored) return { plan: 'train', reason: 'none stored' };
  const format = storedFormat(stored.state);
  if (format === 0 || format !== stored.format) return { plan: 'train', reason: `stored in format ${stored.format}, which this process does not read` };
  let router: Router;
  try {
    router = loadRouter(stored.state, vectors, stored.model);
  } catch (err) {
    return { plan: 'train', reason: (err as Error).message };
  }
  const names = expected.caps.map((c) => c.name);
  const outOfScope = expected.outOfScope && names.includes(expected.outOfScope) ? expected.outOfScope : null;
  if (router.capabilities.length !== names.length || router.capabilities.some((n, i) => n !== names[i]) || router.outOfScope !== outOfScope) {
    return { plan: 'train', reason: 'its capabilities are not the definition’s' };
  }
  if (stored.model !== expected.model) return { plan: 'retrain', router };
  return { plan: format === ROUTER_STATE_FORMAT ? 'use' : 'convert', router };
}

/** The format of stored bytes (0: none this process reads). */
export function storedFormat(bytes: Buffer): number {
  const magic = magicOf(bytes);
  return magic === MAGIC ? ROUTER_STATE_FORMAT : magic === MAGIC_V2 ? 2 : magic === MAGIC_V1 ? 1 : 0;
}

/** Format 1: full-precision weights and example vectors (checked as format 3's are, then encoded anew). */
function readV1(bytes: Buffer): Trained {
  const l = readSections(bytes, MAGIC_V1, Header, 'stored router');
  const h = l.header;
  const lengths = l.view('lengths', 'i32');
  const idx = l.view('idx', 'i32');
  const val = l.view('val', 'f32');
  const { offsets, classStart } = exampleIndex(h.perClass, lengths, idx.length);
  if (val.length !== idx.length) throw new SectionsError('stored router: examples do not add up');
  const keys = l.view('keys', 'f64');
  const cols = l.view('cols', 'i32');
  const idf = l.view('idf', 'f32');
  const w = l.view('w', 'f32');
  const b = l.view('b', 'f32');
  if (cols.length !== keys.length || w.length !== idf.length * b.length || b.length !== h.names.length + (h.background > 0 ? 1 : 0)) {
    throw new SectionsError('stored router: weights do not match its vocabulary and classes');
  }
  for (let k = 0; k < cols.length; k++)
    if (!(cols[k] >= 0 && cols[k] < idf.length)) throw new SectionsError('stored router: a vocabulary column outside its weights');
  for (let k = 0; k < idx.length; k++)
    if (!(idx[k] >= 0 && idx[k] < idf.length)) throw new SectionsError('stored router: an example feature outside its vocabulary');
  if (!allFinite(w) || !allFinite(b) || !allFinite(idf) || !allFinite(val)) throw new SectionsError('stored router: weights that are not numbers');
  return {
    names: h.names,
    tfidf: { keys, cols, idf },
    w,
    b,
    examples: h.perClass.map((_, c) =>
      Array.from({ length: classStart[c + 1] - classStart[c] }, (_, k) => {
        const e = classStart[c] + k;
        return { idx: idx.subarray(offsets[e], offsets[e + 1]), val: val.subarray(offsets[e], offsets[e + 1]) };
      }),
    ),
    dense: null,
    part: null,
    calibration: h.calibration,
    outOfScope: h.outOfScope,
    background: h.background,
  };
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** A text's unit word vector (zeros when none of its words is known). */
function embedInto(vectors: Embedder, text: string): Float32Array {
  const e = new Float32Array(vectors.dims);
  vectors.embed(text, e);
  return e;
}
