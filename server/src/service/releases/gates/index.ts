// The gates of a release policy (the `release` field of the current version's definition)
// judged on an evaluation of the candidate beside the current version (docs/releases.md). Pure.
// A gate over no evidence (no stored tests, no reviewed messages, no recorded conversations)
// passes and says so with `evidence: 0`: a policy must not stop an agent that has no traffic yet
// from being released, and the figure shows how little stood behind it.
//
// Every gate is one entry of GATES, in its own file: the compiler asks for an entry for each
// gate the contract names (ReleaseGate's `gate`), `policy` aside, which judges the policy itself.
import type { EvaluationResult, ReleaseGate, ReleasePolicy, AgentDefinition } from '@switchboard/contract';
import type { Gate } from './gate.js';
import { testsGate } from './tests.js';
import { labelledAccuracyGate, routingAccuracyGate } from './accuracy.js';
import { changedCapabilitiesGate, changedOutcomesGate, replaySizeWeakenings } from './replay.js';
import { newHostsGate } from './new-hosts.js';

export { hostsOf } from './new-hosts.js';

/** Every gate a policy may ask for, in the order they are judged and shown. */
const GATES: Record<Exclude<ReleaseGate['gate'], 'policy'>, Gate> = {
  tests: testsGate,
  labelled_accuracy: labelledAccuracyGate,
  routing_accuracy: routingAccuracyGate,
  replay_changed_outcomes: changedOutcomesGate,
  replay_changed_capabilities: changedCapabilitiesGate,
  new_hosts: newHostsGate,
};

/** What an evaluation for `policy` must run: how many conversations to replay (0: none). */
export function replayNeeded(policy: ReleasePolicy): number {
  const r = policy.require.replay;
  return r && (r.max_changed_outcomes !== undefined || r.max_changed_capabilities !== undefined) ? r.conversations : 0;
}

/** Every gate of `policy`, judged on `result` (the candidate is its `draft` side). */
export function judgeGates(policy: ReleasePolicy, result: EvaluationResult, defs: { candidate: AgentDefinition; current: AgentDefinition }): ReleaseGate[] {
  const input = { require: policy.require, result, defs };
  return Object.values(GATES).flatMap((g) => g.judge(input) ?? []);
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
  const c = current.require;
  const n = next.require;
  return [
    ...Object.values(GATES).flatMap((g) => g.weakenings(c, n)),
    ...replaySizeWeakenings(c, n),
    ...(next.max_age_hours > current.max_age_hours ? [`max_age_hours goes from ${current.max_age_hours} to ${next.max_age_hours}`] : []),
  ];
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
