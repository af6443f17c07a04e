// A privacy policy compiled for one agent (docs/privacy.md): the tenant's policy with the agent's
// own over it, type by type, its patterns compiled within their bounds, and the agent's sensitive
// slots. The PrivacyService builds one per compiled version and tenant policy revision.
import type { CompiledAgent } from '../../engine/compile.js';
import { compileBounded, PatternTooLargeError } from '../../engine/patterns.js';
import type { ContextEnvelope, PrivacyDef } from '@switchboard/contract';
import type { FlowState } from '../../domain.js';
import type { FieldProblem } from '../../errors.js';
import { isPhoneRegion, PII_TYPES } from './detectors.js';
import { Masker, regionsFor, type CustomDetector, type MaskBudget, type MaskPolicy } from './mask.js';

/** What the detectors may spend in one turn, its model calls and what it keeps together (docs/privacy.md). */
const MASK_TURN_MS = 50;

/** A fresh budget for one turn's maskers. */
export const turnMaskBudget = (): MaskBudget => ({ ms: MASK_TURN_MS, spentMs: 0, unread: 0, seen: new Map() });

/** What an agent masks: the policy, and the slots whose answers are kept masked (`sensitive: true`). */
export interface Masking {
  policy: MaskPolicy;
  sensitive: string[];
}

/** The compiled programs of one policy's patterns together, at most (each is bounded on its own too). */
const MAX_CUSTOM_PROGRAM = 4000;

const usesHash = (def: PrivacyDef) => Object.values(def.mask).includes('hash') || (def.custom ?? []).some((c) => c.mode === 'hash');

/** The agent's masking under the tenant's policy, or null when neither masks anything. */
export function compileMasking(agent: CompiledAgent, tenant: PrivacyDef | null, hashKey: Buffer | undefined): Masking | null {
  const def = agent.definition;
  const own = def.privacy;
  const sensitive = [...new Set(def.capabilities.flatMap((cap) => cap.phases.flatMap((p) => (p.collect?.sensitive ? [p.collect.slot] : []))))];
  if (!own && !tenant && !sensitive.length) return null;
  const modes = { ...tenant?.mask, ...own?.mask } as MaskPolicy['modes'];
  const byName = new Map<string, CustomDetector>();
  for (const c of [...(tenant?.custom ?? []), ...(own?.custom ?? [])]) {
    byName.set(c.name, { name: c.name, re: compileBounded(c.pattern), mode: c.mode ?? 'redact' });
  }
  const custom = [...byName.values()].filter((c) => c.mode !== 'keep');
  const regions = regionsFor(own?.phone_regions ?? tenant?.phone_regions, [def.default_language, ...(def.widget?.languages ?? [])]);
  return { policy: { modes, regions, custom, hashKey }, sensitive };
}

/** A fresh masker of the policy (it counts what it masks), or null when there is none; `numbered` for a turn's model calls. */
export const maskerOf = (m: Masking | null, opts: ConstructorParameters<typeof Masker>[1] = {}): Masker | null => (m ? new Masker(m.policy, opts) : null);

/**
 * A model's tool calls, each to an action that takes real values (`real_values: true`) with the
 * values behind its numbered placeholders put back; the others as the model wrote them.
 */
export function realArguments<T extends { name: string; arguments: string }>(masker: Masker | null, agent: CompiledAgent, calls: T[]): T[] {
  if (!masker) return calls;
  return calls.map((c) => {
    if (!agent.definition.actions?.[c.name]?.real_values) return c;
    try {
      return { ...c, arguments: JSON.stringify(masker.restore(JSON.parse(c.arguments))) };
    } catch {
      return c; // not JSON: the engine refuses the call as it would any
    }
  });
}

/**
 * The parts of a conversation's state that hold what people said and what actions answered:
 * slots and action results, masked; the rest (where the flow waits, its counters, the review
 * mark made from the masked message) is the engine's own and is kept as it is, so that masking
 * can never change what the next turn does.
 */
export function maskedFlow(masker: Masker, flow: FlowState): FlowState {
  return { ...flow, slots: masker.json(flow.slots), actions: masker.json(flow.actions) };
}

/**
 * The parts of a context envelope that hold personal data (who the user is, the caller's own
 * attributes), masked; its preferences and entitlements, which later turns route and speak by,
 * as they are.
 */
export function maskedContext(masker: Masker, envelope: ContextEnvelope): ContextEnvelope {
  const c = envelope.context;
  if (!c) return envelope;
  return {
    ...envelope,
    context: {
      ...c,
      ...(c.identity ? { identity: masker.json(c.identity) } : {}),
      ...(c.customAttributes ? { customAttributes: masker.json(c.customAttributes) } : {}),
    },
  };
}

/** The placeholder of a sensitive slot's answer: [DATE_OF_BIRTH]. */
export const slotPlaceholder = (slot: string) => `[${slot.toUpperCase()}]`;

/**
 * The agent's sensitive slots this turn filled (their value is new since the turn before, which
 * kept the others masked), with their values.
 */
export function sensitiveFilled(m: Masking | null, before: Record<string, unknown>, after: Record<string, unknown>): { slot: string; value: string }[] {
  if (!m?.sensitive.length) return [];
  return m.sensitive.flatMap((slot) => {
    const v = after[slot];
    if (v === undefined || v === null || JSON.stringify(v) === JSON.stringify(before[slot])) return [];
    return [{ slot, value: typeof v === 'string' ? v : JSON.stringify(v) }];
  });
}

/**
 * What is wrong with a policy that its schema cannot say: phone regions libphonenumber does not
 * know, patterns past their bounds or not RE2, a pattern named as a built-in type or twice, and
 * `hash` where the operator has set no SECRETS_KEY to key it.
 */
export function privacyProblems(def: PrivacyDef | undefined, path: string, hashKeyed: boolean): FieldProblem[] {
  if (!def) return [];
  const problems: FieldProblem[] = (def.phone_regions ?? []).flatMap((r, i) =>
    isPhoneRegion(r) ? [] : [{ path: `${path}.phone_regions[${i}]`, message: `"${r}" is not a region whose phone numbers are known` }],
  );
  const seen = new Set<string>();
  let program = 0;
  (def.custom ?? []).forEach((c, i) => {
    const at = `${path}.custom[${i}]`;
    if ((PII_TYPES as readonly string[]).includes(c.name) || c.name === 'sensitive')
      problems.push({ path: `${at}.name`, message: `"${c.name}" is a built-in type: name the pattern otherwise` });
    else if (seen.has(c.name)) problems.push({ path: `${at}.name`, message: `"${c.name}" names two patterns` });
    seen.add(c.name);
    try {
      program += compileBounded(c.pattern).programSize();
    } catch (err) {
      const why = err instanceof PatternTooLargeError ? err.message : `not an RE2 pattern: ${(err as Error).message}`;
      problems.push({ path: `${at}.pattern`, message: why });
    }
  });
  if (program > MAX_CUSTOM_PROGRAM) {
    problems.push({
      path: `${path}.custom`,
      message: `the patterns compile to ${program} instructions together, more than ${MAX_CUSTOM_PROGRAM}: use fewer or smaller ones`,
    });
  }
  if (!hashKeyed && usesHash(def)) {
    problems.push({ path: `${path}.mask`, message: '`hash` needs a key, and the operator has not set SECRETS_KEY: use redact or keep_last' });
  }
  return problems;
}
