// The gates of a release policy (the `release` field of the current version's definition)
// judged on an evaluation of the candidate beside the current version (docs/releases.md). Pure.
// A gate over no evidence (no stored tests, no reviewed messages, no recorded conversations)
// passes and says so with `evidence: 0`: a policy must not stop an agent that has no traffic yet
// from being released, and the figure shows how little stood behind it.
import type { AgentDefinition, EvaluationResult, ReleaseGate, ReleasePolicy } from '@switchboard/contract';

const pct = (x: number) => `${Math.round(x * 10_000) / 100}%`;
const round = (x: number) => Math.round(x * 10_000) / 10_000;
const share = (n: number, of: number) => (of > 0 ? round(n / of) : null);

/** The scheme and host of every action and webhook URL of a definition, as written (templated hosts included). */
export function hostsOf(def: AgentDefinition): Set<string> {
  const out = new Set<string>();
  const add = (url: string) => {
    const m = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)/i.exec(url.trim());
    out.add((m ? m[1] : url).toLowerCase());
  };
  for (const a of Object.values(def.actions ?? {})) add(a.url);
  for (const w of def.webhooks ?? []) add(w.url);
  return out;
}

/** What an evaluation for `policy` must run: how many conversations to replay (0: none). */
export function replayNeeded(policy: ReleasePolicy): number {
  const r = policy.require.replay;
  return r && (r.max_changed_outcomes !== undefined || r.max_changed_capabilities !== undefined) ? r.conversations : 0;
}

/** Every gate of `policy`, judged on `result` (the candidate is its `draft` side). */
export function judgeGates(policy: ReleasePolicy, result: EvaluationResult, defs: { candidate: AgentDefinition; current: AgentDefinition }): ReleaseGate[] {
  const req = policy.require;
  const gates: ReleaseGate[] = [];

  if (req.tests === 'pass') {
    const t = result.draft.tests;
    const c = result.current.tests;
    const failing = t.failed.map((f) => f.name);
    gates.push({
      gate: 'tests',
      passed: t.total === 0 || t.passed === t.total,
      figure: share(t.passed, t.total),
      current: share(c.passed, c.total),
      limit: 1,
      evidence: t.total,
      detail:
        t.total === 0
          ? 'tests: the agent has no stored test conversations (PUT …/test-suite)'
          : `tests: ${t.passed} of ${t.total} pass (all must)${failing.length ? `; failing: ${failing.slice(0, 5).join(', ')}${failing.length > 5 ? ', …' : ''}` : ''}`,
    });
  }

  const accuracy = (
    gate: 'labelled_accuracy' | 'routing_accuracy',
    what: string,
    rule: { min?: number; no_regression: boolean },
    fig: number | null,
    cur: number | null,
    evidence: number,
  ) => {
    const bounds = [
      rule.min !== undefined ? `at least ${pct(rule.min)}` : null,
      rule.no_regression && cur !== null ? `not below the current ${pct(cur)}` : null,
    ]
      .filter(Boolean)
      .join(', ');
    const passed = evidence === 0 || fig === null || ((rule.min === undefined || fig >= rule.min) && (!rule.no_regression || cur === null || fig >= cur));
    gates.push({
      gate,
      passed,
      figure: fig,
      current: cur,
      limit: rule.min ?? (rule.no_regression ? cur : null),
      evidence,
      detail: evidence === 0 ? `${what}: no evidence yet` : `${what}: ${pct(fig ?? 0)} of ${evidence}${bounds ? ` (${bounds})` : ''}`,
    });
  };
  if (req.labelled_accuracy) {
    const d = result.draft.labelled;
    const c = result.current.labelled;
    accuracy(
      'labelled_accuracy',
      'labelled accuracy on reviewed messages',
      req.labelled_accuracy,
      share(d.as_reviewed, d.total),
      share(c.as_reviewed, c.total),
      d.total,
    );
  }
  if (req.routing_accuracy) {
    const d = result.draft.cross_validation;
    const c = result.current.cross_validation;
    accuracy(
      'routing_accuracy',
      'cross-validated routing accuracy of its examples',
      req.routing_accuracy,
      d.total ? round(d.accuracy) : null,
      c.total ? round(c.accuracy) : null,
      d.total,
    );
  }

  const r = req.replay;
  if (r) {
    const replay = result.replay;
    const n = replay?.conversations ?? 0;
    // A conversation the candidate could not replay counts as changed: nothing shows it is not.
    const changed = (k: 'outcome' | 'capability', limit: number | undefined, gate: 'replay_changed_outcomes' | 'replay_changed_capabilities', what: string) => {
      if (limit === undefined) return;
      const count = replay ? replay[k] + replay.errors : 0;
      const fig = share(count, n);
      gates.push({
        gate,
        passed: n === 0 || (fig ?? 0) <= limit,
        figure: fig,
        current: null,
        limit,
        evidence: n,
        detail:
          n === 0
            ? `replay: no recorded conversations to replay`
            : `replay: ${count} of ${n} conversations ${what}, ${pct(fig ?? 0)} (at most ${pct(limit)})${replay?.errors ? `; ${replay.errors} could not be replayed` : ''}`,
      });
    };
    changed('outcome', r.max_changed_outcomes, 'replay_changed_outcomes', 'changed status or outcome');
    changed('capability', r.max_changed_capabilities, 'replay_changed_capabilities', 'routed elsewhere');
    if (r.new_hosts === 'forbid') {
      const before = hostsOf(defs.current);
      const after = hostsOf(defs.candidate);
      const added = [...after].filter((h) => !before.has(h)).sort();
      gates.push({
        gate: 'new_hosts',
        passed: added.length === 0,
        figure: added.length,
        current: null,
        limit: 0,
        evidence: after.size,
        detail: added.length ? `new hosts (forbidden): ${added.join(', ')}` : 'new hosts: none (forbidden)',
      });
    }
  }
  return gates;
}

/**
 * How `next` (the policy of a version about to become current) is weaker than `current` (the
 * policy in force), in words; none when it is as strong or stronger. A policy lives in the
 * current version's definition, so a step that makes a version current also sets the policy the
 * next step is judged by: a weaker one is judged as a failed gate of its own (`policy`).
 */
export function policyWeakenings(current: ReleasePolicy | undefined, next: ReleasePolicy | undefined): string[] {
  if (!current) return [];
  if (!next) return ['it has no release policy'];
  const out: string[] = [];
  const c = current.require;
  const n = next.require;
  if (c.tests === 'pass' && n.tests !== 'pass') out.push('it drops tests: pass');
  const accuracy = (name: 'labelled_accuracy' | 'routing_accuracy') => {
    const was = c[name];
    if (!was) return;
    const is = n[name];
    if (!is) return out.push(`it drops ${name}`);
    if (was.min !== undefined && (is.min === undefined || is.min < was.min)) out.push(`${name}.min goes from ${was.min} to ${is.min ?? 'none'}`);
    if (was.no_regression && !is.no_regression) out.push(`it drops ${name}.no_regression`);
  };
  accuracy('labelled_accuracy');
  accuracy('routing_accuracy');
  if (c.replay) {
    const is = n.replay;
    if (!is) out.push('it drops replay');
    else {
      if (is.conversations < c.replay.conversations) out.push(`replay.conversations goes from ${c.replay.conversations} to ${is.conversations}`);
      for (const k of ['max_changed_outcomes', 'max_changed_capabilities'] as const) {
        const was = c.replay[k];
        if (was !== undefined && (is[k] === undefined || is[k] > was)) out.push(`replay.${k} goes from ${was} to ${is[k] ?? 'none'}`);
      }
      if (c.replay.new_hosts === 'forbid' && is.new_hosts !== 'forbid') out.push('replay.new_hosts goes from forbid to allow');
    }
  }
  if (next.max_age_hours > current.max_age_hours) out.push(`max_age_hours goes from ${current.max_age_hours} to ${next.max_age_hours}`);
  return out;
}

/** The `policy` gate of a step whose version weakens the policy in force (policyWeakenings); null when it does not. */
export function policyGate(version: number, weakenings: string[]): ReleaseGate | null {
  if (!weakenings.length) return null;
  return {
    gate: 'policy',
    passed: false,
    figure: weakenings.length,
    current: null,
    limit: 0,
    evidence: weakenings.length,
    detail: `policy: version ${version} weakens the release policy in force: ${weakenings.join('; ')}`,
  };
}
