// What a release gate is (one entry of the registry in index.ts): how it judges a candidate on
// an evaluation, and how a policy that makes it weaker reads.
import type { AgentDefinition, EvaluationResult, ReleaseGate, ReleasePolicy } from '@switchboard/contract';

export type Require = ReleasePolicy['require'];

export interface GateInput {
  require: Require;
  result: EvaluationResult;
  defs: { candidate: AgentDefinition; current: AgentDefinition };
}

export interface Gate {
  /** The gate judged on the evaluation; null when the policy does not ask for it. */
  judge(input: GateInput): ReleaseGate | null;
  /** How `next` asks less of this gate than `current`, in words (none: as much or more). */
  weakenings(current: Require, next: Require): string[];
}

export const pct = (x: number) => `${Math.round(x * 10_000) / 100}%`;
export const round = (x: number) => Math.round(x * 10_000) / 10_000;
export const share = (n: number, of: number) => (of > 0 ? round(n / of) : null);
