// `npm run bench:memory`: memory stays bounded by ROUTER_CACHE_MB. Starts the server (its own
// process, SQLite) and puts, one after another, BENCH_AGENTS agents (default 40) of about 15,000
// examples each (CLINC150's training set, in a different order per agent so that each is its own
// version to train); then talks to every agent again, so that evicted versions are trained anew.
// The server's resident memory is sampled throughout; the target is ROUTER_CACHE_MB + 300 MB.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rssMb, startServer } from './server.js';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 40);
const CACHE_MB = Number(process.env.ROUTER_CACHE_MB ?? 512);
const DIR = process.env.CLINC_DIR ?? fileURLToPath(new URL('../../shared/data/clinc150/', import.meta.url));
const train = JSON.parse(readFileSync(`${DIR}/train.json`, 'utf8')) as [string, string][];
const oos = JSON.parse(readFileSync(`${DIR}/oos_train.json`, 'utf8')) as [string, string][];
const headers = { 'tenant-id': 'bench', 'content-type': 'application/json' };

/** Agent `n`: CLINC150's intents as capabilities, their examples rotated by `n`. */
function definition(n: number) {
  const intents = new Map<string, string[]>();
  for (const [u, i] of train) (intents.get(i) ?? intents.set(i, []).get(i)!).push(u);
  return {
    name: `Memory ${n}`,
    routing: { fallback: 'fallback' },
    capabilities: [
      ...[...intents].map(([name, examples]) => ({
        name,
        examples: examples.map((_, k) => examples[(k + n) % examples.length]),
        phases: [{ id: 'answer', say: name }],
      })),
      { name: 'fallback', examples: oos.map(([u]) => u), phases: [{ id: 'f', say: 'Sorry?' }] },
    ],
  };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-memory-'));
  const server = await startServer(`sqlite://${join(dir, 'memory.db')}`, { ROUTER_CACHE_MB: String(CACHE_MB) });
  const { base } = server;
  const pid = server.proc.pid!;
  let peak = rssMb(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 100);
  try {
    console.log(`Memory with ROUTER_CACHE_MB=${CACHE_MB}: ${AGENTS} agents of ${train.length + oos.length} examples each`);
    const started = performance.now();
    for (let n = 0; n < AGENTS; n++) {
      const t = performance.now();
      const r = await fetch(`${base}/api/v1/agents/mem-${n}`, { method: 'PUT', headers, body: JSON.stringify(definition(n)) });
      if (!r.ok) throw new Error(`PUT mem-${n}: ${r.status} ${(await r.text()).slice(0, 300)}`);
      console.log(`  put mem-${n} in ${((performance.now() - t) / 1000).toFixed(1)} s; server RSS ${rssMb(pid).toFixed(0)} MiB (peak ${peak.toFixed(0)})`);
    }
    let answered = 0;
    for (let n = 0; n < AGENTS; n++) {
      const t = performance.now();
      const r = await fetch(`${base}/api/v1/agents/mem-${n}/converse`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'what is my credit score' }),
      });
      const body = (await r.json()) as { state?: { capability?: string } };
      if (r.ok && body.state?.capability === 'credit_score') answered++;
      else console.log(`  mem-${n} answered ${r.status} ${JSON.stringify(body).slice(0, 200)}`);
      console.log(
        `  talked to mem-${n} in ${((performance.now() - t) / 1000).toFixed(1)} s; server RSS ${rssMb(pid).toFixed(0)} MiB (peak ${peak.toFixed(0)})`,
      );
    }
    const bound = CACHE_MB + 300;
    console.log(`\n${AGENTS} agents put and talked to in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    console.log(`peak server RSS ${peak.toFixed(0)} MiB (target < ${bound} MiB): ${peak < bound ? 'met' : 'NOT met'}`);
    console.log(`agents that answered correctly afterwards: ${answered} of ${AGENTS}: ${answered === AGENTS ? 'met' : 'NOT met'}`);
  } finally {
    clearInterval(sampler);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
