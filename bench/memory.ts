// `npm run bench:memory`: memory stays bounded by ROUTER_CACHE_MB. Starts the server (its own
// process, SQLite) and puts, one after another, BENCH_AGENTS agents (default 40) of about 15,000
// examples each (CLINC150's training set, in a different order per agent so that each is its own
// version to train); then talks to every agent again, so that evicted versions are trained anew.
// The server's resident memory is sampled throughout; the target is ROUTER_CACHE_MB + 300 MB.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resident memory of a process, in MiB (Linux). */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-memory-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${join(dir, 'memory.db')}`,
      LOG_LEVEL: 'error',
      AGENTS_DIR: '',
      RATE_LIMIT_RPS: '0',
      ROUTER_CACHE_MB: String(CACHE_MB),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid!))), 100);
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/readyz`)).ok) break;
      } catch {
        /* not up yet */
      }
      if (i > 300) throw new Error('server did not become ready');
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(`Memory with ROUTER_CACHE_MB=${CACHE_MB}: ${AGENTS} agents of ${train.length + oos.length} examples each`);
    const started = performance.now();
    for (let n = 0; n < AGENTS; n++) {
      const t = performance.now();
      const r = await fetch(`${base}/api/v1/agents/mem-${n}`, { method: 'PUT', headers, body: JSON.stringify(definition(n)) });
      if (!r.ok) throw new Error(`PUT mem-${n}: ${r.status} ${(await r.text()).slice(0, 300)}`);
      console.log(
        `  put mem-${n} in ${((performance.now() - t) / 1000).toFixed(1)} s; server RSS ${rssMb(child.pid!).toFixed(0)} MiB (peak ${peak.toFixed(0)})`,
      );
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
        `  talked to mem-${n} in ${((performance.now() - t) / 1000).toFixed(1)} s; server RSS ${rssMb(child.pid!).toFixed(0)} MiB (peak ${peak.toFixed(0)})`,
      );
    }
    const bound = CACHE_MB + 300;
    console.log(`\n${AGENTS} agents put and talked to in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    console.log(`peak server RSS ${peak.toFixed(0)} MiB (target < ${bound} MiB): ${peak < bound ? 'met' : 'NOT met'}`);
    console.log(`agents that answered correctly afterwards: ${answered} of ${AGENTS}: ${answered === AGENTS ? 'met' : 'NOT met'}`);
  } finally {
    clearInterval(sampler);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
