// `npm run bench`: converse throughput and latency next to /healthz, on one server, in one run.
// The server runs in its own process (as in production) on a fresh SQLite file (or on
// BENCH_DATABASE_URL); autocannon drives it over loopback from this process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TENANT = 'bench';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitReady(base: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}

const agent = {
  name: 'Bench',
  capabilities: [
    {
      name: 'order_status',
      examples: ['where is my order', 'track my package', 'has my order shipped', 'my delivery is late'],
      phases: [
        { id: 'ask', say: 'What is your order number?', options: [{ label: "I don't know", value: 'unknown' }], collect: { slot: 'order_id', type: 'text' } },
        { id: 'thanks', say: 'Looking up {{ slots.order_id }}.', next: 'ask_again' },
        { id: 'ask_again', say: 'Another one?', collect: { slot: 'order_id', type: 'text' }, next: 'thanks' },
      ],
    },
    { name: 'billing', examples: ['I have a billing question', 'refund please', 'charged twice'], phases: [{ id: 'b', say: 'Billing.', end: 'completed' }] },
    { name: 'human', examples: ['talk to a human', 'real person please'], phases: [{ id: 'h', say: 'Handing over.', end: 'escalated' }] },
  ],
};

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function run(name: string, opts: autocannon.Options): Promise<Figures> {
  process.stdout.write(`  ${name}: ${SECONDS}s at ${CONNECTIONS} connections… `);
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const f = { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
  console.log(`${Math.round(f.rps)} req/s`);
  return f;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? `sqlite://${join(dir, 'bench.db')}`;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'error',
      AGENTS_DIR: '',
      RATE_LIMIT_RPS: '0',
      MAX_TURNS_PER_CONVERSATION: '100000000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitReady(base);
    const headers = { 'tenant-id': TENANT, 'content-type': 'application/json' };
    const slug = `bench-${Date.now()}`;
    const put = await fetch(`${base}/api/v1/agents/${slug}`, { method: 'PUT', headers, body: JSON.stringify(agent) });
    if (!put.ok) throw new Error(`PUT agent: ${put.status} ${await put.text()}`);
    const url = `${base}/api/v1/agents/${slug}/converse`;

    // Conversations for the continuing workload, one per connection so that none waits on another.
    const ids: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ message: 'where is my order' }) });
      ids.push(((await r.json()) as { conversation_id: string }).conversation_id);
    }

    console.log(`Switchboard benchmark: ${databaseUrl.startsWith('sqlite') ? 'SQLite (better-sqlite3)' : 'PostgreSQL'}, Node ${process.version}`);
    console.log('  warming up…');
    await autocannon({ url: `${base}/healthz`, connections: 8, duration: 2 });
    await autocannon({ url, method: 'POST', headers, body: JSON.stringify({ message: 'where is my order' }), connections: 8, duration: 2 });

    const results: Figures[] = [];
    results.push(await run('GET /healthz', { url: `${base}/healthz` }));
    results.push(
      await run('converse, new conversation', {
        url,
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'where is my order', context: { version: 'v1', context: { identity: { user_id: 'bench-user' } } } }),
      }),
    );
    let n = 0;
    results.push(
      await run('converse, continuing', {
        url,
        method: 'POST',
        headers,
        requests: [
          {
            setupRequest: (req: any, context: any) => {
              context.id ??= ids[n++ % ids.length];
              return { ...req, body: JSON.stringify({ message: `A-${n}`, conversation_id: context.id }) };
            },
          },
        ],
      } as autocannon.Options),
    );

    const health = results[0].rps;
    console.log('\n| workload | req/s | p50 ms | p99 ms | vs /healthz | errors | non-2xx |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of results) {
      console.log(`| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${((r.rps / health) * 100).toFixed(1)}% | ${r.errors} | ${r.non2xx} |`);
    }
    const failed = results.reduce((n, r) => n + r.errors + r.non2xx, 0);
    if (failed) console.log(`\nWARNING: ${failed} requests failed or answered other than 2xx; the figures above are not valid`);
    const worst = Math.min(results[1].rps, results[2].rps) / health;
    console.log(`\nconverse at ${(worst * 100).toFixed(1)}% of /healthz throughput (target ≥ 20%): ${worst >= 0.2 ? 'met' : 'NOT met'}`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
