// Runs a capability's phases from one, each through the phase steps in order (prefilled, call,
// say, collect, end, next), until a step ends the turn. A new kind of phase is one more step here.
import { MAX_PHASES_PER_TURN, SECRET_MASK, type CompiledPhase } from '../compile.js';
import { renderJson, type Scope } from '../templates.js';
import { CONTINUE, type ActionReply, type ActionRequest, type Step, type StepOutcome } from '../turn.js';

type PhaseStep = Step<[CompiledPhase, number]>;

function getPath(root: unknown, path: string[]): unknown {
  let cur = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** `call`: renders the action's request (secrets for the wire, masks for the record) and yields it. */
const call: PhaseStep = function* (t, p) {
  if (!p.call) return CONTINUE;
  const { agent, input } = t;
  const action = agent.actions.get(p.call)!;
  let request: ActionRequest | null = null;
  // A secret the tenant has not been granted reads exactly as one that does not exist.
  const missing = action.secrets.find((n) => !Object.prototype.hasOwnProperty.call(input.secrets, n));
  if (missing !== undefined) {
    t.note('error', { code: 'secret_unavailable', message: `secret "${missing}" is not available to this tenant`, action: action.name });
  } else {
    try {
      const real = Object.fromEntries(action.secrets.map((n) => [n, input.secrets[n]]));
      const masks = Object.fromEntries(action.secrets.map((n) => [n, SECRET_MASK]));
      const render = (sc: Scope) => ({
        url: action.url.render(sc, t.budget),
        headers: Object.fromEntries(action.headers.map(([h, tpl]) => [h, tpl.render(sc, t.budget)])),
        body: action.body ? renderJson(action.body, sc, t.budget) : undefined,
      });
      // Rendered twice: with the secrets for the wire, and with masks in their place for the
      // record, so no filter or echo can carry a secret into an audit entry.
      const wire = render(t.scope(real));
      request = { kind: 'action', action, method: action.method, ...wire, masked: render(t.scope(masks)), secretValues: Object.values(real) };
    } catch (e) {
      t.note('error', { code: 'template_error', message: (e as Error).message.split('\n')[0], action: action.name });
    }
  }
  const reply: ActionReply = request
    ? ((yield request) as ActionReply)
    : {
        result: { ok: false, status: 0, body: null },
        audit: {
          type: 'error',
          turnIndex: input.turnIndex,
          timestamp: input.now,
          durationMs: null,
          data: { code: 'action_not_sent', message: `action "${action.name}" could not be rendered`, action: action.name },
        },
      };
  t.audit.push(reply.audit);
  t.flow.actions[action.name] = reply.result;
  if (reply.result.ok) {
    for (const [slot, path] of action.save) {
      const v = getPath(reply.result, path);
      if (v !== undefined) t.flow.slots[slot] = v;
    }
    return CONTINUE;
  }
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
  if (p.end === 'completed') t.setStatus('completed', 'flow_end', p.outcome);
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

/** The steps of a phase, in order. */
const PHASE_STEPS: PhaseStep[] = [prefilled, call, say, collect, end, next];

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
    for (const step of PHASE_STEPS) {
      outcome = yield* step(t, p, idx);
      if (outcome.kind !== 'continue') break;
    }
    if (outcome.kind === 'stop') return outcome;
    if (outcome.kind === 'goto') idx = outcome.idx;
  }
};
