// Calibration: the thresholds below which a message is out of scope (its best probability, and
// its similarity to the best capability's closest example), set on held-out examples of the
// agent's own.
import { dot, type SparseVector } from '../text-features.js';
import type { Calibration } from './model.js';
import { round4 } from './model.js';
import { epochsFor, Softmax, type Yield } from './numerics.js';
import { MAX_SIMILARITY_EXAMPLES, spread } from './similarity.js';

/** Share of correctly routed held-out examples the calibrated thresholds may turn away. */
const CALIBRATION_QUANTILE = 0.01;
const MAX_CALIBRATION_POINTS = 2000;
export const DEFAULT_MIN_SIMILARITY = 0.2;
/** The floor with a background class, which turns away most unrelated messages itself (docs/routing.md). */
export const BACKGROUND_MIN_SIMILARITY = 0.15;
/** Epochs of the calibration model: one with the full softmax, one over candidates. */
const CALIBRATION_EPOCHS = 2;

function quantile(values: number[], q: number): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/**
 * Thresholds from a stratified hold-out: a third of each class's examples (one of two, none of
 * one) is scored by a model trained on the rest, and the thresholds are set so that only
 * CALIBRATION_QUANTILE of those in-scope examples would have been turned away. Out-of-scope
 * examples (class `oos`, -1 for none) are left out: they are what the thresholds are for.
 */
export async function calibrate(
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
