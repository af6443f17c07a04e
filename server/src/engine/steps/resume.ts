// A user message to a conversation waiting on a collect: fill the slot and go on after the
// phase; or, when it plainly asks for something else, switch capability; or ask again (and
// escalate once max_attempts is spent). A turn not waiting on a collect continues to routing.
import { parseSlot } from '../slots.js';
import { route } from '../routing.js';
import { CONTINUE, type Step, type StepOutcome, type TurnState } from '../turn.js';

/** A privacy placeholder alone, as a masked message keeps a value (docs/privacy.md). */
const PLACEHOLDER = /^\[[A-Z][A-Z0-9_]{0,63}(?: …[A-Za-z0-9]{1,6}| #[0-9a-f]{10})?\]$/;

export const resumeCollect: Step = function* (t) {
  const { agent, input, flow, capability } = t;
  if (flow.wait !== 'collecting') return CONTINUE;
  const idx = t.phaseId === null ? undefined : capability.phaseIndex.get(t.phaseId);
  const phase = idx === undefined ? undefined : capability.phases[idx];
  if (!phase?.collect) return CONTINUE;
  const spec = phase.collect.spec;
  // Matching the slot's pattern is work the tenant's definition causes: it draws on the turn's budget.
  const placeholder = input.placeholders ? PLACEHOLDER.exec(input.message.trim()) : null;
  const parsed = placeholder
    ? { ok: true as const, value: placeholder[0] }
    : t.budget.timed(() => parseSlot(spec, input.message, new Date(input.now), t.dates));
  if (parsed.ok) {
    flow.slots[phase.collect.slot] = parsed.value;
    flow.attempts = 0;
    flow.wait = 'open';
    const next = t.nextOf(phase, idx!);
    // A collect with nowhere to go: the flow has run out of phases.
    return next === null ? t.stop(t.result(true)) : { kind: 'goto', idx: next };
  }
  const switched = switchAway(t);
  if (switched) return switched;
  flow.attempts += 1;
  if (flow.attempts >= phase.collect.maxAttempts) {
    t.note('error', { code: 'max_attempts', message: `slot "${phase.collect.slot}" not filled after ${flow.attempts} attempts` });
    return t.stop(t.escalate('max_attempts'));
  }
  t.say(t.text(phase.collect.retry ?? agent.messages.retry));
  if (phase.say) t.say(t.text(phase.say));
  t.options = t.renderOptions(phase);
  return t.stop(t.result(true));
};

/**
 * Mid-flow switching: a message to a waiting phase that plainly asks for another capability
 * (its score at or above the switch threshold) moves the conversation there; null when it does not.
 */
export function switchAway(t: TurnState): StepOutcome | null {
  const { agent, input, flow, capability } = t;
  if (agent.switchThreshold === null) return null;
  const scored = input.score(input.message);
  const decision = route(agent, scored, input.context);
  const target = decision.capability;
  if (decision.notEntitled || target === capability || target === agent.fallback || scored.scores[0].score < agent.switchThreshold) return null;
  t.note('routing_decision', {
    ...decision.audit,
    reason: 'switch',
    from: { capability: capability.name, phase: t.phaseId },
    switch_threshold: agent.switchThreshold,
  });
  t.capability = target;
  flow.wait = 'open';
  flow.attempts = 0;
  t.prefill();
  return { kind: 'goto', idx: 0 };
}
