// `npm run lint:format` (in `npm run lint`) and `npm run format`: prettier over the files git
// tracks, so that a user's own agent files or notes kept in the checkout never fail `npm test`.
// Outside a git checkout (a source archive) it takes every file the patterns match.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const PATTERNS = ['*.ts', '*.tsx', '*.css', '*.mjs', '*.json', '*.yaml', '*.yml'];

/** The tracked files prettier formats (those deleted from the working tree aside), or null outside a git checkout. */
export function trackedFiles(cwd = process.cwd()): string[] | null {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--', ...PATTERNS], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out
      .split('\0')
      .filter(Boolean)
      .filter((f) => existsSync(`${cwd}/${f}`));
  } catch {
    return null;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const write = process.argv.includes('--write');
  const files = trackedFiles() ?? [`**/{${PATTERNS.join(',')}}`];
  const prettier = createRequire(import.meta.url).resolve('prettier/bin/prettier.cjs');
  const r = spawnSync(process.execPath, [prettier, write ? '--write' : '--check', '--log-level', 'warn', ...files], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
