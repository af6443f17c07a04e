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
// scope too. docs/routing.md has the measurements behind each choice.
import { BACKGROUND } from './background.js';
import { dot, featureCounts, TfIdf, type FeatureCounts, type SparseVector } from './text-features.js';

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

/** Plain data of a trained router, for a structured clone between threads. */
export interface RouterState {
  names: string[];
  tfidf: ReturnType<TfIdf['toState']>;
  w: Float32Array;
  b: Float32Array;
  examples: { idx: Int32Array; val: Float32Array }[][];
  calibration: Calibration;
  outOfScope: string | null;
  /** Weight of the implicit background class, the model's last (0: none). */
  background: number;
}

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
    w?: Float32Array,
    b?: Float32Array,
  ) {
    this.w = w ?? new Float32Array(features * classes);
    this.b = b ?? new Float32Array(classes);
    this.z = new Float64Array(classes);
  }

  /** Class probabilities of x (the returned array is reused by the next call). */
  probs(x: SparseVector): Float64Array {
    const C = this.classes;
    const z = this.z;
    const w = this.w;
    for (let c = 0; c < C; c++) z[c] = this.b[c];
    const idx = x.idx;
    const val = x.val;
    for (let k = 0; k < idx.length; k++) {
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
    let max = -Infinity;
    for (let c = 0; c < C; c++) if (z[c] > max) max = z[c];
    let sum = 0;
    for (let c = 0; c < C; c++) {
      z[c] = Math.exp(z[c] - max);
      sum += z[c];
    }
    for (let c = 0; c < C; c++) z[c] /= sum;
    return z;
  }

  /**
   * Averaged SGD on the cross-entropy, yielding to the event loop every few thousand steps.
   * The first epoch (and every fourth) uses the full softmax and remembers, per example, the
   * classes with the highest probabilities; the epochs between compute the softmax over those
   * candidates only. Classes outside them have vanishing probability, so the gradient is nearly
   * the same, and a step costs a sixth as much.
   */
  async fit(xs: SparseVector[], ys: Int32Array, rows: Int32Array, epochs: number, pause: Yield): Promise<void> {
    const C = this.classes;
    const K = Math.min(C, CANDIDATES);
    const w = this.w;
    const b = this.b;
    const sumW = new Float32Array(w.length);
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
        let m = 0;
        if (full) {
          const p = this.probs(x);
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
          for (let a = 0; a < K; a++) zk[a] = b[cand[off + a]];
          for (let k = 0; k < idx.length; k++) {
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
        for (let k = 0; k < idx.length; k++) {
          const base = idx[k] * C;
          const v = val[k] * STEP;
          for (let a = 0; a < m; a++) w[base + active[a]] -= v * grad[a];
        }
        if ((n & 2047) === 2047) await pause();
      }
      for (let q = 0; q < w.length; q++) sumW[q] += w[q];
      for (let c = 0; c < C; c++) sumB[c] += b[c];
    }
    for (let q = 0; q < w.length; q++) w[q] = sumW[q] / epochs;
    for (let c = 0; c < C; c++) b[c] = sumB[c] / epochs;
  }

  get bytes(): number {
    return this.w.byteLength + this.b.byteLength;
  }
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

export class Router {
  readonly model = ROUTER_MODEL;

  private constructor(
    private readonly names: string[],
    private readonly tfidf: TfIdf,
    private readonly softmax: Softmax,
    /** Example vectors per capability, for the similarity check. */
    private readonly examples: SparseVector[][],
    readonly calibration: Calibration,
    /** Name of the capability whose examples are out-of-scope messages, if any. */
    readonly outOfScope: string | null,
    /** Weight of the background class, the softmax's last (0: none; see Scored.background). */
    private readonly background: number,
  ) {}

  /**
   * Trains on the capabilities' examples. `outOfScope` names the capability (the agent's
   * fallback) whose examples stand for messages no other capability handles; its held-out
   * examples are not used to calibrate. Yields to the event loop while it works.
   */
  static async train(caps: RoutableCapability[], opts: { outOfScope?: string | null; pause?: Yield; maxBytes?: number } = {}): Promise<Router> {
    const pause = opts.pause ?? nextTick;

    const outOfScope = opts.outOfScope && caps.some((c) => c.name === opts.outOfScope) ? opts.outOfScope : null;
    // No out-of-scope examples of the agent's own: the background class stands in for them.
    const background = outOfScope === null && caps.length > 0;
    const counts: FeatureCounts[] = [];
    const labels: number[] = [];
    caps.forEach((c, ci) => {
      for (const e of c.examples) {
        counts.push(featureCounts(e));
        labels.push(ci);
      }
    });
    const own = counts.length;
    if (background) for (const e of BACKGROUND) counts.push(featureCounts(e));
    // On a large agent, n-grams seen once are mostly noise and cost memory; a small one needs them all.
    const tfidf = TfIdf.fit(counts, own >= 2000 ? 2 : 1);
    const classes = caps.length + (background ? 1 : 0);
    // Weights are features × classes, held twice while training (model and running average) and
    // once more for the calibration model: refuse before allocating rather than after.
    const weightBytes = tfidf.size * classes * 4 * 4;
    if (opts.maxBytes !== undefined && weightBytes > opts.maxBytes) {
      throw new TrainingTooLargeError(
        `training this router needs about ${Math.ceil(weightBytes / 1048576)} MiB (${tfidf.size} features × ${caps.length} capabilities), over the budget of ${Math.floor(opts.maxBytes / 1048576)} MiB`,
      );
    }
    const xs = counts.slice(0, own).map((d) => tfidf.vector(d));
    if (background) {
      for (const d of counts.slice(own)) {
        const x = tfidf.vector(d);
        let near = 0;
        for (let i = 0; i < own && near < BACKGROUND_OVERLAP; i++) near = Math.max(near, dot(x, xs[i]));
        if (near >= BACKGROUND_OVERLAP) continue;
        xs.push(x);
        labels.push(caps.length);
      }
    }
    const ys = Int32Array.from(labels);
    const kept = xs.length - own;
    const weight = background ? own / caps.length / Math.max(1, kept) : 0;
    await pause();
    const calibration = await Router.calibrate(
      classes,
      xs,
      ys,
      tfidf.size,
      outOfScope ? caps.findIndex((c) => c.name === outOfScope) : background ? caps.length : -1,
      background ? BACKGROUND_MIN_SIMILARITY : DEFAULT_MIN_SIMILARITY,
      pause,
    );
    const softmax = new Softmax(tfidf.size, classes);
    if (classes > 1) await softmax.fit(xs, ys, Int32Array.from(xs.keys()), epochsFor(xs.length), pause);
    const all: SparseVector[][] = caps.map(() => []);
    xs.forEach((x, i) => {
      if (ys[i] < caps.length) all[ys[i]].push(x);
    });
    const examples = all.map((list) => spread(list, MAX_SIMILARITY_EXAMPLES));
    return new Router(
      caps.map((c) => c.name),
      tfidf,
      softmax,
      examples,
      calibration,
      outOfScope,
      weight,
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
    const model = new Softmax(features, C);
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

  /** Scores a message: probabilities of every capability, best first (ties by name). */
  score(message: string): Scored {
    const x = this.tfidf.vector(featureCounts(message));
    const C = this.names.length;
    const p = this.softmax.classes > 1 ? this.softmax.probs(x) : Float64Array.of(x.idx.length ? 1 : 0);
    const scores = this.names.map((name, i) => ({ name, score: round4(p[i]), i })).sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : 1));
    let similarity = 0;
    if (scores.length) for (const e of this.examples[scores[0].i]) similarity = Math.max(similarity, dot(x, e));
    const out: Scored = { scores: scores.map(({ name, score }) => ({ name, score })), similarity: round4(similarity) };
    if (this.background > 0) out.background = round4(p[C] * this.background);
    return out;
  }

  /**
   * The router as plain data. The examples' vectors become views over two buffers: two
   * allocations instead of two per example (tens of thousands of small ones fragment the heap of
   * the thread that frees them), and two buffers to transfer (stateBuffers) rather than to copy.
   */
  toState(): RouterState {
    let total = 0;
    for (const list of this.examples) for (const e of list) total += e.idx.length;
    const idx = new Int32Array(total);
    const val = new Float32Array(total);
    let at = 0;
    const examples = this.examples.map((list) =>
      list.map((e) => {
        idx.set(e.idx, at);
        val.set(e.val, at);
        const view = { idx: idx.subarray(at, at + e.idx.length), val: val.subarray(at, at + e.val.length) };
        at += e.idx.length;
        return view;
      }),
    );
    return {
      names: this.names,
      tfidf: this.tfidf.toState(),
      w: this.softmax.w,
      b: this.softmax.b,
      examples,
      calibration: this.calibration,
      outOfScope: this.outOfScope,
      background: this.background,
    };
  }

  static fromState(s: RouterState): Router {
    const tfidf = TfIdf.fromState(s.tfidf);
    const softmax = new Softmax(tfidf.size, s.names.length + (s.background > 0 ? 1 : 0), s.w, s.b);
    return new Router(s.names, tfidf, softmax, s.examples, s.calibration, s.outOfScope, s.background);
  }

  /** Approximate bytes held by the trained model. */
  get bytes(): number {
    let n = this.softmax.bytes + this.tfidf.size * 40;
    for (const list of this.examples) for (const e of list) n += e.idx.byteLength + e.val.byteLength + 64;
    return n;
  }
}

/**
 * Layout of a stored router (storeRouter/loadRouter). A new layout bumps it; a stored router of
 * another layout is not read, and is trained again.
 *
 * Written by hand rather than with v8.serialize: a router is a few typed arrays (a 150-capability
 * router is 26 MB, nearly all of it weights and example vectors), and this layout lets a loaded
 * router's arrays be views on the very bytes read from the database. Deserialising copied them
 * once more, and the copies of routers loaded at once piled up as garbage until V8 collected it.
 *
 *   "SBR1" · u32 length of the header · header (JSON: names, calibration, outOfScope,
 *   background, examples per class, and each section's type, offset and length) · sections,
 *   each at an offset that is a multiple of 8: w, b, tfidf keys/cols/idf, example lengths,
 *   example indexes, example values.
 */
export const ROUTER_STATE_FORMAT = 1;
const MAGIC = 0x31524253; // "SBR1", little-endian

type Section = { type: 'f32' | 'f64' | 'i32'; offset: number; length: number };
const ARRAYS = { f32: Float32Array, f64: Float64Array, i32: Int32Array } as const;

/** A trained router as bytes, to store and load in another process. */
export function storeRouter(router: Router): Buffer {
  const s = router.toState();
  const flat = s.examples.flat();
  const lengths = Int32Array.from(flat, (e) => e.idx.length);
  const idx = flat.length
    ? new Int32Array(
        flat[0].idx.buffer,
        0,
        lengths.reduce((a, b) => a + b, 0),
      )
    : new Int32Array(0);
  const val = flat.length ? new Float32Array(flat[0].val.buffer, 0, idx.length) : new Float32Array(0);
  const arrays: Record<string, Float32Array | Float64Array | Int32Array> = {
    w: s.w,
    b: s.b,
    keys: s.tfidf.keys,
    cols: s.tfidf.cols,
    idf: s.tfidf.idf,
    lengths,
    idx,
    val,
  };
  const typeOf = (a: Float32Array | Float64Array | Int32Array): Section['type'] =>
    a instanceof Float64Array ? 'f64' : a instanceof Int32Array ? 'i32' : 'f32';
  const sections: Record<string, Section> = {};
  let offset = 0;
  for (const [name, a] of Object.entries(arrays)) {
    sections[name] = { type: typeOf(a), offset, length: a.length };
    offset += Math.ceil(a.byteLength / 8) * 8;
  }
  const header = Buffer.from(
    JSON.stringify({
      names: s.names,
      calibration: s.calibration,
      outOfScope: s.outOfScope,
      background: s.background,
      perClass: s.examples.map((l) => l.length),
      sections,
    }),
  );
  const start = Math.ceil((8 + header.length) / 8) * 8;
  const out = Buffer.alloc(start + offset);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(header.length, 4);
  header.copy(out, 8);
  for (const [name, a] of Object.entries(arrays)) out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), start + sections[name].offset);
  return out;
}

/**
 * A router from storeRouter's bytes. Its arrays are views on `bytes` (copied first only when
 * `bytes` does not start at a multiple of 8, as a small pooled Buffer may not). Throws on bytes
 * that are not a stored router.
 */
export function loadRouter(bytes: Buffer): Router {
  if (bytes.length < 8 || bytes.readUInt32LE(0) !== MAGIC) throw new Error('not a stored router');
  const data = bytes.byteOffset % 8 === 0 ? bytes : Buffer.from(bytes);
  const headerLength = data.readUInt32LE(4);
  const h = JSON.parse(data.toString('utf8', 8, 8 + headerLength)) as {
    names: string[];
    calibration: Calibration;
    outOfScope: string | null;
    background: number;
    perClass: number[];
    sections: Partial<Record<string, Section>>;
  };
  const start = Math.ceil((8 + headerLength) / 8) * 8;
  const view = <T extends keyof typeof ARRAYS>(name: string, type: T): InstanceType<(typeof ARRAYS)[T]> => {
    const sec = h.sections[name];
    if (!sec || sec.type !== type) throw new Error(`stored router: no ${type} section ${name}`);
    const Ctor = ARRAYS[type];
    const at = data.byteOffset + start + sec.offset;
    if (start + sec.offset + sec.length * Ctor.BYTES_PER_ELEMENT > data.length) throw new Error(`stored router: section ${name} is cut short`);
    return new Ctor(data.buffer as ArrayBuffer, at, sec.length) as InstanceType<(typeof ARRAYS)[T]>;
  };
  const lengths = view('lengths', 'i32');
  const idx = view('idx', 'i32');
  const val = view('val', 'f32');
  let at = 0;
  let e = 0;
  const examples = h.perClass.map((n) =>
    Array.from({ length: n }, () => {
      const len = lengths[e++];
      const v = { idx: idx.subarray(at, at + len), val: val.subarray(at, at + len) };
      at += len;
      return v;
    }),
  );
  if (e !== lengths.length || at !== idx.length) throw new Error('stored router: examples do not add up');
  return Router.fromState({
    names: h.names,
    tfidf: { keys: view('keys', 'f64'), cols: view('cols', 'i32'), idf: view('idf', 'f32') },
    w: view('w', 'f32'),
    b: view('b', 'f32'),
    examples,
    calibration: h.calibration,
    outOfScope: h.outOfScope,
    background: h.background,
  });
}

/** The buffers a router's state holds, to transfer between threads instead of copying. */
export function stateBuffers(s: RouterState): ArrayBuffer[] {
  const buffers = new Set<ArrayBufferLike>([s.w.buffer, s.b.buffer]);
  for (const list of s.examples) for (const e of list) buffers.add(e.idx.buffer).add(e.val.buffer);
  return [...buffers] as ArrayBuffer[];
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
