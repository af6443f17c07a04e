// `labelled_accuracy` (the reviewed messages routed as the reviewers said) and
// `routing_accuracy` (the examples' cross-validated accuracy): a minimum, no regression, or both.
import type { ReleaseGate } from '@switchboard/contract';
import { pct, round, share, type Gate, type GateInput } from './gate.js';

type Name = 'labelled_accuracy' | 'routing_accuracy';

function accuracyGate(name: Name, what: string, figures: (r: GateInput['result']) => { fig: number | null; cur: number | null; evidence: number }): Gate {
  return {
    judge({ require, result }): ReleaseGate | null {
      const rule = require[name];
      if (!rule) return null;
      const { fig, cur, evidence } = figures(result);
      const bounds = [
        rule.min !== undefined ? `at least ${pct(rule.min)}` : null,
        rule.no_regression && cur !== null ? `not below the current ${pct(cur)}` : null,
      ]
        .filter(Boolean)
        .join(', ');
      const passed = evidence === 0 || fig === null || ((rule.min === undefined || fig >= rule.min) && (!rule.no_regression || cur === null || fig >= cur));
      return {
        gate: name,
        passed,
        figure: fig,
        current: cur,
        limit: rule.min ?? (rule.no_regression ? cur : null),
        evidence,
        detail: evidence === 0 ? `${what}: no evidence yet` : `${what}: ${pct(fig ?? 0)} of ${evidence}${bounds ? ` (${bounds})` : ''}`,
      };
    },
    weakenings(current, next) {
      const was = current[name];
      if (!was) return [];
      const is = next[name];
      if (!is) return [`it drops ${name}`];
      const out: string[] = [];
      if (was.min !== undefined && (is.min === undefined || is.min < was.min)) out.push(`${name}.min goes from ${was.min} to ${is.min ?? 'none'}`);
      if (was.no_regression && !is.no_regression) out.push(`it drops ${name}.no_regression`);
      return out;
    },
  };
}

export const labelledAccuracyGate = accuracyGate('labelled_accuracy', 'labelled accuracy on reviewed messages', (r) => ({
  fig: share(r.draft.labelled.as_reviewed, r.draft.labelled.total),
  cur: share(r.current.labelled.as_reviewed, r.current.labelled.total),
  evidence: r.draft.labelled.total,
}));

export const routingAccuracyGate = accuracyGate('routing_accuracy', 'cross-validated routing accuracy of its examples', (r) => ({
  fig: r.draft.cross_validation.total ? round(r.draft.cross_validation.accuracy) : null,
  cur: r.current.cross_validation.total ? round(r.current.cross_validation.accuracy) : null,
  evidence: r.draft.cross_validation.total,
}));
