// One model call of a generative phase (live turns and replays alike), through the model gate:
// allowed models, the input cap, the tenant's daily tokens reserved and settled, a fair share of
// the model server. Every call sees masked text only (docs/privacy.md); a tool that takes real
// values gets the values behind the placeholders of the turn's own model calls back.
import type { CompiledAgent } from '../../engine/compile.js';
import type { LlmCallReply, LlmCallRequest } from '../../engine/run.js';
import { ModelRefusal, type ModelGate } from '../model-gate.js';
import { maskerOf, realArguments, turnMaskBudget } from '../privacy/policy.js';
import type { PrivacyService } from '../privacy/privacy-service.js';
import type { ReplyStream } from './reply-stream.js';
import { msSince } from '../../lib/clock.js';

export class ModelCalls {
  constructor(private readonly opts: { gate?: ModelGate; privacy: PrivacyService; maxReplyBytes: number }) {}

  /**
   * A streamed turn first sends what it said before the call, then the model's words as they
   * come. `forModel`: the turn's numbered masker, shared by its calls; each call masks on its own
   * without one (a replay's).
   */
  async call(
    req: LlmCallRequest,
    tenantId: string,
    streamed?: ReplyStream,
    agent?: CompiledAgent,
    forModel?: ReturnType<typeof maskerOf>,
  ): Promise<LlmCallReply> {
    const started = performance.now();
    // A held answer (a grounded phase's) is checked before it is said: it reaches a stream with the turn's reply, not as written.
    const stream = req.hold ? undefined : streamed;
    const gate = this.opts.gate;
    const model = req.model ?? gate?.model ?? 'none';
    if (!gate) return { ok: false, code: 'llm_error', error: 'no language model is configured on this server (LLM_URL)', model, durationMs: 0 };
    stream?.sync(req.said);
    stream?.begin();
    try {
      // Every call of the phase, tool-loop steps and passages included.
      const masker = forModel ?? (agent ? maskerOf(await this.opts.privacy.masking(tenantId, agent), { budget: turnMaskBudget() }) : null);
      const c = await gate.complete(tenantId, {
        model: req.model ?? undefined,
        temperature: req.temperature,
        maxTokens: req.maxTokens,
        messages: masker ? masker.json(req.messages) : req.messages,
        tools: req.tools,
        onDelta: stream ? (text) => stream.delta(text) : undefined,
        maxTextBytes: this.opts.maxReplyBytes,
      });
      return {
        ok: true,
        ...c,
        toolCalls: agent ? realArguments(masker, agent, c.toolCalls) : c.toolCalls,
        model: c.model || model,
        durationMs: msSince(started),
        streamed: stream !== undefined,
      };
    } catch (e) {
      const code = e instanceof ModelRefusal ? e.code : 'llm_error';
      return { ok: false, code, error: (e as Error).message, model, durationMs: msSince(started) };
    }
  }
}
