// `npm run build:client`: compiles the typed client and the contract it is built on into a
// standalone package (build/client-package) that a plain Node.js app can install and import or
// require: ES modules and CommonJS (cjs/), each with the client's declarations as plain types, the contract inlined,
// @ts-rest/core, eventsource-parser and zod as dependencies.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientDeclarations } from './client-declarations.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const CLIENT_PACKAGE = join(root, 'build/client-package');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
}

export function buildClient(): string {
  rmSync(CLIENT_PACKAGE, { recursive: true, force: true });
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.client.json')], { stdio: 'inherit' });
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.client.cjs.json')], { stdio: 'inherit' });
  // The client imports the contract by its workspace name; inside the package it is a sibling folder.
  for (const base of [CLIENT_PACKAGE, join(CLIENT_PACKAGE, 'cjs')]) {
    const contractEntry = join(base, 'contract/src/index.js');
    for (const f of files(join(base, 'client'))) {
      if (!f.endsWith('.js') && !f.endsWith('.d.ts')) continue;
      let rel = relative(join(f, '..'), contractEntry).replace(/\\/g, '/');
      if (!rel.startsWith('.')) rel = `./${rel}`;
      writeFileSync(f, readFileSync(f, 'utf8').replace(/(['"])@switchboard\/contract\1/g, `'${rel}'`));
    }
  }
  // Declarations: the client's own, written as plain types (scripts/client-declarations.ts) in
  // place of tsc's, which carry the contract's Zod types; the contract's declarations go with them.
  const declarations = clientDeclarations(root);
  for (const base of [CLIENT_PACKAGE, join(CLIENT_PACKAGE, 'cjs')]) {
    for (const f of files(base)) if (/\.d\.ts(\.map)?$/.test(f)) rmSync(f);
    writeFileSync(join(base, 'client/src/index.d.ts'), declarations);
  }
  // The package is "type": "module"; the CommonJS build says what it is for its own folder.
  writeFileSync(join(CLIENT_PACKAGE, 'cjs/package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
  const client = JSON.parse(readFileSync(join(root, 'client/package.json'), 'utf8'));
  const contract = JSON.parse(readFileSync(join(root, 'contract/package.json'), 'utf8'));
  const pkg = {
    name: client.name,
    version: client.version,
    description: 'Typed client for the Switchboard API',
    type: 'module',
    main: './cjs/client/src/index.js',
    module: './client/src/index.js',
    types: './client/src/index.d.ts',
    exports: {
      '.': {
        import: { types: './client/src/index.d.ts', default: './client/src/index.js' },
        require: { types: './cjs/client/src/index.d.ts', default: './cjs/client/src/index.js' },
      },
    },
    license: client.license,
    dependencies: {
      '@ts-rest/core': client.dependencies['@ts-rest/core'],
      'eventsource-parser': client.dependencies['eventsource-parser'],
      zod: contract.dependencies.zod,
    },
  };
  writeFileSync(join(CLIENT_PACKAGE, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  return CLIENT_PACKAGE;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = buildClient();
  console.log(`built ${relative(root, dir)} (${files(dir).length} files): npm pack it, or install it from the folder`);
}
