// `npm run bench:embeddings`: what a router of a model server's embeddings (LLM_EMBEDDINGS_MODEL)
// costs to train, store and score, by the embeddings' size, on the small-agent shape (6
// capabilities × 8 examples and the background class) and on CLINC150 (../shared/data/clinc150 or
// CLINC_DIR), beside the lexical router. The embeddings are random unit vectors: what training,
// storage and scoring cost depends on their size, not their values (their accuracy needs a real
// encoder, which this benchmark does not have).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Router, storeRouter, tableEmbedder, trainingTexts, type RoutableCapability } from '../server/src/engine/router/index.js';

const DIR = process.env.CLINC_DIR ?? fileURLToPath(new URL('../../shared/data/clinc150/', import.meta.url));
const load = (f: string) => JSON.parse(readFileSync(`${DIR}/${f}`, 'utf8')) as [string, string][];
const intents = new Map<string, string[]>();
for (const [u, i] of load('train.json')) (intents.get(i) ?? intents.set(i, []).get(i)!).push(u);
const all = [...intents].map(([name, examples]) => ({ name, examples }));
const clinc: RoutableCapability[] = [...all, { name: 'fallback', examples: load('oos_train.json').map(([u]) => u) }];
const small: RoutableCapability[] = all.slice(0, 6).map((c) => ({ name: c.name, examples: c.examples.slice(0, 8) }));
const messages = load('val.json')
  .slice(0, 1000)
  .map(([u]) => u);

/** A deterministic stream of numbers in (-1, 1) (Park–Miller). */
function numbers(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
}

function unitVectors(count: number, dims: number, next: () => number): Float32Array {
  const data = new Float32Array(count * dims);
  for (let i = 0; i < count; i++) {
    let n = 0;
    for (let d = 0; d < dims; d++) n += (data[i * dims + d] = next()) ** 2;
    n = Math.sqrt(n);
    for (let d = 0; d < dims; d++) data[i * dims + d] /= n;
  }
  return data;
}

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function measure(name: string, caps: RoutableCapability[], outOfScope: string | null, dims: number) {
  process.stderr.write(`  ${name}, ${dims ? `${dims} dimensions` : 'lexical'} … `);
  const next = numbers(dims + 1);
  const texts = [...new Set(trainingTexts(caps, outOfScope))];
  const vectors = dims ? tableEmbedder('embeddings:random', dims, texts, unitVectors(texts.length, dims, next)) : null;
  const started = performance.now();
  const router = await Router.train(caps, { outOfScope, vectors, pause: () => Promise.resolve() });
  const trainS = (performance.now() - started) / 1000;
  const stored = storeRouter(router).length / 1048576;
  const given = dims ? unitVectors(messages.length, dims, next) : null;
  const times: number[] = [];
  messages.forEach((m, i) => {
    const t = performance.now();
    router.score(m, given ? given.subarray(i * dims, (i + 1) * dims) : undefined);
    times.push(performance.now() - t);
  });
  process.stderr.write(`${trainS.toFixed(1)} s\n`);
  return `| ${name} | ${dims || 'lexical'} | ${trainS.toFixed(2)} s | ${stored.toFixed(2)} MiB | ${pct(times, 0.5).toFixed(3)} ms | ${pct(times, 0.99).toFixed(3)} ms |`;
}

async function main() {
  const rows: string[] = [];
  for (const [name, caps, oos] of [
    ['6 capabilities × 8 examples', small, null],
    ['CLINC150 (151 × 100)', clinc, 'fallback'],
  ] as const) {
    for (const dims of [0, 384, 768, 1536]) rows.push(await measure(name, caps, oos, dims));
  }
  console.log('\n| agent | embedding dimensions | training | stored | scoring p50 | scoring p99 |\n|---|---:|---:|---:|---:|---:|');
  console.log(rows.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
