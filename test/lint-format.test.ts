// `npm run lint` formats-checks only the files git tracks: a user's own agent files or notes kept
// in the checkout, however they are written, never fail `npm test`.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { trackedFiles } from '../scripts/lint-format.js';

describe('the format check', () => {
  it('takes the tracked files and passes over a file the user keeps untracked in the checkout', () => {
    const mine = `my-agent-${process.pid}.yaml`;
    writeFileSync(mine, 'name:   My bot\ncapabilities: [ {name: a,   examples: [x]} ]\n');
    try {
      const files = trackedFiles()!;
      expect(files).toContain('package.json');
      expect(files).toContain('agents/acme-support.yaml');
      expect(files).not.toContain(mine);
    } finally {
      rmSync(mine, { force: true });
    }
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(pkg.scripts.lint).toContain('npm run -s lint:format');
    expect(pkg.scripts['lint:format']).toBe('node --import tsx scripts/lint-format.ts');
  });
});
