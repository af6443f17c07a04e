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
// scope too. For English agents, when the app has word vectors (word-vectors.ts), each message's
// word vector is a hundred more features beside the n-grams, in the same softmax and the same
// similarity check. docs/routing.md has the measurements behind each choice.
//
// A Router is always read from its stored layout (codec.ts): one trained here and one loaded in
// another process are the same bytes, and score every message alike.
import { featureCounts, type SparseVector, type TfIdf } from '../text-features.js';
import { decode } from './codec.js';
import { givenEmbedder, RouterVectorsError, SERVER_EMBEDDINGS, type Embedder } from './embedder.js';
import type { VectorPart } from './fusion.js';
import { round4, routerModel, type Calibration, type RoutableCapability, type Scored } from './model.js';
import { softmax } from './numerics.js';
import { Scattered, type Examples } from './similarity.js';
import { trainLayout, type TrainOptions } from './training.js';

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
  /** Scratch of the similarity check, made on the first message (counted in `bytes`). */
  private scattered: Scattered | null = null;
  /**
   * Trains on the capabilities' examples (training.ts). `outOfScope` names the capability (the
   * agent's fallback) whose examples stand for messages no other capability handles; its
   * held-out examples are not used to calibrate. Yields to the event loop while it works.
   */
  static async train(caps: RoutableCapability[], opts: TrainOptions = {}): Promise<Router> {
    return loadRouter(await trainLayout(caps, opts), opts.vectors ?? null);
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
      const scattered = (this.scattered ??= new Scattered(this.tfidf.size));
      for (let k = 0; k < x.idx.length; k++) scattered.v[x.idx[k]] = x.val[k];
      for (let e = ex.classStart[c]; e < ex.classStart[c + 1]; e++) {
        let sim = scattered.similarity(ex, e);
        if (part) {
          // Both parts' cosines, weighed as the features are (see combine()).
          let d = 0;
          const base = e * part.dims;
          for (let k = 0; k < part.dims; k++) d += this.e[k] * ex.dense![base + k];
          sim = sim * part.lexical * part.lexical + (d / (part.quant ?? 127)) * part.dense * part.dense;
        }
        if (sim > best) best = sim;
      }
      for (let k = 0; k < x.idx.length; k++) scattered.v[x.idx[k]] = 0;
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
    return this.stored.length + this.examples.offsets.byteLength + this.examples.classStart.byteLength + 4 * this.tfidf.size + 1024;
  }

  /**
   * A router from stored bytes of any format this process reads (codec.ts checks them), scored
   * with `vectors` when it was trained with word vectors (RouterVectorsError: not these vectors).
   */
  static fromLayout(bytes: Buffer, vectors: Embedder | null, model?: string): Router {
    const d = decode(bytes);
    const part = d.part;
    if (part?.id.startsWith(SERVER_EMBEDDINGS)) vectors = givenEmbedder(part.id, part.dims);
    if (part && part.id !== vectors?.id) {
      throw new RouterVectorsError(`this router was trained with the word vectors ${part.id}; this process has ${vectors ? vectors.id : 'none'}`);
    }
    return new Router(
      d.names,
      d.tfidf,
      d.b.length,
      d.w,
      d.scale,
      d.b,
      d.examples,
      d.calibration,
      d.outOfScope,
      d.background,
      d.stored,
      part,
      part ? vectors : null,
      model,
    );
  }
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
  return Router.fromLayout(bytes, vectors, model);
}
