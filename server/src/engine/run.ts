// Runs one user turn of a conversation as a row of named steps over one TurnState: an escalated
// conversation is only answered; a waiting collect or generative phase is resumed; otherwise the message is routed;
// then the capability's phases run until one stops the turn. Each step is a generator that
// yields the calls it needs made (actions, the model) and is composed here with yield*.
import { routeMessage } from './routing.js';
import { resumeGenerate } from './steps/generate.js';
import { runPhases } from './steps/phases.js';
import { resumeCollect } from './steps/resume.js';
import { RenderBudgetExceeded } from './templates.js';
import { TurnState, type EngineReply, type EngineRequest, type TurnInput, type TurnResult } from './turn.js';

export { route, scoreWith } from './routing.js';
export type {
  ActionRequest,
  EmbedReply,
  EmbedRequest,
  EngineReply,
  EngineRequest,
  LlmCallReply,
  LlmCallRequest,
  LlmRouteReply,
  LlmRouteRequest,
  RetrieveReply,
  RetrieveRequest,
  TurnInput,
  TurnResult,
} from './turn.js';

export function* runTurn(input: TurnInput): Generator<EngineRequest, TurnResult, EngineReply> {
  const t = new TurnState(input);
  try {
    return yield* turn(t, input);
  } catch (e) {
    // The render budget ran out outside a phase (routing, a resumed collect): a person takes over.
    if (!(e instanceof RenderBudgetExceeded)) throw e;
    t.budgetExceeded(e, t.phaseId);
    return t.escalate('render_budget_exceeded');
  }
}

function* turn(t: TurnState, input: TurnInput): Generator<EngineRequest, TurnResult, EngineReply> {
  if (!input.prior) t.note('status_change', { from: null, to: 'active', reason: 'created', outcome: null });
  // An escalated conversation belongs to a human: the turn is recorded and answered, nothing moves.
  // Once a person has answered in it, the agent says nothing more of its own (an empty reply).
  if (t.status === 'escalated') {
    if (!t.flow.answered) t.say(t.text(t.agent.messages.escalated));
    return t.result(true);
  }
  if (t.status === 'paused') t.setStatus('active', 'user_message', null);

  let outcome = yield* resumeCollect(t);
  if (outcome.kind === 'continue') outcome = yield* resumeGenerate(t);
  if (outcome.kind === 'continue') outcome = yield* routeMessage(t);
  if (outcome.kind === 'stop') return outcome.result;
  if (outcome.kind !== 'goto') return t.result(true);
  const done = yield* runPhases(t, outcome.idx);
  return done.kind === 'stop' ? done.result : t.result(true);
}
