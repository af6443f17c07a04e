// `tests: pass`: every stored test conversation passes on the candidate.
import { share, type Gate } from './gate.js';

export const testsGate: Gate = {
  judge({ require, result }) {
    if (require.tests !== 'pass') return null;
    const t = result.draft.tests;
    const c = result.current.tests;
    const failing = t.failed.map((f) => f.name);
    return {
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
    };
  },
  weakenings: (current, next) => (current.tests === 'pass' && next.tests !== 'pass' ? ['it drops tests: pass'] : []),
};
