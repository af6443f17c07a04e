// The layers of docs/architecture.md, enforced: what each folder may import.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = process.cwd();
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.(ts|tsx|mjs)$/.test(n) ? [p] : [];
  });

/** Every import of a file, as a path relative to the repository (packages by name). */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    const spec = m[1] ?? m[2];
    out.push(spec.startsWith('.') ? relative(root, join(file, '..', spec)) : spec);
  }
  return out;
}

interface Rule {
  layer: string;
  forbidden: RegExp;
  why: string;
  except?: (file: string, imported: string) => boolean;
}

const RULES: Rule[] = [
  { layer: 'contract/src', forbidden: /^(server|client)\/|^@switchboard\/(server|client)/, why: 'the contract depends on nothing of ours' },
  { layer: 'client/src', forbidden: /^server\/|^@switchboard\/server/, why: 'the client knows only the contract' },
  {
    layer: 'server/src/engine',
    forbidden:
      /^server\/src\/(store|service|http|actions|cli|config|services|app|main)|^node:(fs|net|http|https|dns|child_process|worker_threads)|^(knex|pg|better-sqlite3|undici|express)$/,
    why: 'the engine is pure: no I/O, no storage, no HTTP',
  },
  {
    layer: 'server/src/lib',
    forbidden: /^server\/src\/(store|service|http|engine|actions|cli)/,
    why: 'lib holds what everything shares, and depends on none of it',
  },
  { layer: 'server/src/store', forbidden: /^server\/src\/(service|http|engine|actions|cli)/, why: 'stores hold queries; they call no service' },
  { layer: 'server/src/service', forbidden: /^server\/src\/(http|cli)/, why: 'services know nothing of HTTP' },
  {
    layer: 'server/src/http',
    forbidden: /^server\/src\/(store|engine|actions|cli)|^(knex|pg|better-sqlite3)$/,
    why: 'the HTTP layer talks to services only (database errors reach it translated by the store)',
  },
  {
    layer: 'console/src',
    forbidden: /^(server|contract)\/|^@switchboard\/(server|contract)|^node:/,
    why: 'the console calls the API through the typed client only',
  },
  { layer: 'server/src', forbidden: /^(preact|wouter-preact|chart\.js|vite)(\/|$)/, why: 'the server has no front-end packages' },
  {
    layer: 'widget/src',
    forbidden: /^(server|console|client)\/|^@switchboard\/(server|console|client)|^node:|^(preact|zod|@ts-rest\/core)(\/|$)/,
    why: "the widget runs in any page: the contract's types, fetch and a small parser, nothing more",
  },
];

describe('architecture', () => {
  it.each(RULES)('$layer: $why', ({ layer, forbidden, except }) => {
    const broken: string[] = [];
    for (const file of files(join(root, layer))) {
      for (const imported of imports(file)) {
        if (forbidden.test(imported) && !except?.(file, imported)) broken.push(`${relative(root, file)} imports ${imported}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(['console/src', 'server/src', 'client/src', 'contract/src'])('%s has no import circle (it reads top-down)', (dir) => {
    const all = files(join(root, dir));
    const known = new Map(all.map((f) => [relative(root, f).replace(/\.(ts|tsx|mjs)$/, ''), relative(root, f)]));
    const edges = new Map(all.map((f) => [relative(root, f), imports(f).flatMap((i) => known.get(i.replace(/\.(js|ts|tsx|mjs)$/, '')) ?? [])]));
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        circles.push([...path.slice(path.indexOf(f)), f].join(' → '));
        return;
      }
      state.set(f, 'open');
      for (const next of edges.get(f) ?? []) visit(next, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of edges.keys()) visit(f, []);
    expect(circles).toEqual([]);
  });

  it('defines every kind of AppError in errors.ts, the one family the error mapper answers', () => {
    const elsewhere = files(join(root, 'server/src'))
      .filter((f) => !f.endsWith('server/src/errors.ts') && /class \w+ extends (AppError|InputError|ConflictError)\b/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    expect(elsewhere).toEqual([]);
    expect(readFileSync(join(root, 'server/src/errors.ts'), 'utf8')).toMatch(/class ReviewClosedError extends AppError/);
  });

  it('keeps every source file of the packages under 500 lines: a longer one does several jobs', () => {
    const long = ['server/src', 'contract/src', 'client/src', 'widget/src', 'console/src']
      .flatMap((dir) => files(join(root, dir)))
      .map((f) => ({ file: relative(root, f), lines: readFileSync(f, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 500);
    expect(long).toEqual([]);
    expect(files(join(root, 'console/src')).length).toBeGreaterThan(5);
  });

  it('never builds an AppError inline: each kind is named in errors.ts', () => {
    const inline = files(join(root, 'server/src'))
      .filter((f) => /new AppError\(/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    expect(inline).toEqual([]);
  });

  it('finds the imports it checks (the rules are not vacuous)', () => {
    expect(imports(join(root, 'server/src/http/handlers/conversations.ts'))).toContain('server/src/services.js');
    expect(imports(join(root, 'server/src/engine/run.ts'))).toContain('server/src/engine/routing.js');
    expect(imports(join(root, 'console/src/session.ts'))).toContain('@switchboard/client');
  });
});
