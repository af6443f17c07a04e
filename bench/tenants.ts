// `npm run bench:tenants`: many tenants' agents on one replica, met for the first time after a
// restart. Seeds BENCH_TENANTS tenants (1,000) with BENCH_AGENTS_PER_TENANT agents each (10),
// their sizes drawn from 3 capabilities to CLINC150's 150 (the first k intents of its training
// set, with its out-of-scope examples for the largest), each with its trained router stored as a
// PUT stores it (every distinct definition is trained once here and its router stored for every
// tenant that has it). Then starts the server (its own process) with ROUTER_CACHE_MB (256) and
// sends every agent its first message in random order, BENCH_CONCURRENCY (4) at a time, then
// sends a random fifth of them a second first message (evicted ones load again). Prints the
// first-message latency (p50, p99, max, and p99 by size), the server's resident memory over time
// against the cache setting, and how many routers it trained, loaded and reloaded. SQLite by
// default; BENCH_DATABASE_URL names a PostgreSQL server to run there instead.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentDefinition } from '@switchboard/contract';
import { routingInput } from '../server/src/engine/compile.js';
import { ROUTER_STATE_FORMAT, Router, storeRouter } from '../server/src/engine/router/index.js';
import { useVectors } from '../server/src/service/agents/vectors.js';
import { canonicalJson, sha256 } from '../server/src/lib/canonical.js';
import { AgentStore } from '../server/src/store/agents/agent-store.js';
import { migrate, openDatabase } from '../server/src/store/db.js';
import { RouterStore } from '../server/src/store/agents/router-store.js';
import { freshPostgres, pct, rssMb, startServer } from './server.js';

const TENANTS = Number(process.env.BENCH_TENANTS ?? 1000);
const PER_TENANT = Number(process.env.BENCH_AGENTS_PER_TENANT ?? 10);
const CACHE_MB = Number(process.env.ROUTER_CACHE_MB ?? 256);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const PG = process.env.BENCH_DATABASE_URL;
const DIR = process.env.CLINC_DIR ?? fileURLToPath(new URL('../../shared/data/clinc150/', import.meta.url));
const train = JSON.parse(readFileSync(`${DIR}/train.json`, 'utf8')) as [string, string][];
const oos = JSON.parse(readFileSync(`${DIR}/oos_train.json`, 'utf8')) as [string, string][];
const val = JSON.parse(readFileSync(`${DIR}/val.json`, 'utf8')) as [string, string][];

/** Capabilities per agent and how often an agent has that many: mostly small, a few CLINC-size. */
const SIZES: [number, number][] = [
  [3, 0.3],
  [6, 0.3],
  [12, 0.2],
  [25, 0.1],
  [50, 0.06],
  [100, 0.03],
  [150, 0.01],
];

const intents = new Map<string, string[]>();
for (const [u, i] of train) (intents.get(i) ?? intents.set(i, []).get(i)!).push(u);
const names = [...intents.keys()];

function definition(k: number): AgentDefinition {
  return AgentDefinition.parse({
    name: `CLINC ${k}`,
    ...(k === 150 ? { routing: { fallback: 'fallback' } } : {}),
    capabilities: [
      ...names.slice(0, k).map((name) => ({ name, examples: intents.get(name)!, phases: [{ id: 'answer', say: name }] })),
      ...(k === 150 ? [{ name: 'fallback', examples: oos.map(([u]) => u), phases: [{ id: 'f', say: 'Sorry?' }] }] : []),
    ],
  });
}

/** A deterministic generator, so that every run seeds the same agents in the same order. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}
const rand = random(42);
const pickSize = () => {
  let x = rand();
  for (const [k, p] of SIZES) if ((x -= p) < 0) return k;
  return SIZES[0][0];
};

async function seed(url: string): Promise<{ agents: { tenant: string; slug: string; size: number }[]; storedMb: number }> {
  const t0 = performance.now();
  const db = openDatabase(url);
  await migrate(db);
  const agentStore = new AgentStore(db);
  const routerStore = new RouterStore(db);
  const shapes = new Map<number, { def: AgentDefinition; digest: string; state: Buffer; model: string }>();
  // Trained as the server trains them: English definitions, with the word vectors it loads.
  const vectors = useVectors({ mode: 'auto' });
  process.stdout.write(`  ${vectors.detail}\n`);
  for (const [k] of SIZES) {
    const def = definition(k);
    const { caps, outOfScope } = routingInput(def);
    const router = await Router.train(caps, { outOfScope, vectors: vectors.vectors });
    shapes.set(k, { def, digest: sha256(canonicalJson(def)), state: storeRouter(router), model: router.model });
    process.stdout.write(`  trained the ${k}-capability shape (${(shapes.get(k)!.state.length / 1048576).toFixed(1)} MB stored)\n`);
  }
  const agents: { tenant: string; slug: string; size: number }[] = [];
  const now = new Date().toISOString();
  let storedBytes = 0;
  for (let t = 0; t < TENANTS; t++) {
    const tenant = `tenant-${t}`;
    const stored = new Set<number>();
    for (let a = 0; a < PER_TENANT; a++) {
      const size = pickSize();
      const shape = shapes.get(size)!;
      const slug = `agent-${a}`;
      await agentStore.put(tenant, slug, shape.def, shape.digest, now, true);
      if (!stored.has(size)) {
        await routerStore.save(tenant, shape.digest, { format: ROUTER_STATE_FORMAT, model: shape.model, state: shape.state }, now, shape.digest);
        storedBytes += shape.state.length;
        stored.add(size);
      }
      agents.push({ tenant, slug, size });
    }
    if ((t + 1) % 100 === 0) process.stdout.write(`  seeded ${t + 1} of ${TENANTS} tenants (${agents.length} agents)\n`);
  }
  await db.close();
  console.log(`  seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s; stored routers: ${(storedBytes / 1048576).toFixed(0)} MB`);
  return { agents, storedMb: storedBytes / 1048576 };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-tenants-'));
  const pg = PG ? await freshPostgres(PG, 'tenants') : null;
  const url = pg?.url ?? `sqlite://${join(dir, 'tenants.db')}`;
  console.log(
    `bench:tenants on ${pg ? 'PostgreSQL' : 'SQLite'}: ${TENANTS} tenants × ${PER_TENANT} agents, ROUTER_CACHE_MB=${CACHE_MB}, ${CONCURRENCY} clients`,
  );
  try {
    const { agents, storedMb } = await seed(url);
    const server = await startServer(url, { ROUTER_CACHE_MB: String(CACHE_MB) });
    const baseRss = rssMb(server.proc.pid!);
    const samples: number[] = [];
    // What the server says it holds, read from /metrics every tenth sample (rendering /metrics
    // for thousands of agents is work of its own: read every half second, it moved the figures),
    // and kept from the read taken at the highest resident memory.
    let atPeak: Record<string, number> = {};
    let peakRead = 0;
    const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1048576;
    const readMetrics = async () => {
      const text = await fetch(`${server.base}/metrics`).then(
        (r) => r.text(),
        () => '',
      );
      const rss = rssMb(server.proc.pid!);
      samples.push(rss);
      if (text && rss > peakRead) {
        peakRead = rss;
        atPeak = Object.fromEntries(
          ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes', 'switchboard_compiled_agents_bytes'].map((n) => [
            n,
            gauge(text, n),
          ]),
        );
      }
    };
    const sample = () => {
      samples.push(rssMb(server.proc.pid!));
      if (samples.length % 10 === 0) void readMetrics();
    };
    const sampler = setInterval(sample, 500);
    try {
      const order = [...agents].sort(() => rand() - 0.5);
      const second = order.filter(() => rand() < 0.2);
      const latencies: { size: number; ms: number }[] = [];
      let failed = 0;
      const run = async (list: typeof agents, label: string) => {
        let next = 0;
        let done = 0;
        const t0 = performance.now();
        const progress = setInterval(
          () => process.stdout.write(`  ${label}: ${done} of ${list.length}, ${samples.at(-1)?.toFixed(0) ?? '?'} MiB resident\n`),
          5000,
        );
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < list.length) {
              const a = list[next++];
              const message = val[Math.floor(rand() * val.length)][0];
              const start = performance.now();
              const r = await fetch(`${server.base}/api/v1/agents/${a.slug}/converse`, {
                method: 'POST',
                headers: { 'tenant-id': a.tenant, 'content-type': 'application/json' },
                body: JSON.stringify({ message }),
              });
              await r.arrayBuffer();
              if (r.status !== 200) failed++;
              latencies.push({ size: a.size, ms: performance.now() - start });
              done++;
            }
          }),
        );
        clearInterval(progress);
        return (performance.now() - t0) / 1000;
      };
      const firstSeconds = await run(order, 'first messages');
      const firstPass = latencies.splice(0);
      const againSeconds = await run(second, 'first messages again (a fifth of the agents, in new conversations)');
      const againPass = latencies.splice(0);
      // A short run may end before the first interval: the memory figures need one sample at least.
      sample();
      await readMetrics();
      const metrics = await fetch(`${server.base}/metrics`).then((r) => r.text());
      const routers = Object.fromEntries([...metrics.matchAll(/switchboard_routers_total\{source="(\w+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]));
      const cacheMb = Number(/switchboard_compiled_agents_bytes (\d+)/.exec(metrics)?.[1] ?? 0) / 1048576;
      const collections = Number(/switchboard_compiled_agents_collections_total (\d+)/.exec(metrics)?.[1] ?? 0);
      const ms = (xs: { ms: number }[]) => xs.map((x) => x.ms);
      console.log(
        `\nfirst messages (${firstPass.length} agents, ${firstSeconds.toFixed(0)} s): p50 ${pct(ms(firstPass), 50).toFixed(1)} ms, p99 ${pct(ms(firstPass), 99).toFixed(1)} ms, max ${Math.max(...ms(firstPass)).toFixed(0)} ms, ${failed} failed`,
      );
      for (const [k] of SIZES) {
        const of = ms(firstPass.filter((x) => x.size === k));
        if (of.length)
          console.log(
            `  ${String(k).padStart(3)} capabilities: ${String(of.length).padStart(5)} agents, p50 ${pct(of, 50).toFixed(1)} ms, p99 ${pct(of, 99).toFixed(1)} ms`,
          );
      }
      console.log(
        `again (${againPass.length}, ${againSeconds.toFixed(0)} s): p50 ${pct(ms(againPass), 50).toFixed(1)} ms, p99 ${pct(ms(againPass), 99).toFixed(1)} ms`,
      );
      console.log(
        `routers: ${routers.trained ?? 0} trained, ${routers.stored ?? 0} loaded from storage (${(routers.stored ?? 0) - firstPass.length} of them reloads after eviction)`,
      );
      console.log(
        `memory: ${baseRss.toFixed(0)} MiB at start, peak ${Math.max(...samples).toFixed(0)} MiB, end ${samples.at(-1)?.toFixed(0)} MiB; compiled versions held ${cacheMb.toFixed(0)} MiB of ROUTER_CACHE_MB=${CACHE_MB}; stored routers ${storedMb.toFixed(0)} MB in the database; ${collections} collections asked for by the cache`,
      );
      console.log(
        `  at the highest of the reads of /metrics (${peakRead.toFixed(0)} MiB resident): V8 heap ${atPeak.nodejs_heap_size_used_bytes?.toFixed(0)} MiB used of ${atPeak.nodejs_heap_size_total_bytes?.toFixed(0)}, ` +
          `memory outside the heap (buffers) ${atPeak.nodejs_external_memory_bytes?.toFixed(0)} MiB, compiled versions ${atPeak.switchboard_compiled_agents_bytes?.toFixed(0)} MiB`,
      );
      const p99 = pct(ms(firstPass), 99);
      const bound = CACHE_MB + 300;
      console.log(
        `targets: p99 first message < 300 ms: ${p99 < 300 ? 'met' : 'MISSED'} (${p99.toFixed(0)} ms); resident memory < ROUTER_CACHE_MB + 300 MiB = ${bound}: ${Math.max(...samples) < bound ? 'met' : 'MISSED'}; nothing trained: ${(routers.trained ?? 0) === 0 ? 'met' : 'MISSED'}`,
      );
    } finally {
      clearInterval(sampler);
      await server.stop();
    }
  } finally {
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
