// What is done with a stored router: the one decision on bytes read from the database (used,
// converted, trained again in the background, or trained now), for the service that carries it
// out (service/routers.ts).
import { ROUTER_STATE_FORMAT, storedFormat } from './codec.js';
import type { Embedder } from './embedder.js';
import type { RoutableCapability } from './model.js';
import { loadRouter, type Router } from './router.js';

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
