// The numerics of the router: a linear softmax model over sparse features (and dense ones
// appended), trained by averaged SGD. Nothing here knows of capabilities, names or texts.
import type { SparseVector } from '../text-features.js';

const STEP = 3;
/** Classes kept per example for the cheaper epochs of SGD. */
const CANDIDATES = 16;

export type Yield = () => Promise<void>;
export const nextTick: Yield = () => new Promise((r) => setImmediate(r));

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
export class Softmax {
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
export function softmax(z: Float64Array): Float64Array {
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

export function epochsFor(examples: number): number {
  return Math.max(6, Math.min(60, Math.ceil(60_000 / Math.max(1, examples))));
}
