// Fusion of lexical and dense features: a message's TF-IDF vector with its word vector (or a
// model server's embedding) appended as more columns, each part weighted so that the whole has
// norm 1 and two messages' similarity is the weighted sum of their lexical and dense cosines.
import type { SparseVector } from '../text-features.js';
import type { Embedder } from './embedder.js';

/**
 * Weight of a message's word-vector features against its lexical ones: the two parts of a
 * feature vector have norms 1/√(1+α²) and α/√(1+α²), so that the whole has norm 1 and the
 * similarity of two messages is the weighted sum of their lexical and semantic cosines.
 * Chosen on CLINC150 and the small-agent benchmark (docs/routing.md, "Word vectors").
 */
const VECTOR_WEIGHT = 0.5;

/** How a router's features combine lexical and word-vector parts (absent: lexical only). */
export interface VectorPart {
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
export function combine(x: SparseVector, e: Float32Array, F: number, part: VectorPart): SparseVector {
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

/** A text's unit word vector (zeros when none of its words is known). */
export function embedInto(vectors: Embedder, text: string): Float32Array {
  const e = new Float32Array(vectors.dims);
  vectors.embed(text, e);
  return e;
}

/** The part a training with these vectors gives its features (null: lexical only). */
export function partFor(vectors: Embedder | null): VectorPart | null {
  return vectors
    ? { id: vectors.id, dims: vectors.dims, lexical: 1 / Math.hypot(1, VECTOR_WEIGHT), dense: VECTOR_WEIGHT / Math.hypot(1, VECTOR_WEIGHT) }
    : null;
}
