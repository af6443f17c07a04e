// `replay.max_changed_outcomes` and `replay.max_changed_capabilities`: of the newest recorded
// conversations replayed against the candidate, how many ended otherwise or were routed elsewhere.
// A conversation the candidate could not replay counts as changed: nothing shows it is not.
import { pct, share, type Gate, type Require } from './gate.js';

function changedGate(
  k: 'outcome' | 'capability',
  limitOf: 'max_changed_outcomes' | 'max_changed_capabilities',
  gate: 'replay_changed_outcomes' | 'replay_changed_capabilities',
  what: string,
): Gate {
  return {
    judge({ require, result }) {
      const limit = require.replay?.[limitOf];
      if (limit === undefined) return null;
      const replay = result.replay;
      const n = replay?.conversations ?? 0;
      const count = replay ? replay[k] + replay.errors : 0;
      const fig = share(count, n);
      return {
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
      };
    },
    weakenings(current, next) {
      const was = current.replay?.[limitOf];
      if (was === undefined || !next.replay) return [];
      const is = next.replay[limitOf];
      return is === undefined || is > was ? [`replay.${limitOf} goes from ${was} to ${is ?? 'none'}`] : [];
    },
  };
}

export const changedOutcomesGate = changedGate('outcome', 'max_changed_outcomes', 'replay_changed_outcomes', 'changed status or outcome');
export const changedCapabilitiesGate = changedGate('capability', 'max_changed_capabilities', 'replay_changed_capabilities', 'routed elsewhere');

/** What the replay itself asks (the gates above read its figures): how many conversations it covers. */
export const replaySizeWeakenings = (current: Require, next: Require): string[] => {
  if (!current.replay) return [];
  if (!next.replay) return ['it drops replay'];
  return next.replay.conversations < current.replay.conversations
    ? [`replay.conversations goes from ${current.replay.conversations} to ${next.replay.conversations}`]
    : [];
};
