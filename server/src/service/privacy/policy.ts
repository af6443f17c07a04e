// An agent's masking policy (its definition's `privacy`), compiled once per compiled version.
import type { CompiledAgent } from '../../engine/compile.js';
import { Masker, regionsFor, type MaskPolicy } from './mask.js';

const policies = new WeakMap<CompiledAgent, MaskPolicy | null>();

function policyOf(agent: CompiledAgent): MaskPolicy | null {
  let p = policies.get(agent);
  if (p === undefined) {
    const def = agent.definition.privacy;
    p = def
      ? {
          modes: def.mask,
          regions: regionsFor(def.phone_regions, [agent.definition.default_language, ...(agent.definition.widget?.languages ?? [])]),
        }
      : null;
    policies.set(agent, p);
  }
  return p;
}

/** A fresh masker of the agent's policy (it counts what it masks), or null when the agent masks nothing. */
export function maskerFor(agent: CompiledAgent): Masker | null {
  const p = policyOf(agent);
  return p ? new Masker(p) : null;
}
