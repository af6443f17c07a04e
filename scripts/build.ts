// `npm run build`: the production build. Compiles the contract, the typed client and the server
// (its CLIs included) to JavaScript in dist/, as they stand in the repository, so that
// `node dist/server/src/main.js` (what `npm run serve` and the image run) needs no TypeScript
// loader. Workspace imports (@switchboard/contract, @switchboard/client) become relative imports
// of the compiled sources, dist/package.json carries the version the OpenAPI document shows, and
// the built console is copied beside it. Prints what it wrote.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(root, 'dist');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
}

const started = performance.now();
rmSync(DIST, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const entries: Record<string, string> = {
  '@switchboard/contract': join(DIST, 'contract/src/index.js'),
  '@switchboard/client': join(DIST, 'client/src/index.js'),
};
let rewritten = 0;
const js = files(DIST).filter((f) => f.endsWith('.js'));
for (const f of js) {
  const text = readFileSync(f, 'utf8');
  const out = text.replace(/(['"])(@switchboard\/(?:contract|client))\1/g, (_m, _q: string, name: string) => {
    let rel = relative(join(f, '..'), entries[name]).replace(/\\/g, '/');
    if (!rel.startsWith('.')) rel = `./${rel}`;
    return `'${rel}'`;
  });
  if (out !== text) {
    writeFileSync(f, out);
    rewritten++;
  }
}

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; license: string };
writeFileSync(
  join(DIST, 'package.json'),
  `${JSON.stringify({ name: `${pkg.name}-dist`, version: pkg.version, license: pkg.license, type: 'module', private: true }, null, 2)}\n`,
);

// npm keeps a workspace's own version of a dependency in <workspace>/node_modules when the root holds
// another (ajv 8.20 for the server beside a tool's older one). The compiled workspace resolves its
// packages through the same folder, so dist/<workspace>/node_modules links to it.
const linked: string[] = [];
for (const ws of ['contract', 'client', 'server']) {
  if (!existsSync(join(root, ws, 'node_modules'))) continue;
  symlinkSync(join('..', '..', ws, 'node_modules'), join(DIST, ws, 'node_modules'), 'dir');
  linked.push(ws);
}

const consoleBuilt = existsSync(join(root, 'console/dist/index.html'));
if (consoleBuilt) cpSync(join(root, 'console/dist'), join(DIST, 'console/dist'), { recursive: true });
const widgetBuilt = existsSync(join(root, 'widget/dist/v1.js'));
if (widgetBuilt) cpSync(join(root, 'widget/dist'), join(DIST, 'widget/dist'), { recursive: true });

console.log(
  `build: ${js.length} JavaScript files in dist/ (${rewritten} with workspace imports made relative), ` +
    (linked.length ? `dist/{${linked.join(',')}}/node_modules linked to the workspaces' own, ` : '') +
    `${consoleBuilt ? 'console copied to dist/console/dist' : 'no console build found (npm run build:console first)'}, ` +
    `${widgetBuilt ? 'widget copied to dist/widget/dist' : 'no widget build found (npm run build:widget first)'}, ` +
    `in ${((performance.now() - started) / 1000).toFixed(1)} s; run it with: node --expose-gc dist/server/src/main.js`,
);
