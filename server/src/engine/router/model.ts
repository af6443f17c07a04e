// What a router is trained on, what it answers, and the names of its training methods.
import { BACKGROUND } from '../background.js';
import type { Embedder } from './embedder.js';

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

export interface Score {
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

/** Thrown when training would need more memory than its budget allows. */
export class TrainingTooLargeError extends Error {}

/** Rounded to four decimals, as scores and thresholds are shown. */
export const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
