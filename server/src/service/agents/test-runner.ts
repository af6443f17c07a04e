// Runs test conversations (contract/src/tests.ts) against a compiled agent, in memory: the engine
// is driven as the conversation service drives it, but actions are answered from the test,
// model calls from its scripted replies, and nothing is stored or sent anywhere. Used by
// `npm run agents -- test` (no server, no database) and by POST /agents/:slug/tests.
import { RE2JS } from 're2js';
import { compileBounded } from '../../engine/patterns.js';
import type { RoutingDecisionData, TestCase, TestResults } from '@switchboard/contract';
import type { AuditDraft } from '../../domain.js';
import type { CompiledAgent } from '../../engine/compile.js';
import type { EngineReply, EngineRequest } from '../../engine/run.js';
import { OfflineConversation, type TurnBudgets } from '../evaluations/offline-conversation.js';

type StepResult = TestResults['results'][number]['steps'][number];

const CONVERSATION_ID = '00000000-0000-4000-8000-000000000000';

/** `/regex/flags` (RE2 syntax, so a test's pattern cannot backtrack; held to the bounds of every tenant pattern) or a substring. */
function replyMatches(expected: string, reply: string): boolean {
  const m = /^\/(.*)\/([a-z]*)$/s.exec(expected);
  if (!m) return reply.includes(expected);
  const re = compileBounded(m[1], m[2].includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
  return re.matcher(reply).find();
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function compare(expect: NonNullable<TestCase['steps'][number]['expect']>, actual: StepResult['actual']): string[] {
  const out: string[] = [];
  for (const key of ['capability', 'phase', 'awaiting_input', 'status', 'outcome'] as const) {
    if (expect[key] !== undefined && !same(expect[key], actual[key]))
      out.push(`${key}: expected ${JSON.stringify(expect[key])}, got ${JSON.stringify(actual[key])}`);
  }
  if (expect.reply !== undefined) {
    try {
      if (!replyMatches(expect.reply, actual.reply)) out.push(`reply: expected ${expect.reply}, got ${JSON.stringify(actual.reply)}`);
    } catch (e) {
      out.push(`reply: ${expect.reply} is not a valid pattern (${(e as Error).message})`);
    }
  }
  if (expect.kept !== undefined) {
    if (actual.kept === undefined) out.push('kept: the agent has no privacy policy, so the message is kept as typed');
    else {
      try {
        if (!replyMatches(expect.kept, actual.kept)) out.push(`kept: expected ${expect.kept}, got ${JSON.stringify(actual.kept)}`);
      } catch (e) {
        out.push(`kept: ${expect.kept} is not a valid pattern (${(e as Error).message})`);
      }
    }
  }
  for (const [type, n] of Object.entries(expect.masked ?? {})) {
    const got = actual.masked?.[type] ?? 0;
    if (got !== n) out.push(`masked.${type}: expected ${n}, got ${got}`);
  }
  for (const [slot, value] of Object.entries(expect.slots ?? {})) {
    if (!same(actual.slots[slot], value)) out.push(`slots.${slot}: expected ${JSON.stringify(value)}, got ${JSON.stringify(actual.slots[slot] ?? null)}`);
  }
  return out;
}

/** The engine's requests answered from the test: recorded action answers and scripted model replies. */
export function answer(test: TestCase, request: EngineRequest, turnIndex: number, now: string, llmQueue: NonNullable<TestCase['llm']>): EngineReply {
  if (request.kind === 'action') {
    const given = test.actions?.[request.action.name];
    const result = given
      ? { ok: given.status >= 200 && given.status < 300, status: given.status, body: given.body ?? null }
      : { ok: false, status: 0, body: null };
    const audit: AuditDraft = {
      type: 'action_call',
      turnIndex,
      timestamp: now,
      durationMs: 0,
      data: {
        action: request.action.name,
        request: { method: request.method, url: request.masked.url, headers: request.masked.headers },
        response: given ? { status: result.status, body: result.body } : null,
        outcome: given ? (result.ok ? 'ok' : 'http_error') : 'network_error',
        attempts: 1,
        ...(given ? {} : { error: 'the test gives no answer for this action' }),
        ...(request.via ? { via: request.via } : {}),
      },
    };
    return { result, audit };
  }
  if (request.kind === 'llm_call') {
    const next = llmQueue.shift();
    if (!next) return { ok: false, code: 'llm_error', error: 'the test has no more scripted model replies', model: 'test', durationMs: 0 };
    return {
      ok: true,
      model: 'test',
      text: next.text ?? '',
      toolCalls: (next.tool_calls ?? []).map((c, i) => ({ id: `call_${i}`, name: c.name, arguments: JSON.stringify(c.arguments) })),
      finishReason: next.tool_calls?.length ? 'tool_calls' : 'stop',
      inputTokens: 0,
      outputTokens: 0,
      durationMs: 0,
      streamed: false,
    };
  }
  if (request.kind === 'retrieve') {
    // Tests run on the definition alone: the tenant's knowledge sources are not theirs to read.
    return { retrieved: [], sources: [], durationMs: 0, error: 'definition tests do not search knowledge sources' };
  }
  return { capability: null, model: 'test', durationMs: 0, error: 'no model in tests' };
}

/** The turn's routing decision, as a test step reports it: the strategy, the reason and the top candidates. */
function routingOf(audit: AuditDraft[]): StepResult['routing'] {
  const d = audit.find((a) => a.type === 'routing_decision')?.data as RoutingDecisionData | undefined;
  if (!d) return undefined;
  return {
    strategy: d.strategy,
    ...(d.reason ? { reason: d.reason } : {}),
    candidates: d.candidates.map((c) => ({ capability: c.capability, score: c.score })),
  };
}

/** The context envelope's user id, when the test's context names one. */
function userIdOf(context: TestCase['context']): string | null {
  const id = (context?.identity as { user_id?: unknown } | undefined)?.user_id;
  return typeof id === 'string' ? id : null;
}

/** Runs one test: its steps in order, as one conversation. */
async function runOne(agent: CompiledAgent, test: TestCase, clock: () => Date, budgets?: TurnBudgets): Promise<TestResults['results'][number]> {
  const llmQueue = [...(test.llm ?? [])];
  const conversation = new OfflineConversation(agent, { conversationId: CONVERSATION_ID, userId: userIdOf(test.context), budgets });
  const context = test.context ? { version: 'v1' as const, context: test.context } : null;
  const steps: StepResult[] = [];
  for (const step of test.steps) {
    const now = clock().toISOString();
    const turnIndex = conversation.nextTurnIndex;
    const r = await conversation.turn(step.user, { now, context }, (request) => answer(test, request, turnIndex, now, llmQueue));
    const actual = {
      reply: r.reply,
      capability: r.capability.name,
      phase: r.phase,
      awaiting_input: r.awaitingInput,
      status: r.status,
      outcome: r.outcome,
      slots: r.flow.slots,
      ...(conversation.kept ? { kept: conversation.kept.message, masked: conversation.kept.masked } : {}),
    };
    const failures = step.expect ? compare(step.expect, actual) : [];
    const routing = routingOf(r.audit);
    steps.push({ user: step.user, passed: failures.length === 0, expected: step.expect ?? {}, actual, failures, ...(routing ? { routing } : {}) });
    if (r.status === 'completed' || r.status === 'abandoned') {
      const rest = test.steps.slice(steps.length);
      for (const s of rest) {
        steps.push({
          user: s.user,
          passed: false,
          expected: s.expect ?? {},
          actual,
          failures: [`the conversation is ${r.status}: no more messages are taken`],
        });
      }
      break;
    }
  }
  return { name: test.name, passed: steps.every((s) => s.passed), steps };
}

export async function runTests(
  agent: CompiledAgent,
  tests: TestCase[],
  opts: { version: number | null; clock?: () => Date; budgets?: TurnBudgets } = { version: null },
): Promise<TestResults> {
  const clock = opts.clock ?? (() => new Date());
  const results: TestResults['results'] = [];
  for (const t of tests) results.push(await runOne(agent, t, clock, opts.budgets));
  const passed = results.filter((r) => r.passed).length;
  return { version: opts.version, passed, failed: results.length - passed, results };
}
