import { describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import type { ActionResult } from '../../server/src/domain.js';
import { compileAgent, MAX_PHASES_PER_TURN, validateDefinition } from '../../server/src/engine/compile.js';
import type { ActionRequest, TurnInput, TurnResult } from '../../server/src/engine/run.js';
import { echoAgent, parseDefinition, supportAgent } from '../helpers/agents.js';
import { driveTurn } from '../helpers/engine.js';
const AGENT_ID = '00000000-0000-4000-8000-000000000001';

async function agentOf(def: AgentDefinitionInput) {
  const parsed = parseDefinition(def);
  expect(validateDefinition(parsed)).toEqual([]);
  return compileAgent(AGENT_ID, 1, parsed);
}

type Prior = TurnInput['prior'];

/** Runs one turn, answering action calls from `answers` (in order); returns the result and the requests made. */
function turn(
  agent: Awaited<ReturnType<typeof agentOf>>,
  prior: Prior,
  message: string,
  opts: { answers?: ActionResult[]; context?: TurnInput['context']; secrets?: Record<string, string> } = {},
): { result: TurnResult; calls: ActionRequest[] } {
  const answers = [...(opts.answers ?? [])];
  return driveTurn(agent, message, {
    prior,
    context: opts.context ?? null,
    secrets: opts.secrets ?? {},
    answer: () => answers.shift() ?? { ok: false, status: 0, body: null },
  });
}

/** The prior state a finished turn leaves behind. */
const after = (r: TurnResult, turnCount = 2): Prior => ({
  status: r.status,
  outcome: r.outcome,
  capability: r.capability.name,
  phase: r.phase,
  flow: r.flow,
  turnCount,
});

const support = () => agentOf(supportAgent('http://orders.test'));

describe('routing', () => {
  it('routes a paraphrase of an example to its capability and audits the decision', async () => {
    const { result } = turn(await support(), null, 'where is my order?');
    expect(result.capability.name).toBe('order_status');
    expect(result.phase).toBe('ask_order');
    const routing = result.audit.find((a) => a.type === 'routing_decision')!;
    expect(routing.data.strategy).toBe('classifier');
    expect((routing.data.selected as { capability: string }).capability).toBe('order_status');
    expect((routing.data.candidates as unknown[]).length).toBeLessThanOrEqual(5);
    expect(routing.data.threshold).toBe(0.3);
  });

  it('answers with the built-in fallback below the threshold and stays active', async () => {
    const { result } = turn(await support(), null, 'zzzz qqqq');
    expect(result.capability.name).toBe('fallback');
    expect(result.reply).toBe('No idea, sorry.');
    expect(result.status).toBe('active');
    expect(result.awaitingInput).toBe(true);
    const routing = result.audit.find((a) => a.type === 'routing_decision')!;
    expect(routing.data.strategy).toBe('fallback');
    // The agent's fallback has no examples: the router's background class took the message.
    expect(routing.data.reason).toBe('background');
  });

  it('routes to the author-named fallback capability below the threshold', async () => {
    const agent = await agentOf({
      name: 'x',
      routing: { threshold: 0.9, fallback: 'catchall' },
      capabilities: [
        { name: 'a', examples: ['alpha beta'], phases: [{ id: 'p', say: 'A' }] },
        { name: 'catchall', phases: [{ id: 'sorry', say: 'Try again later.' }] },
      ],
    });
    const { result } = turn(agent, null, 'zzz');
    expect(result.capability.name).toBe('catchall');
    expect(result.reply).toBe('Try again later.');
  });

  it('says not_entitled when the best match is gated and the user lacks the entitlement', async () => {
    const { result } = turn(await support(), null, 'priority phone line', { context: { version: 'v1', context: { entitlements: { tier: 'silver' } } } });
    expect(result.reply).toBe('That is not part of your plan.');
    const routing = result.audit.find((a) => a.type === 'routing_decision')!;
    expect(routing.data.reason).toBe('not_entitled');
    const vip = (routing.data.candidates as { capability: string; eligible: boolean; reason?: string }[]).find((c) => c.capability === 'vip')!;
    expect(vip).toMatchObject({ eligible: false, reason: 'not_entitled' });
  });

  it('lets an entitled user into a gated capability', async () => {
    const { result } = turn(await support(), null, 'priority phone line', { context: { version: 'v1', context: { entitlements: { tier: 'gold' } } } });
    expect(result.capability.name).toBe('vip');
    expect(result.status).toBe('completed');
  });

  it('re-routes the next message after a flow runs out of phases without an end', async () => {
    const agent = await agentOf({
      name: 'x',
      capabilities: [
        { name: 'hello', examples: ['hello there', 'hi'], phases: [{ id: 'greet', say: 'Hi!' }] },
        { name: 'bye', examples: ['goodbye', 'bye bye'], phases: [{ id: 'farewell', say: 'Bye!', end: 'completed' }] },
      ],
    });
    const first = turn(agent, null, 'hello there').result;
    expect(first.status).toBe('active');
    expect(first.flow.wait).toBe('open');
    const second = turn(agent, after(first), 'goodbye').result;
    expect(second.capability.name).toBe('bye');
    expect(second.status).toBe('completed');
    expect(second.audit.find((a) => a.type === 'phase_transition')!.data).toEqual({ capability: 'bye', from: 'greet', to: 'farewell' });
  });

  it('scores deterministically: the same message gives the same scores', async () => {
    const agent = await support();
    expect(agent.router.score('track my parcel')).toEqual(agent.router.score('track my parcel'));
  });
});

describe('collecting slots', () => {
  it('asks again with the retry text, then escalates after max_attempts', async () => {
    const agent = await support();
    let r = turn(agent, null, 'where is my order').result;
    r = turn(agent, after(r), 'abc').result;
    expect(r.reply).toBe('Six digits, please.\nWhat is your order number?');
    expect(r.options).toEqual([{ label: "I don't know it", value: 'unknown' }]);
    expect(r.flow.attempts).toBe(1);
    r = turn(agent, after(r, 4), 'def').result;
    expect(r.status).toBe('active');
    r = turn(agent, after(r, 6), 'ghi').result;
    expect(r.status).toBe('escalated');
    expect(r.outcome).toBe('escalated');
    expect(r.reply).toBe('A colleague will take over here shortly.');
    expect(r.audit.find((a) => a.type === 'status_change')!.data).toMatchObject({ from: 'active', to: 'escalated', reason: 'max_attempts' });
  });

  it('fills the slot, calls the action with rendered templates and follows the matching branch', async () => {
    const agent = await support();
    const r0 = turn(agent, null, 'where is my order').result;
    const { result, calls } = turn(agent, after(r0), '100001', {
      answers: [{ ok: true, status: 200, body: { status: 'shipped', shipped_at: '2026-11-20', eta: '2026-11-25' } }],
      secrets: { ORDERS_TOKEN: 'tok' },
    });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe('http://orders.test/orders/100001');
    expect(calls[0].headers).toEqual({ authorization: 'Bearer tok' });
    expect(result.reply).toBe('Order 100001 shipped on 2026-11-20, eta 2026-11-25.');
    expect(result.flow.slots).toEqual({ order_id: '100001', eta: '2026-11-25' });
    expect(result.status).toBe('completed');
    expect(result.outcome).toBe('resolved');
    expect(result.awaitingInput).toBe(false);
  });

  it('takes the default branch when no condition holds, with its outcome', async () => {
    const agent = await support();
    const r0 = turn(agent, null, 'where is my order').result;
    const { result } = turn(agent, after(r0), '100002', {
      answers: [{ ok: true, status: 200, body: { status: 'preparing' } }],
      secrets: { ORDERS_TOKEN: 'tok' },
    });
    expect(result.phase).toBe('not_shipped');
    expect(result.outcome).toBe('pending');
  });

  it('goes to on_error when the action fails', async () => {
    const agent = await support();
    const r0 = turn(agent, null, 'where is my order').result;
    const { result } = turn(agent, after(r0), '500000', { answers: [{ ok: false, status: 503, body: null }] });
    expect(result.phase).toBe('sorry');
    expect(result.status).toBe('escalated');
    expect(result.reply).toBe('Our order system is not answering.');
  });

  it('parses every slot type and refuses what does not fit', async () => {
    const types: [string, string, unknown][] = [
      ['number', '3,5', 3.5],
      ['integer', '42', 42],
      ['email', 'ana@example.com', 'ana@example.com'],
      ['boolean', 'Yes', true],
      ['boolean', 'no', false],
      ['date', '2026-02-28', '2026-02-28'],
      ['date', 'tomorrow', '2026-11-23'],
    ];
    for (const [type, input, expected] of types) {
      const agent = await agentOf({
        name: 'x',
        capabilities: [
          {
            name: 'c',
            examples: ['start'],
            phases: [
              { id: 'ask', say: '?', collect: { slot: 's', type: type as 'text' } },
              { id: 'done', say: 'ok {{ slots.s }}', end: 'completed' },
            ],
          },
        ],
      });
      const r0 = turn(agent, null, 'start').result;
      expect(turn(agent, after(r0), input).result.flow.slots.s, `${type} ${input}`).toEqual(expected);
    }
    const bad: [string, string][] = [
      ['number', 'many'],
      ['integer', '4.2'],
      ['email', 'not-an-email'],
      ['boolean', 'perhaps'],
      ['date', '2026-02-30'],
    ];
    for (const [type, input] of bad) {
      const agent = await agentOf({
        name: 'x',
        capabilities: [{ name: 'c', examples: ['start'], phases: [{ id: 'ask', say: '?', collect: { slot: 's', type: type as 'text' } }] }],
      });
      const r0 = turn(agent, null, 'start').result;
      const r1 = turn(agent, after(r0), input).result;
      expect(r1.flow.slots.s, `${type} ${input}`).toBeUndefined();
      expect(r1.flow.attempts).toBe(1);
    }
  });

  it('matches a choice by option value or label in any case', async () => {
    const agent = await agentOf({
      name: 'x',
      capabilities: [
        {
          name: 'c',
          examples: ['open an account'],
          phases: [
            {
              id: 'kind',
              say: 'Which account?',
              options: [
                { label: 'Checking account', value: 'checking' },
                { label: { en: 'Savings account', es: 'Cuenta de ahorro' }, value: 'savings' },
              ],
              collect: { slot: 'kind', type: 'choice' },
            },
            { id: 'done', say: 'Opening {{ slots.kind }}.', end: 'completed' },
          ],
        },
      ],
    });
    const r0 = turn(agent, null, 'open an account').result;
    expect(r0.options).toEqual([
      { label: 'Checking account', value: 'checking' },
      { label: 'Savings account', value: 'savings' },
    ]);
    expect(turn(agent, after(r0), 'CHECKING').result.reply).toBe('Opening checking.');
    expect(turn(agent, after(r0), 'cuenta de ahorro').result.reply).toBe('Opening savings.');
    expect(turn(agent, after(r0), 'credit').result.flow.attempts).toBe(1);
  });
});

describe('texts and templates', () => {
  it('speaks the preferred language, then its base language, then the default', async () => {
    const agent = await support();
    const es = { version: 'v1' as const, context: { preferences: { language: 'es-MX' } } };
    expect(turn(agent, null, 'where is my order', { context: es }).result.reply).toBe('¿Cuál es su número de pedido?');
    const fr = { version: 'v1' as const, context: { preferences: { language: 'fr' } } };
    expect(turn(agent, null, 'where is my order', { context: fr }).result.reply).toBe('What is your order number?');
  });

  it('renders user and context names and never exposes secrets to replies', async () => {
    const def = parseDefinition({
      name: 'x',
      capabilities: [
        {
          name: 'c',
          examples: ['hello'],
          phases: [{ id: 'p', say: 'Hi {{ user.name | default: "there" }} ({{ context.customAttributes.plan }}){{ secrets.X }}{{ constructor }}' }],
        },
      ],
    });
    // The validator refuses secrets in a say; compile it anyway to prove the engine does not provide them either.
    expect(validateDefinition(def).map((p) => p.path)).toEqual(['capabilities.c.phases.p.say']);
    const { result } = turn(await compileAgent(AGENT_ID, 1, def), null, 'hello', {
      context: { version: 'v1', context: { identity: { user_name: 'Ana' }, customAttributes: { plan: 'pro' } } },
      secrets: { X: 'leak' },
    });
    expect(result.reply).toBe('Hi Ana (pro)');
  });
});

describe('template failures', () => {
  it('hands the conversation to a person when a template spends the turn budget, keeping what was said before', async () => {
    const agent = await agentOf({
      name: 'x',
      capabilities: [
        {
          name: 'c',
          examples: ['go'],
          phases: [
            { id: 'a', say: 'Before.' },
            { id: 'b', say: '{% for i in (1..100000000) %}x{% endfor %}' },
            { id: 'c', say: 'After.', end: 'completed' },
          ],
        },
      ],
    });
    const { result } = turn(agent, null, 'go');
    expect(result.reply).toBe('Before.\nA colleague will take over here shortly.');
    expect(result.status).toBe('escalated');
    expect(result.audit.find((a) => a.type === 'error')!.data).toMatchObject({ code: 'render_budget_exceeded', phase: 'b' });
  });
});

describe('guards and statuses', () => {
  it('stops a flow that loops more than the phase limit and escalates with an error entry', async () => {
    const agent = await agentOf({
      name: 'loop',
      capabilities: [
        {
          name: 'c',
          examples: ['go'],
          phases: [
            { id: 'a', next: 'b' },
            { id: 'b', next: 'a' },
          ],
        },
      ],
    });
    const { result } = turn(agent, null, 'go');
    expect(result.status).toBe('escalated');
    expect(result.audit.filter((a) => a.type === 'phase_transition')).toHaveLength(MAX_PHASES_PER_TURN);
    expect(result.audit.find((a) => a.type === 'error')!.data.code).toBe('phase_limit');
  });

  it('answers an escalated conversation with the escalated message and changes nothing', async () => {
    const agent = await support();
    const r0 = turn(agent, null, 'talk to a human').result;
    expect(r0.status).toBe('escalated');
    expect(r0.reply).toBe('Handing you over.');
    const r1 = turn(agent, after(r0), 'hello?').result;
    expect(r1.status).toBe('escalated');
    expect(r1.outcome).toBe('escalated');
    expect(r1.reply).toBe('A colleague will take over here shortly.');
    expect(r1.awaitingInput).toBe(true);
    expect(r1.audit).toEqual([]);
  });

  it('resumes a paused conversation on the next user message, audited', async () => {
    const agent = await agentOf({
      name: 'p',
      capabilities: [
        { name: 'wait', examples: ['hold on'], phases: [{ id: 'hold', say: 'Waiting.', end: 'paused' }] },
        { name: 'hi', examples: ['hello'], phases: [{ id: 'greet', say: 'Hello!' }] },
      ],
    });
    const r0 = turn(agent, null, 'hold on').result;
    expect(r0.status).toBe('paused');
    const r1 = turn(agent, after(r0), 'hello').result;
    expect(r1.status).toBe('active');
    expect(r1.audit[0].data).toMatchObject({ from: 'paused', to: 'active', reason: 'user_message' });
    expect(r1.reply).toBe('Hello!');
  });

  it('writes a status_change for a new conversation and phase transitions in order', async () => {
    const { result } = turn(await agentOf(echoAgent), null, 'echo this');
    expect(result.audit.map((a) => a.type)).toEqual(['status_change', 'routing_decision', 'phase_transition']);
  });
});
