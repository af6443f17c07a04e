// A conversation kept in memory and driven turn by turn through the engine, with every call the
// engine asks for (actions, the model) answered by the caller: what test conversations and
// replays run. Nothing is stored; no action's secret is needed, since none goes out. Each turn
// renders within the same budgets as a live one (the tenant's share when a server runs it), and
// the event loop turns between turns, so a long test or replay never holds the server.
import type { ContextEnvelope } from '@switchboard/contract';
import { SECRET_MASK, type CompiledAgent } from '../../engine/compile.js';
import { setImmediate as turnOfTheLoop } from 'node:timers/promises';
import { runTurn, scoreWith, type EngineReply, type EngineRequest, type TurnInput, type TurnResult } from '../../engine/run.js';
import type { RenderBudget } from '../../engine/templates.js';
import { compileMasking, maskedFlow, maskerOf, sensitiveFilled, slotPlaceholder, turnMaskBudget, type Masking } from '../privacy/policy.js';

export type Answer = (request: EngineRequest) => EngineReply | Promise<EngineReply>;

/** Where a turn's render budget comes from and what it spent goes: the tenant's share (RenderBudgets). */
export interface TurnBudgets {
  forTurn(): RenderBudget;
  charge(budget: RenderBudget): void;
}

export class OfflineConversation {
  private prior: TurnInput['prior'] = null;
  private readonly history: NonNullable<TurnInput['history']> = [];
  private readonly secrets: Record<string, string>;
  private readonly masking: Masking | null;
  /** The last turn's user message as kept, and what was masked in its two messages; null without a policy. */
  kept: { message: string; masked: Record<string, number> } | null = null;

  constructor(
    private readonly agent: CompiledAgent,
    private readonly base: {
      conversationId: string;
      userId: string | null;
      llm?: boolean;
      /** Route with server embeddings (replays, as the live conversation did); test conversations route with the agent's own router. */
      embeddings?: TurnInput['embeddings'];
      budgets?: TurnBudgets;
      /** What is masked (a replay's: the tenant's policy under the agent's); the agent's own policy when absent. */
      masking?: Masking | null;
      /** The messages are kept ones (a replay's): a placeholder alone fills the slot waiting for it (TurnInput.placeholders). */
      placeholders?: boolean;
    },
  ) {
    this.secrets = Object.fromEntries(agent.secretNames.map((n) => [n, SECRET_MASK]));
    this.masking = base.masking !== undefined ? base.masking : compileMasking(agent, null, undefined);
  }

  /** Index of the next user turn when turns are only this conversation's own. */
  get nextTurnIndex(): number {
    return this.history.length;
  }

  /** One user message: `turnIndex` is its index among the conversation's turns (default: the next). */
  async turn(message: string, o: { now: string; context: ContextEnvelope | null; turnIndex?: number }, answer: Answer): Promise<TurnResult> {
    const { agent } = this;
    const turnIndex = o.turnIndex ?? this.nextTurnIndex;
    await turnOfTheLoop();
    const budget = this.base.budgets?.forTurn();
    const gen = runTurn({
      agent,
      prior: this.prior,
      conversationId: this.base.conversationId,
      message,
      context: o.context,
      userId: this.base.userId,
      turnIndex,
      now: o.now,
      secrets: this.secrets,
      score: (m, embedding) => scoreWith(agent, m, embedding),
      embeddings: this.base.embeddings,
      llm: this.base.llm ?? false,
      history: this.history.slice(-agent.historyTurns),
      llmConfigured: true,
      placeholders: this.base.placeholders,
      budget,
    });
    let step;
    try {
      step = gen.next();
      while (!step.done) step = gen.next(await answer(step.value));
    } finally {
      if (budget) this.base.budgets!.charge(budget);
    }
    const r = step.value;
    // What the next turn reads is what a live conversation keeps: masked under a privacy policy (docs/privacy.md).
    // The two messages as buildTurnWrite keeps them, counted apart from the state's.
    const reading = turnMaskBudget();
    const said = maskerOf(this.masking, { budget: reading });
    const kept = maskerOf(this.masking, { budget: reading });
    const filled = sensitiveFilled(this.masking, this.prior?.flow.slots ?? {}, r.flow.slots);
    for (const f of filled) for (const m of [said, kept]) m?.literal(f.value, slotPlaceholder(f.slot));
    if (said && filled.length) said.counts.sensitive = filled.length;
    const user = filled.length ? filled.map((f) => slotPlaceholder(f.slot)).join(' ') : said ? said.text(message) : message;
    this.history.push({ role: 'user', message: user }, { role: 'agent', message: said ? said.text(r.reply) : r.reply });
    this.kept = said ? { message: user, masked: { ...said.counts } as Record<string, number> } : null;
    const flow = kept ? maskedFlow(kept, r.flow) : r.flow;
    this.prior = { status: r.status, outcome: r.outcome, capability: r.capability.name, phase: r.phase, flow, turnCount: turnIndex + 2 };
    return r;
  }
}
