// A generative phase (docs/generative.md): up to `max_steps` model calls per user message, each
// with the rendered instructions, the best knowledge passages, the recent turns and the message;
// the model's tool calls run actions (arguments checked against their JSON Schema first) or the
// built-ins `finish`, `escalate` and `fill`; its text is the agent's turn, and the phase then
// waits for the user. Failures take `on_error`, saying nothing of what the phase had written.
import { cutUtf8 } from '../../lib/utf8.js';
import { parseSlot } from '../slots.js';
import { RenderBudgetExceeded } from '../templates.js';
import { estimateInputTokens } from '../tokens.js';
import type { CompiledAction, CompiledGenerate, CompiledPhase } from '../compile.js';
import { CONTINUE, type EngineReply, type EngineRequest, type LlmMessage, type LlmTool, type StepOutcome, type TurnState } from '../turn.js';
import { runAction } from './action.js';
import { matchingSentences, type Found } from '../knowledge.js';
import { checkGrounding } from '../grounding.js';
import { switchAway } from './resume.js';

/** What a tool's result may give back to the model. */
const TOOL_RESULT_BYTES = 8 * 1024;
/** The most a tool call's arguments may hold. */
const TOOL_ARGUMENTS_BYTES = 16 * 1024;

const FINISH: LlmTool = {
  name: 'finish',
  description: 'Call when the customer has been helped and this part of the conversation is over.',
  parameters: {
    type: 'object',
    properties: { outcome: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', description: 'e.g. resolved' } },
    additionalProperties: false,
  },
};
const ESCALATE: LlmTool = {
  name: 'escalate',
  description: 'Hand the conversation to a person: when you cannot help, or the customer asks for a person.',
  parameters: { type: 'object', properties: { reason: { type: 'string' } }, required: ['reason'], additionalProperties: false },
};

function fillTool(g: CompiledGenerate): LlmTool {
  const slots = [...g.fills.entries()].map(([name, spec]) => `${name} (${spec.type})`).join(', ');
  return {
    name: 'fill',
    description: `Record a value the customer gave for one of these slots: ${slots}.`,
    parameters: {
      type: 'object',
      properties: { slot: { type: 'string', enum: [...g.fills.keys()] }, value: {} },
      required: ['slot', 'value'],
      additionalProperties: false,
    },
  };
}

function actionTool(a: CompiledAction): LlmTool {
  return { name: a.name, description: a.description ?? a.name, parameters: a.parameters ?? { type: 'object' } };
}

/** A JSON text of at most `max` bytes (cut at a character boundary, and said so). */
function capped(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  return `${cutUtf8(text, max)}…[cut at ${max} bytes]`;
}

function parseArguments(raw: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (Buffer.byteLength(raw) > TOOL_ARGUMENTS_BYTES) return { ok: false, error: `arguments larger than ${TOOL_ARGUMENTS_BYTES} bytes` };
  try {
    const v = JSON.parse(raw || '{}') as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, error: 'arguments must be a JSON object' };
    return { ok: true, value: v as Record<string, unknown> };
  } catch {
    return { ok: false, error: 'arguments are not valid JSON' };
  }
}

type ToolOutcome = { content: unknown; leave?: StepOutcome };

/** The system prompt: the instructions, then the passages with their ids. */
function systemPrompt(instructions: string, passages: { id: string; title: string | null; text: string }[]): string {
  const parts = [instructions.trim()];
  if (passages.length) {
    parts.push(
      [
        'Answer from these passages of the knowledge base where they apply, and say so when they do not cover the question.',
        ...passages.map((p) => `[${p.id}]${p.title ? ` ${p.title}` : ''}\n${p.text}`),
      ].join('\n\n'),
    );
  }
  return parts.join('\n\n');
}

/** Passages of the agent's knowledge sources a generative phase's prompt gets, beside the best of its own documents. */
const SOURCE_PASSAGES = 4;

/** The knowledge sources' passages the model's text names by id (`[help-centre#3]`), as the turn's citations, once each. */
function cite(t: TurnState, text: string, found: Found[], message: string): void {
  for (const f of found) {
    const src = f.passage.source;
    if (!src || !text.includes(`[${f.passage.id}]`) || t.citations.some((c) => c.passage_id === f.passage.id)) continue;
    t.citations.push({
      source: src.name,
      title: src.title,
      url: src.url,
      page: src.page,
      heading: f.passage.title,
      passage_id: f.passage.id,
      snippet: matchingSentences(f.passage.text, message),
    });
  }
}

/** Where the phase goes when the model calls `finish`: `next`, or without it the flow runs out. */
function leavePhase(t: TurnState, p: CompiledPhase, idx: number): StepOutcome {
  if (p.next !== null) {
    const n = t.nextOf(p, idx);
    if (n !== null) return { kind: 'goto', idx: n };
  }
  t.flow.wait = 'open';
  if (t.finished) t.outcome = t.finished;
  return t.stop(t.result(true));
}

function* runTool(t: TurnState, p: CompiledPhase, idx: number, name: string, raw: string): Generator<EngineRequest, ToolOutcome, EngineReply> {
  const g = p.generate!;
  const args = parseArguments(raw);
  const invalid = (error: string): ToolOutcome => {
    t.note('error', { code: 'tool_arguments_invalid', message: error, tool: name, capability: t.capability.name, phase: p.id });
    return { content: { ok: false, error } };
  };
  if (name === 'finish') {
    const outcome = args.ok ? args.value.outcome : undefined;
    t.finished = typeof outcome === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(outcome) ? outcome : 'resolved';
    return { content: { ok: true }, leave: leavePhase(t, p, idx) };
  }
  if (name === 'escalate') return { content: { ok: true }, leave: t.stop(t.escalate('model_escalated')) };
  if (!args.ok) return invalid(args.error);
  if (name === 'fill' && g.fills.size) {
    const { slot, value } = args.value;
    const spec = typeof slot === 'string' ? g.fills.get(slot) : undefined;
    if (!spec) return invalid(`unknown slot ${JSON.stringify(slot)}: one of ${[...g.fills.keys()].join(', ')}`);
    const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : null;
    const parsed = text === null ? { ok: false as const } : t.budget.timed(() => parseSlot(spec, text, new Date(t.input.now), t.dates));
    if (!parsed.ok) return invalid(`${JSON.stringify(value)} is not a valid ${spec.type} for slot ${slot as string}`);
    t.flow.slots[slot as string] = parsed.value;
    return { content: { ok: true, slot, value: parsed.value } };
  }
  const action = g.tools.includes(name) ? t.agent.actions.get(name) : undefined;
  if (!action?.validate) return invalid(`unknown tool "${name.slice(0, 64)}"`);
  // Checking the arguments is work the tenant's schema causes: it draws on the turn's render time.
  const validate = action.validate;
  if (!t.budget.timed(() => validate(args.value))) {
    const e = validate.errors?.[0];
    return invalid(e ? `${e.instancePath || 'arguments'} ${e.message ?? 'is invalid'}` : 'arguments do not match the parameters');
  }
  const result = yield* runAction(t, action, args.value);
  return { content: { ok: result.ok, status: result.status, body: result.body } };
}

/** The model's turn in a generative phase, for the message that entered it or one sent while in it. */
export function* generate(t: TurnState, p: CompiledPhase, idx: number): Generator<EngineRequest, StepOutcome, EngineReply> {
  if (!p.generate) return CONTINUE;
  const mark = t.sayMark();
  const cited = t.citations.length;
  const slots = { ...t.flow.slots };
  const takeBack = () => {
    t.unsay(mark);
    t.citations.length = cited;
    for (const k of Object.keys(t.flow.slots)) Reflect.deleteProperty(t.flow.slots, k);
    Object.assign(t.flow.slots, slots);
  };
  const fail = (code: string, message: string): StepOutcome => {
    t.note('error', { code, message, capability: t.capability.name, phase: p.id });
    takeBack();
    if (p.onError === 'escalate') return t.stop(t.escalate(code));
    return { kind: 'goto', idx: t.capability.phaseIndex.get(p.onError)! };
  };
  try {
    return yield* converse(t, p, idx, fail);
  } catch (e) {
    // A spent render budget (the instructions, a tool's request) fails the phase as a whole too.
    if (e instanceof RenderBudgetExceeded) takeBack();
    throw e;
  }
}

function* converse(
  t: TurnState,
  p: CompiledPhase,
  idx: number,
  fail: (code: string, message: string) => StepOutcome,
): Generator<EngineRequest, StepOutcome, EngineReply> {
  const g = p.generate!;
  const { agent, input } = t;

  const history = (input.history ?? []).slice(-g.history);
  const lastUser = history.findLast((h) => h.role === 'user')?.message ?? '';
  const knowledge = g.knowledge ? agent.knowledge : null;
  // Searching is work the tenant's knowledge causes: it draws on the turn's budget.
  const found = knowledge ? t.budget.timed(() => knowledge.search(`${input.message} ${lastUser}`)) : [];
  // The tenant's knowledge sources the agent names are searched by the caller, beside them.
  if (g.knowledge && agent.knowledgeSources) {
    const reply = yield { kind: 'retrieve', query: `${input.message} ${lastUser}`, k: SOURCE_PASSAGES };
    if (!('retrieved' in reply)) throw new Error('a retrieve was answered with something else');
    t.note(
      'knowledge_search',
      {
        capability: t.capability.name,
        phase: p.id,
        mode: 'generate',
        sources: reply.sources,
        // The knowledge snapshot the version pins (none: the sources as they are now).
        ...(t.agent.knowledgeSnapshot !== null ? { snapshot: t.agent.knowledgeSnapshot } : {}),
        passages: reply.retrieved.map((f) => ({ id: f.passage.id, score: f.score, confidence: f.confidence })),
        ...(reply.error !== undefined ? { error: reply.error } : {}),
      },
      reply.durationMs,
    );
    found.push(...reply.retrieved);
  }
  const messages: LlmMessage[] = [
    {
      role: 'system',
      content: systemPrompt(
        t.text(g.instructions),
        found.map((f) => f.passage),
      ),
    },
    ...history.map((h): LlmMessage => (h.role === 'user' ? { role: 'user', content: h.message } : { role: 'assistant', content: h.message })),
    { role: 'user', content: input.message },
  ];
  const tools = [...g.tools.map((n) => actionTool(agent.actions.get(n)!)), FINISH, ESCALATE, ...(g.fills.size ? [fillTool(g)] : [])];
  const passages = found.map((f) => ({ id: f.passage.id, score: f.score }));
  // A grounded phase says the model's text only when the passages it cites hold what it claims.
  const grounded = g.grounded ?? (g.knowledge && agent.knowledgeSources !== null);

  for (let step = 1; step <= g.maxSteps; step++) {
    const spent = t.flow.tokens ?? 0;
    // Reserved before the call: what it sends and the most it may write must fit what is left.
    const reserve = estimateInputTokens(messages, tools) + agent.llm.maxOutputTokens;
    if (input.llmTokenBudget && spent + reserve > input.llmTokenBudget) {
      return fail(
        'llm_budget_exceeded',
        `the conversation has ${Math.max(0, input.llmTokenBudget - spent)} of its ${input.llmTokenBudget} model tokens left; this call could spend up to ${reserve}`,
      );
    }
    const reply = yield {
      kind: 'llm_call',
      model: agent.llm.model,
      temperature: agent.llm.temperature,
      maxTokens: agent.llm.maxOutputTokens,
      messages: [...messages],
      tools,
      said: t.saidSoFar(),
      ...(grounded ? { hold: true } : {}),
    };
    if (!('ok' in reply)) throw new Error('an llm_call was answered with something else');
    if (!reply.ok) return fail(reply.code, reply.error);
    const grounding =
      grounded && reply.text
        ? t.budget.timed(() =>
            checkGrounding(
              reply.text,
              found.map((f) => f.passage),
              g.minSupport,
            ),
          )
        : undefined;
    t.note(
      'llm_call',
      {
        model: reply.model,
        capability: t.capability.name,
        phase: p.id,
        step,
        duration_ms: reply.durationMs,
        input_tokens: reply.inputTokens,
        output_tokens: reply.outputTokens,
        finish_reason: reply.finishReason,
        text: reply.text,
        tool_calls: reply.toolCalls.map((c) => {
          const a = parseArguments(c.arguments);
          return { name: c.name, arguments: a.ok ? a.value : c.arguments.slice(0, 1024) };
        }),
        passages,
        ...(reply.streamed ? { streamed: true } : {}),
        ...(grounding ? { grounding } : {}),
      },
      reply.durationMs,
    );
    t.flow.tokens = spent + reply.inputTokens + reply.outputTokens;
    if (grounding && !grounding.supported) {
      const weak = grounding.claims.find((c) => c.passage === null || c.support < g.minSupport);
      return fail(
        'answer_unsupported',
        weak
          ? `the model's answer says "${weak.sentence.slice(0, 200)}", which ${weak.passage === null ? 'cites no passage' : `${weak.passage} does not hold (${weak.missing_numbers ? `not the figure ${weak.missing_numbers.join(', ')}` : `${Math.round(weak.support * 100)}% of its words`})`}: not said`
          : "the model's answer makes more claims than are checked: not said",
      );
    }
    if (reply.text) {
      t.say(reply.text);
      cite(t, reply.text, found, input.message);
    }
    if (reply.toolCalls.length === 0) {
      if (!reply.text) return fail('llm_error', 'the model answered with neither text nor a tool call');
      t.flow.wait = 'generating';
      return t.stop(t.result(true));
    }
    messages.push({
      role: 'assistant',
      content: reply.text || null,
      tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    for (const c of reply.toolCalls) {
      const out = yield* runTool(t, p, idx, c.name, c.arguments);
      if (out.leave) return out.leave;
      messages.push({ role: 'tool', tool_call_id: c.id, content: capped(JSON.stringify(out.content), TOOL_RESULT_BYTES) });
    }
  }
  return fail('llm_step_limit', `no answer after ${g.maxSteps} model calls`);
}

/**
 * A message to a conversation standing in a generative phase: the model answers it there,
 * unless it plainly asks for another capability (mid-flow switching, as for a waiting collect).
 */
export function* resumeGenerate(t: TurnState): Generator<EngineRequest, StepOutcome, EngineReply> {
  const { flow, capability } = t;
  if (flow.wait !== 'generating') return CONTINUE;
  const idx = t.phaseId === null ? undefined : capability.phaseIndex.get(t.phaseId);
  const phase = idx === undefined ? undefined : capability.phases[idx];
  if (!phase?.generate) return CONTINUE;
  const switched = switchAway(t);
  if (switched) return switched;
  return yield* generate(t, phase, idx!);
}
