// Runs a capability's phases from one, each through the phase steps in order (prefilled, call,
// say, answer, generate, collect, end, next), until a step ends the turn. A new kind of phase is one more step here.
import { MAX_PHASES_PER_TURN, type CompiledPhase } from '../compile.js';
import { RenderBudgetExceeded } from '../templates.js';
import { CONTINUE, type Step, type StepOutcome, type TurnState } from '../turn.js';
import { runAction } from './action.js';
import { generate } from './generate.js';
import { answer } from './answer.js';

export type PhaseStep = Step<[CompiledPhase, number]>;

/** `call`: runs the phase's action; a failure goes to on_error. */
const call: PhaseStep = function* (t, p) {
  if (!p.call) return CONTINUE;
  const result = yield* runAction(t, t.agent.actions.get(p.call)!);
  if (result.ok) return CONTINUE;
  if (p.onError === 'escalate') return t.stop(t.escalate('action_failed'));
  return { kind: 'goto', idx: t.capability.phaseIndex.get(p.onError)! };
};

/** `say`: adds the phase's text to the reply. */
const say: PhaseStep = function* (t, p) {
  if (p.say) t.say(t.text(p.say));
  return CONTINUE;
};

/** `collect`: waits for the next user message. */
const collect: PhaseStep = function* (t, p) {
  if (!p.collect) return CONTINUE;
  t.flow.wait = 'collecting';
  t.flow.attempts = 0;
  t.options = t.renderOptions(p);
  return t.stop(t.result(true));
};

/** `end`: completes, escalates or pauses the conversation. */
const end: PhaseStep = function* (t, p) {
  if (!p.end) return CONTINUE;
  t.options = t.renderOptions(p);
  t.flow.wait = p.end === 'paused' ? 'open' : 'closed';
  if (p.end === 'completed') t.setStatus('completed', 'flow_end', p.outcome ?? t.finished ?? 'resolved');
  else if (p.end === 'escalated') t.setStatus('escalated', 'flow_end', 'escalated');
  else t.setStatus('paused', 'flow_end', null);
  return t.stop(t.result(p.end !== 'completed'));
};

/** `next`: the branch to follow, or, out of phases without an end, back to routing on the next message. */
const next: PhaseStep = function* (t, p, idx) {
  const n = t.nextOf(p, idx);
  if (n !== null) return { kind: 'goto', idx: n };
  t.flow.wait = 'open';
  t.options = t.renderOptions(p);
  return t.stop(t.result(true));
};

/**
 * A collect the message that chose the capability already answered (TurnState.prefill): the
 * phase is passed over once (its call, say, options and collect) and the flow goes on to its next.
 */
const prefilled: PhaseStep = function* (t, p, idx) {
  const slot = p.collect?.slot;
  const pending = t.flow.prefilled;
  if (slot === undefined || !pending?.includes(slot)) return CONTINUE;
  const rest = pending.filter((s) => s !== slot);
  if (rest.length) t.flow.prefilled = rest;
  else delete t.flow.prefilled;
  const n = t.nextOf(p, idx);
  if (n !== null) return { kind: 'goto', idx: n };
  t.flow.wait = 'open';
  return t.stop(t.result(true));
};

/**
 * The turn's render budget ran out in phase `p`: audited, then the phase's `on_error` (a phase
 * named there) runs on the budget's reserve, or the conversation goes to a person. Never an
 * empty text or a silently false condition.
 */
function budgetSpent(t: TurnState, p: CompiledPhase, e: RenderBudgetExceeded): StepOutcome {
  const reserve = t.budgetExceeded(e, p.id);
  const hasOnError = p.onError !== 'escalate';
  if (reserve && hasOnError) return { kind: 'goto', idx: t.capability.phaseIndex.get(p.onError)! };
  return t.stop(t.escalate('render_budget_exceeded'));
}

/** The steps of a phase, in order. */
const PHASE_STEPS: PhaseStep[] = [prefilled, call, say, answer, generate, collect, end, next];

/** Runs phases from `start` until a step ends the turn; more than MAX_PHASES_PER_TURN escalates. */
export const runPhases: Step<[number]> = function* (t, start) {
  let idx = start;
  for (let steps = 1; ; steps++) {
    const p = t.capability.phases[idx];
    if (steps > MAX_PHASES_PER_TURN) {
      t.note('error', { code: 'phase_limit', message: `more than ${MAX_PHASES_PER_TURN} phases in one turn`, capability: t.capability.name, phase: p.id });
      return t.stop(t.escalate('phase_limit'));
    }
    t.note('phase_transition', { capability: t.capability.name, from: t.phaseId, to: p.id });
    t.phaseId = p.id;
    let outcome: StepOutcome = CONTINUE;
    try {
      for (const step of PHASE_STEPS) {
        outcome = yield* step(t, p, idx);
        if (outcome.kind !== 'continue') break;
      }
    } catch (e) {
      if (!(e instanceof RenderBudgetExceeded)) throw e;
      outcome = budgetSpent(t, p, e);
    }
    if (outcome.kind === 'stop') return outcome;
    if (outcome.kind === 'goto') idx = outcome.idx;
  }
};
