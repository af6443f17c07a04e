// An agent's masking policy (its definition's `privacy`, and its sensitive slots), compiled once
// per compiled version.
import type { CompiledAgent } from '../../engine/compile.js';
import type { AgentDefinition } from '@switchboard/contract';
import type { FieldProblem } from '../../errors.js';
import { isPhoneRegion } from './detectors.js';
import { Masker, regionsFor, type MaskPolicy } from './mask.js';

interface Compiled {
  policy: MaskPolicy;
  /** The slots whose answers are kept masked (`sensitive: true`). */
  sensitive: string[];
}

const compiled = new WeakMap<CompiledAgent, Compiled | null>();

function compiledOf(agent: CompiledAgent): Compiled | null {
  let c = compiled.get(agent);
  if (c === undefined) {
    const def = agent.definition;
    const sensitive = [...new Set(def.capabilities.flatMap((cap) => cap.phases.flatMap((p) => (p.collect?.sensitive ? [p.collect.slot] : []))))];
    c =
      def.privacy || sensitive.length
        ? {
            policy: {
              modes: def.privacy?.mask ?? {},
              regions: regionsFor(def.privacy?.phone_regions, [def.default_language, ...(def.widget?.languages ?? [])]),
            },
            sensitive,
          }
        : null;
    compiled.set(agent, c);
  }
  return c;
}

/** A fresh masker of the agent's policy (it counts what it masks), or null when the agent masks nothing. */
export function maskerFor(agent: CompiledAgent): Masker | null {
  const c = compiledOf(agent);
  return c ? new Masker(c.policy) : null;
}

/** The placeholder of a sensitive slot's answer: [DATE_OF_BIRTH]. */
export const slotPlaceholder = (slot: string) => `[${slot.toUpperCase()}]`;

/**
 * The agent's sensitive slots this turn filled (their value is new since the turn before, which
 * kept the others masked), with their values.
 */
export function sensitiveFilled(agent: CompiledAgent, before: Record<string, unknown>, after: Record<string, unknown>): { slot: string; value: string }[] {
  const c = compiledOf(agent);
  if (!c?.sensitive.length) return [];
  return c.sensitive.flatMap((slot) => {
    const v = after[slot];
    if (v === undefined || v === null || JSON.stringify(v) === JSON.stringify(before[slot])) return [];
    return [{ slot, value: typeof v === 'string' ? v : JSON.stringify(v) }];
  });
}

/** Phone regions libphonenumber does not know (checked by the service, where the detectors' libraries load, not in the engine). */
export function privacyProblems(definition: AgentDefinition): FieldProblem[] {
  return (definition.privacy?.phone_regions ?? []).flatMap((r, i) =>
    isPhoneRegion(r) ? [] : [{ path: `privacy.phone_regions[${i}]`, message: `"${r}" is not a region whose phone numbers are known` }],
  );
}
