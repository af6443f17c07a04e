// The release gates judged on an evaluation's result (service/release-gates/), the hosts a
// definition names, and the interval shown beside each per-version rate (service/analytics.ts).
import { describe, expect, it } from 'vitest';
import { AgentDefinition, ReleaseGateName, ReleasePolicy, type EvaluationResult } from '@switchboard/contract';
import { hostsOf, judgeGates, replayNeeded } from '../../server/src/service/releases/gates/index.js';
import { wilson } from '../../server/src/service/analytics.js';

const def = (urls: string[], webhook?: string) =>
  AgentDefinition.parse({
    name: 'Shop',
    capabilities: [{ name: 'orders', examples: ['where is my order'], phases: [{ id: 'a', say: 'Hi' }] }],
    actions: Object.fromEntries(urls.map((url, i) => [`a${i}`, { type: 'http', method: 'GET', url }])),
    ...(webhook ? { webhooks: [{ url: webhook, events: ['conversation.completed'] }] } : {}),
  });

const quality = (accuracy: number, total: number) => ({ total, accuracy, capabilities: [], confused: [], matrix: { labels: [], counts: [] } });
const side = (o: { tests?: [number, number]; labelled?: [number, number]; cv?: [number, number] }) => ({
  cross_validation: quality(...(o.cv ?? [0.9, 20])),
  labelled: { as_reviewed: (o.labelled ?? [0, 0])[0], total: (o.labelled ?? [0, 0])[1] },
  tests: {
    passed: (o.tests ?? [0, 0])[0],
    total: (o.tests ?? [0, 0])[1],
    failed: Array.from({ length: (o.tests ?? [0, 0])[1] - (o.tests ?? [0, 0])[0] }, (_, i) => ({ name: `t${i}`, step: 1, why: 'reply' })),
  },
});
const result = (
  draft: Parameters<typeof side>[0],
  current: Parameters<typeof side>[0],
  replay: Partial<NonNullable<EvaluationResult['replay']>> | null = null,
) =>
  ({
    draft: side(draft),
    current: side(current),
    labelled: { fixed: 0, broken: 0, messages: [] },
    replay: replay && {
      replay_id: '00000000-0000-4000-8000-000000000000',
      conversations: 0,
      identical: 0,
      changed: 0,
      errors: 0,
      capability: 0,
      outcome: 0,
      reply: 0,
      action: 0,
      ...replay,
    },
  }) as EvaluationResult;
const policy = (require: unknown) => ReleasePolicy.parse({ require });
const defs = { candidate: def(['https://a.example/x']), current: def(['https://a.example/y']) };

describe('release gates', () => {
  it('requires every stored test to pass, and says which fail', () => {
    const [g] = judgeGates(policy({ tests: 'pass' }), result({ tests: [7, 8] }, { tests: [8, 8] }), defs);
    expect(g).toEqual({
      gate: 'tests',
      passed: false,
      figure: 0.875,
      current: 1,
      limit: 1,
      evidence: 8,
      detail: 'tests: 7 of 8 pass (all must); failing: t0',
    });
    expect(judgeGates(policy({ tests: 'pass' }), result({ tests: [8, 8] }, {}), defs)[0].passed).toBe(true);
  });

  it('holds labelled accuracy to a minimum and to the current version', () => {
    const p = policy({ labelled_accuracy: { min: 0.9, no_regression: true } });
    const below = judgeGates(p, result({ labelled: [17, 20] }, { labelled: [10, 20] }), defs)[0];
    expect(below).toMatchObject({ passed: false, figure: 0.85, current: 0.5, limit: 0.9, evidence: 20 });
    expect(below.detail).toBe('labelled accuracy on reviewed messages: 85% of 20 (at least 90%, not below the current 50%)');
    const regressed = judgeGates(p, result({ labelled: [19, 20] }, { labelled: [20, 20] }), defs)[0];
    expect(regressed).toMatchObject({ passed: false, figure: 0.95, current: 1 });
    expect(judgeGates(p, result({ labelled: [20, 20] }, { labelled: [19, 20] }), defs)[0].passed).toBe(true);
    // Without no_regression, only the minimum counts.
    expect(judgeGates(policy({ labelled_accuracy: { min: 0.9 } }), result({ labelled: [19, 20] }, { labelled: [20, 20] }), defs)[0].passed).toBe(true);
  });

  it('passes a gate over no evidence, and says so', () => {
    const gates = judgeGates(
      policy({ tests: 'pass', labelled_accuracy: { min: 0.9 }, replay: { max_changed_outcomes: 0 } }),
      result({}, {}, { conversations: 0 }),
      defs,
    );
    expect(gates.map((g) => [g.gate, g.passed, g.evidence])).toEqual([
      ['tests', true, 0],
      ['labelled_accuracy', true, 0],
      ['replay_changed_outcomes', true, 0],
    ]);
    expect(gates.map((g) => g.detail)).toEqual([
      'tests: the agent has no stored test conversations (PUT …/test-suite)',
      'labelled accuracy on reviewed messages: no evidence yet',
      'replay: no recorded conversations to replay',
    ]);
  });

  it('counts replayed conversations that changed, and those that could not be replayed, against the share allowed', () => {
    const p = policy({ replay: { conversations: 50, max_changed_outcomes: 0.02, max_changed_capabilities: 0.1 } });
    expect(replayNeeded(p)).toBe(50);
    expect(replayNeeded(policy({ replay: { new_hosts: 'forbid' } }))).toBe(0);
    const [outcomes, capabilities] = judgeGates(p, result({}, {}, { conversations: 50, outcome: 1, errors: 1, capability: 3 }), defs);
    expect(outcomes).toMatchObject({ gate: 'replay_changed_outcomes', passed: false, figure: 0.04, limit: 0.02, evidence: 50 });
    expect(outcomes.detail).toBe('replay: 2 of 50 conversations changed status or outcome, 4% (at most 2%); 1 could not be replayed');
    expect(capabilities).toMatchObject({ gate: 'replay_changed_capabilities', passed: true, figure: 0.08 });
  });

  it('forbids hosts the current version never named, templated ones included', () => {
    const p = policy({ replay: { new_hosts: 'forbid' } });
    const current = def(['https://orders.example/a/{{ slots.id }}'], 'https://hooks.example/in');
    const same = def(['HTTPS://orders.example/b'], 'https://hooks.example/other');
    expect(judgeGates(p, result({}, {}), { candidate: same, current })[0]).toMatchObject({ passed: true, figure: 0, detail: 'new hosts: none (forbidden)' });
    const more = def(['https://orders.example/a', 'http://10.0.0.5:8080/x', 'https://{{ slots.host }}/steal']);
    const [g] = judgeGates(p, result({}, {}), { candidate: more, current });
    expect(g).toMatchObject({ passed: false, figure: 2, evidence: 3 });
    expect(g.detail).toBe('new hosts (forbidden): http://10.0.0.5:8080, https://{{ slots.host }}');
    expect([...hostsOf(current)]).toEqual(['https://orders.example', 'https://hooks.example']);
    expect(judgeGates(policy({ replay: { new_hosts: 'allow' } }), result({}, {}), { candidate: more, current })).toEqual([]);
  });
});

describe('the interval of a rate', () => {
  it('is the 95% Wilson score interval, inside [0, 1], wide for few conversations', () => {
    expect(wilson(0, 0)).toBeNull();
    expect(wilson(8, 10)).toEqual([0.4902, 0.9433]);
    expect(wilson(800, 1000)).toEqual([0.7741, 0.8236]);
    expect(wilson(0, 5)).toEqual([0, 0.4345]);
    expect(wilson(5, 5)).toEqual([0.5655, 1]);
  });
});

describe('the gates registry', () => {
  it('judges every gate the contract names (but `policy`, which judges the policy itself) when a policy asks for all', () => {
    const named = ReleaseGateName.options.filter((g) => g !== 'policy').sort();
    const policy = ReleasePolicy.parse({
      require: {
        tests: 'pass',
        labelled_accuracy: { min: 0.5 },
        routing_accuracy: { min: 0.5 },
        replay: { max_changed_outcomes: 0.1, max_changed_capabilities: 0.1, new_hosts: 'forbid' },
      },
    });
    const side = { cross_validation: { total: 0, accuracy: 0 }, labelled: { total: 0, as_reviewed: 0 }, tests: { total: 0, passed: 0, failed: [] } };
    const result = { draft: side, current: side, replay: null } as unknown as Parameters<typeof judgeGates>[1];
    const def = { name: 'a', capabilities: [] } as unknown as Parameters<typeof judgeGates>[2]['current'];
    expect(
      judgeGates(policy, result, { candidate: def, current: def })
        .map((g) => g.gate)
        .sort(),
    ).toEqual(named);
  });
});
