// Drives the engine's turn generator in tests: answers every action call it yields (with `answer`)
// and returns the result and the requests made. No LLM calls are expected.
import type { ActionResult } from '../../server/src/domain.js';
import type { CompiledAgent } from '../../server/src/engine/compile.js';
import { runTurn, type ActionRequest, type TurnInput, type TurnResult } from '../../server/src/engine/run.js';

/** The conversation a turn leaves, as the next turn's `prior`. */
export const priorOf = (r: TurnResult): TurnInput['prior'] => ({
  status: r.status,
  outcome: r.outcome,
  capability: r.capability.name,
  phase: r.phase,
  flow: r.flow,
  turnCount: 2,
});

export const NOW = '2026-11-22T10:00:00.000Z';

export function driveTurn(
  agent: CompiledAgent,
  message: string,
  over: Partial<TurnInput> & { answer?: (req: ActionRequest) => ActionResult } = {},
): { result: TurnResult; calls: ActionRequest[] } {
  const { answer = () => ({ ok: true, status: 200, body: {} }), ...input } = over;
  const calls: ActionRequest[] = [];
  const gen = runTurn({
    agent,
    prior: null,
    conversationId: 'c1',
    message,
    context: null,
    userId: 'u1',
    turnIndex: 0,
    now: NOW,
    secrets: {},
    score: (m) => agent.router.score(m),
    ...input,
  });
  let step = gen.next();
  while (!step.done) {
    if (step.value.kind !== 'action') throw new Error('no LLM in these tests');
    calls.push(step.value);
    step = gen.next({ result: answer(step.value), audit: { type: 'action_call', turnIndex: 0, timestamp: NOW, durationMs: 1, data: {} } });
  }
  return { result: step.value, calls };
}
