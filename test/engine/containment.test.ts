// What a hostile definition can do within one turn: nothing beyond its budgets, nothing with
// secrets, nothing to the requests it sends (docs/security.md, "The tenant model").
import { describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { compileAgent, compilePattern, validateDefinition } from '../../server/src/engine/compile.js';
import { parseSlot } from '../../server/src/engine/slots.js';
import { CompiledCondition, RenderBudget } from '../../server/src/engine/templates.js';
import { parseDefinition } from '../helpers/agents.js';
import { driveTurn, NOW } from '../helpers/engine.js';

const AGENT_ID = '00000000-0000-4000-8000-000000000001';

async function agentOf(def: AgentDefinitionInput, valid = true) {
  const parsed = parseDefinition(def);
  if (valid) expect(validateDefinition(parsed)).toEqual([]);
  return compileAgent(AGENT_ID, 1, parsed);
}

const run = driveTurn;

/** A conversation waiting on the `ask` collect of `oneAction`'s capability. */
const waiting = {
  status: 'active' as const,
  capability: 'c',
  phase: 'ask',
  flow: { slots: {}, actions: {}, attempts: 0, wait: 'collecting' as const },
  turnCount: 2,
};

const oneAction = (url: string, headers: Record<string, string> = {}): AgentDefinitionInput => ({
  name: 'x',
  capabilities: [
    {
      name: 'c',
      examples: ['go'],
      phases: [
        { id: 'ask', say: 'Who?', collect: { slot: 'u', type: 'text' } },
        { id: 'call', call: 'a' },
        { id: 'done', say: 'Done.', end: 'completed' },
      ],
    },
  ],
  actions: { a: { type: 'http', method: 'GET', url, headers } },
});

describe('secrets in definitions', () => {
  it('refuses any transformation of a secret: filters, tags, expressions', () => {
    for (const tpl of [
      '{{ secrets.T | upcase }}',
      "{{ secrets.T | split: '' | join: '.' }}",
      '{{ secrets.T | base64_encode }}',
      '{{ secrets.T | slice: 0, 10 }}',
      '{% assign s = secrets.T %}{{ s }}',
      '{% if secrets.T contains "a" %}a{% endif %}',
      "{{ secrets['T'] }}",
    ]) {
      const problems = validateDefinition(parseDefinition(oneAction(`http://h.test/?t=${tpl}`)));
      expect(
        problems.map((p) => p.path),
        tpl,
      ).toContain('actions.a.url');
    }
    expect(validateDefinition(parseDefinition(oneAction('http://h.test/?t={{ secrets.T }}', { authorization: 'Bearer {{ secrets.T }}' })))).toEqual([]);
  });

  it('sends the secret on the wire and records only the mask', async () => {
    const agent = await agentOf(oneAction('http://h.test/x?t={{ secrets.T }}', { authorization: 'Bearer {{ secrets.T }}' }));
    const prior = waiting;
    const { calls } = run(agent, 'ana', { prior, secrets: { T: 's3cr3t-value' } });
    expect(calls[0].url).toBe('http://h.test/x?t=s3cr3t-value');
    expect(calls[0].headers.authorization).toBe('Bearer s3cr3t-value');
    expect(JSON.stringify(calls[0].masked)).not.toContain('s3cr3t');
    expect(calls[0].masked).toEqual({ url: 'http://h.test/x?t=***', headers: { authorization: 'Bearer ***' }, body: undefined });
    expect(calls[0].secretValues).toEqual(['s3cr3t-value']);
  });

  it('does not send an action whose secret the tenant was not granted, and says so as for an unknown one', async () => {
    const agent = await agentOf(oneAction('http://h.test/x?t={{ secrets.T }}'));
    const prior = waiting;
    const { result, calls } = run(agent, 'ana', { prior, secrets: {} });
    expect(calls).toHaveLength(0);
    expect(result.audit.find((a) => a.type === 'error')!.data).toEqual({
      code: 'secret_unavailable',
      message: 'secret "T" is not available to this tenant',
      action: 'a',
    });
  });
});

describe('values in URLs', () => {
  const prior = waiting;

  it('encodes a slot value as one path segment, so it cannot change the path, query or fragment', async () => {
    const agent = await agentOf(oneAction('http://h.test/users/{{ slots.u }}/profile?q={{ slots.u }}'));
    const { calls } = run(agent, '../../admin/delete?all=1#', { prior });
    const url = new URL(calls[0].url);
    expect(url.pathname).toBe('/users/..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23/profile');
    expect(url.searchParams.get('q')).toBe('../../admin/delete?all=1#');
    expect(url.hash).toBe('');
  });

  it('refuses a value that is only "." or "..", and sends nothing', async () => {
    const agent = await agentOf(oneAction('http://h.test/users/{{ slots.u }}/profile'));
    const { calls, result } = run(agent, '..', { prior });
    expect(calls).toHaveLength(0);
    expect(result.audit.find((a) => a.type === 'error')!.data.code).toBe('template_error');
  });

  it('inserts a value as it is only where the author says so with raw', async () => {
    const agent = await agentOf(oneAction('http://h.test/{{ slots.u | raw }}'));
    expect(run(agent, 'a/b?c=d', { prior }).calls[0].url).toBe('http://h.test/a/b?c=d');
  });
});

describe('budgets of one turn', () => {
  const loops = (n: number): AgentDefinitionInput => ({
    name: 'x',
    capabilities: [
      {
        name: 'c',
        examples: ['go'],
        phases: [
          ...Array.from({ length: n }, (_, i) => ({ id: `p${i}`, say: `{% for i in (1..9000000) %}{% endfor %}${i}` })),
          { id: 'end', say: 'End.', end: 'completed' as const },
        ],
      },
    ],
  });

  it('gives all the rendering of a turn one time budget: once spent, the turn goes to a person, audited, never an empty text', async () => {
    const agent = await agentOf(loops(45));
    const budget = new RenderBudget({ timeMs: 20, outputChars: 1_000_000 });
    const { result } = run(agent, 'go', { budget });
    const errors = result.audit.filter((a) => a.type === 'error');
    // One phase spends the budget; no later template runs as if nothing happened.
    expect(errors.map((e) => e.data.code)).toEqual(['render_budget_exceeded']);
    expect(errors[0].data.message).toMatch(/template time/);
    expect(result.status).toBe('escalated');
    expect(result.reply).not.toBe('');
    expect(result.reply).not.toContain('End.');
  });

  const slowCalls = (): AgentDefinitionInput => ({
    name: 'x',
    actions: { pay: { type: 'http', method: 'POST', url: 'http://h.test/pay' } },
    capabilities: [
      {
        name: 'c',
        examples: ['go'],
        phases: [
          { id: 'call', call: 'pay', on_error: 'failed' },
          { id: 'check', next: [{ if: 'actions.pay.ok', goto: 'paid' }, { goto: 'failed' }] },
          { id: 'paid', say: 'Paid {{ actions.pay.body.amount }} for {{ user.id }}.', end: 'completed' },
          { id: 'failed', say: 'Payment failed.', end: 'escalated' },
        ],
      },
    ],
  });

  /** Drives a turn whose action takes `waitMs` of wall time, the thread blocked meanwhile (a neighbour holding the event loop). */
  function slowTurn(agent: Awaited<ReturnType<typeof agentOf>>, waitMs: number, budget: RenderBudget) {
    return run(agent, 'go', {
      budget,
      answer: () => {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, waitMs);
        return { ok: true, status: 200, body: { amount: 42 } };
      },
    });
  }

  it('counts time spent rendering, never time spent waiting on an action or a blocked event loop', async () => {
    const agent = await agentOf(slowCalls());
    const replies = [0, 300, 1500].map((waitMs) => {
      const budget = new RenderBudget({ timeMs: 250, outputChars: 1_000_000 });
      const { result } = slowTurn(agent, waitMs, budget);
      // Were waiting counted, the 300 ms and 1.5 s turns would spend the 250 ms budget and be audited.
      expect(result.audit.filter((a) => a.type === 'error')).toEqual([]);
      return [result.reply, result.status, result.outcome];
    });
    expect(replies).toEqual(Array(3).fill(['Paid 42 for u1.', 'completed', 'resolved']));
  });

  it('takes a phase’s on_error when its action request spends the budget, and audits it', async () => {
    const def = slowCalls();
    def.actions!.pay.url = 'http://h.test/pay?n={% for i in (1..9000000) %}{% endfor %}1';
    const agent = await agentOf(def);
    const budget = new RenderBudget({ timeMs: 20, outputChars: 1_000_000 });
    const { result, calls } = run(agent, 'go', { budget });
    expect(calls).toHaveLength(0);
    expect(result.audit.filter((a) => a.type === 'error').map((e) => [e.data.code, e.data.phase])).toEqual([['render_budget_exceeded', 'call']]);
    expect(result.reply).toBe('Payment failed.');
    expect(result.status).toBe('escalated');
  });

  it('caps what a turn says, stored and answered, and audits the cut', async () => {
    const agent = await agentOf({
      name: 'x',
      capabilities: [
        {
          name: 'c',
          examples: ['go'],
          phases: [
            { id: 'a', say: "{% for i in (1..2000) %}{{ 'é' | append: 'abcdefghijklmnopqrstuvwxyz0123456789' }}{% endfor %}" },
            { id: 'b', say: "{% for i in (1..2000) %}{{ 'zyxwvutsrqponmlkjihgfedcba' }}{% endfor %}", end: 'completed' },
          ],
        },
      ],
    });
    const { result } = run(agent, 'go', { maxReplyBytes: 64 * 1024 });
    expect(Buffer.byteLength(result.reply)).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.byteLength(result.reply)).toBeGreaterThan(60 * 1024);
    expect(result.reply).not.toContain('\uFFFD');
    expect(result.audit.find((a) => a.type === 'error')!.data.code).toBe('reply_limit');
  });

  it('stops a render as soon as the turn output budget is spent, not after it built the whole string', async () => {
    const agent = await agentOf({
      name: 'x',
      capabilities: [
        { name: 'c', examples: ['go'], phases: [{ id: 'a', say: "{% for i in (1..5000000) %}{{ 'xxxxxxxxxx' }}{% endfor %}", end: 'completed' }] },
      ],
    });
    const { result } = run(agent, 'go', { budget: new RenderBudget({ timeMs: 60_000, outputChars: 100_000 }) });
    expect(result.reply.length).toBeLessThan(1000);
    expect(result.status).toBe('escalated');
    expect(result.audit.find((a) => a.type === 'error')!.data).toMatchObject({
      code: 'render_budget_exceeded',
      message: expect.stringMatching(/output limit/),
    });
  });
});

describe('conditions', () => {
  it('are parsed as expressions: a condition cannot close its tag and inject others', () => {
    expect(() => new CompiledCondition('false %}{% endif %}{% for i in (1..9000000) %}{% endfor %}{% if false')).toThrow(/expected/);
    const problems = validateDefinition(
      parseDefinition({
        name: 'x',
        capabilities: [{ name: 'c', examples: ['go'], phases: [{ id: 'a', next: [{ if: 'false %}{% endif %}{% if true', goto: 'a' }] }] }],
      }),
    );
    expect(problems.map((p) => p.path)).toEqual(['capabilities.c.phases.a.next[0].if']);
  });

  it('still judge comparisons, and, or and contains as Liquid does', () => {
    const scope = { slots: { n: 3, s: 'hello' } };
    expect(new CompiledCondition('slots.n > 2 and slots.s contains "ell"').holds(scope)).toBe(true);
    expect(new CompiledCondition("slots.n == 3 or slots.s == 'x'").holds(scope)).toBe(true);
    expect(new CompiledCondition('slots.missing').holds(scope)).toBe(false);
  });
});

describe('slot patterns', () => {
  it('run on a linear-time engine: patterns that backtrack exponentially elsewhere are safe here', () => {
    for (const p of ['^([a-z0-9]|[a-z])*$', '(a|aa)*b', '^(\\d|\\d\\d)*$', '^(a+)+$']) {
      const spec = { type: 'text' as const, pattern: compilePattern(p) };
      // 40 characters and a mismatch at the end: billions of steps for a backtracking engine.
      expect(parseSlot(spec, `${'1'.repeat(20)}${'a'.repeat(20)}!`, new Date(NOW)).ok).toBe(false);
    }
    expect(parseSlot({ type: 'text', pattern: compilePattern('^[0-9]{6}$') }, '100001', new Date(NOW))).toEqual({ ok: true, value: '100001' });
  });

  it('refuse what RE2 does not support, with a clear problem', () => {
    const problems = validateDefinition(
      parseDefinition({ name: 'x', capabilities: [{ name: 'c', examples: ['go'], phases: [{ id: 'a', collect: { slot: 's', pattern: '(a)\\1' } }] }] }),
    );
    expect(problems[0].message).toMatch(/RE2 syntax/);
  });
});
