// `npm run build:widget`: the web chat widget's script tag build, widget/dist/v1.js (one minified
// file, no module loader, served at /widget/v1.js), with its size and Subresource Integrity hash.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const started = performance.now();
const out = 'widget/dist/v1.js';
await build({
  entryPoints: ['widget/src/script.ts'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2022'],
  outfile: out,
  legalComments: 'none',
  logLevel: 'warning',
});
const bytes = readFileSync(out);
const integrity = `sha384-${createHash('sha384').update(bytes).digest('base64')}`;
console.log(
  `build:widget: ${out}, ${(bytes.length / 1024).toFixed(1)} KB (${(gzipSync(bytes).length / 1024).toFixed(1)} KB gzip), integrity ${integrity}, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
