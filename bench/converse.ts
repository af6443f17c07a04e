// `npm run bench`: converse throughput and latency next to /healthz, on SQLite and (when a
// PostgreSQL URL is given) on PostgreSQL, in one run; then two server processes on one
// PostgreSQL database against one. Each server runs in its own process (as in production) on a
// fresh database; autocannon drives it over loopback from this process. Beside req/s each
// workload reports the server's CPU time per call, which moves far less than req/s when the load
// generator shares the machine's cores. Then new conversations, each request another user, without
// a split, with a traffic split of 50% active (read with the agent: it should cost nothing), and
// without again. Last, continuing conversations whose every message holds personal data, without
// a privacy policy and with every type masked: what masking adds to a turn.
//   BENCH_DATABASE_URL (or TEST_DATABASE_URL): a PostgreSQL server; a fresh database is created
//   on it for the run and dropped after. BENCH_CONNECTIONS (32), BENCH_SECONDS (10).
//   BENCH_DATABASES=sqlite or postgres: one of them alone; BENCH_REPLICAS=0: not the two processes.
//   BENCH_RUNS (1): runs of each build, each on a fresh database, and then their medians.
//   BENCH_BASELINE: another checkout, built there (npm run build), such as the previous commit's
//   in a git worktree: its server runs the same workloads, alternating with this build's
//   (BENCH_BASELINE_FIRST=1: the baseline first in each pair). On PostgreSQL the two builds then
//   also run interleaved in short bursts (BENCH_BURST s, BENCH_ROUNDS rounds; BENCH_INTERLEAVED=0:
//   not), the comparison the machine's drift disturbs least.
// On PostgreSQL on this machine each workload also shows the CPU time of PostgreSQL's processes per
// call, and the target is the CPU of a continuing call, server and database together.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { cpuMicros, freshPostgres, postgresCpu, startServer } from './server.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TENANT = 'bench';
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const ONLY = process.env.BENCH_DATABASES;
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 1));
const BASELINE = process.env.BENCH_BASELINE;
const headers = { 'tenant-id': TENANT, 'content-type': 'application/json' };
const ENV = { MAX_TURNS_PER_CONVERSATION: '100000000', DB_POOL_MAX: process.env.DB_POOL_MAX ?? '16' };

/**
 * Targets per database for continuing converse, against the same server's /healthz in the same
 * run: on SQLite its throughput share; on PostgreSQL the CPU a call costs the server and the
 * database together (database at most half of it), which two shared cores can judge where
 * throughput cannot. And its p99.
 */
const TARGETS = { sqlite: { share: 0.3, p99: 60 }, postgres: { cpu: 5, p99: 100 } } as const;
type Target = { share: number; p99: number } | { cpu: number; p99: number };

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
  /** The server's CPU time per answered call (all its threads), µs: steadier than req/s on a machine the load generator shares. */
  cpuPerCall: number | null;
  /** PostgreSQL's CPU time per answered call (all its processes), µs; null on SQLite or a server elsewhere. */
  dbCpuPerCall: number | null;
}

const perCall = (before: number | null, after: number | null, calls: number) => (before === null || after === null || !calls ? null : (after - before) / calls);

/** One workload against the server process `pid`, with `db` reading the database server's CPU time when it can. */
async function run(pid: number, name: string, opts: autocannon.Options, db: () => number | null = () => null): Promise<Figures> {
  process.stdout.write(`  ${name}: ${SECONDS}s at ${CONNECTIONS} connections… `);
  const [before, dbBefore] = [cpuMicros(pid), db()];
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const [after, dbAfter] = [cpuMicros(pid), db()];
  const f: Figures = {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    cpuPerCall: perCall(before, after, r.requests.total),
    dbCpuPerCall: perCall(dbBefore, dbAfter, r.requests.total),
  };
  console.log(`${Math.round(f.rps)} req/s`);
  return f;
}

/** Puts the agent and starts one conversation per connection, for the continuing workload. */
async function prepare(base: string, n: number): Promise<{ url: string; ids: string[]; slug: string }> {
  const slug = `bench-${Date.now()}`;
  const put = await fetch(`${base}/api/v1/agents/${slug}`, { method: 'PUT', headers, body: JSON.stringify(agent) });
  if (!put.ok) throw new Error(`PUT agent: ${put.status} ${await put.text()}`);
  const url = `${base}/api/v1/agents/${slug}/converse`;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ message: 'where is my order' }) });
    ids.push(((await r.json()) as { conversation_id: string }).conversation_id);
  }
  return { url, ids, slug };
}

/** New conversations, each request from another user (so that a split sends some to each version). */
function newConversations(url: string): autocannon.Options {
  let n = 0;
  return {
    url,
    method: 'POST',
    headers,
    requests: [
      {
        setupRequest: (req: autocannon.Request) => ({
          ...req,
          body: JSON.stringify({ message: 'where is my order', context: { version: 'v1', context: { identity: { user_id: `bench-user-${n++}` } } } }),
        }),
      },
    ],
  } as autocannon.Options;
}

/** Stores a second version as a draft and sends half of new conversations to it. */
async function startSplit(base: string, slug: string): Promise<void> {
  const draft = { ...agent, description: 'the split candidate' };
  const put = await fetch(`${base}/api/v1/agents/${slug}?activate=false`, { method: 'PUT', headers, body: JSON.stringify(draft) });
  if (!put.ok) throw new Error(`PUT draft: ${put.status} ${await put.text()}`);
  const split = await fetch(`${base}/api/v1/agents/${slug}/split`, { method: 'PUT', headers, body: JSON.stringify({ version: 2, percent: 50 }) });
  if (!split.ok) throw new Error(`PUT split: ${split.status} ${await split.text()}`);
}

/** A message a customer might type, with a card, an e-mail address, a phone number, a name and an address in it. */
const PERSONAL = (n: number) =>
  `I'm Jane Doe, card 4111 1111 1111 1111 was charged twice for order ${100000 + n}; mail jane.doe@example.com or call +44 20 7946 0958, 221B Baker Street`;

/** Every built-in type on (docs/privacy.md), as a tenant's policy. */
const FULL_POLICY = {
  mask: {
    email: 'redact',
    phone: { keep_last: 4 },
    card: { keep_last: 4 },
    iban: 'redact',
    ssn: 'redact',
    national_id: 'redact',
    ip: 'redact',
    birth_date: 'redact',
    name: 'redact',
    address: 'redact',
  },
  custom: [{ name: 'member_id', pattern: 'MBR-[0-9]{8}' }],
  phone_regions: ['GB', 'US'],
};

/** Each connection continues its own conversation (none waits on another); `say`: the message (default A-n). */
function continuing(url: string, ids: string[], connections = CONNECTIONS, say: (n: number) => string = (n) => `A-${n}`): autocannon.Options {
  let n = 0;
  return {
    url,
    method: 'POST',
    headers,
    connections,
    requests: [
      {
        setupRequest: (req: autocannon.Request, context: { id?: string }) => {
          context.id ??= ids[n++ % ids.length];
          return { ...req, body: JSON.stringify({ message: say(n), conversation_id: context.id }) };
        },
      },
    ],
  } as autocannon.Options;
}

const µs = (n: number | null) => (n === null ? '—' : String(Math.round(n)));

/**
 * The workloads' figures; the last column is the CPU a call costs the server and the database
 * together, in multiples of what a `/healthz` call costs the server in the same run.
 */
function table(results: Figures[]): void {
  const health = results[0];
  console.log('\n| workload | req/s | p50 ms | p99 ms | vs /healthz | server CPU µs/call | database CPU µs/call | CPU × /healthz | errors | non-2xx |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const times = health.cpuPerCall && r.cpuPerCall !== null ? `${((r.cpuPerCall + (r.dbCpuPerCall ?? 0)) / health.cpuPerCall).toFixed(2)}×` : '—';
    console.log(
      `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${((r.rps / health.rps) * 100).toFixed(1)}% | ${µs(r.cpuPerCall)} | ${µs(r.dbCpuPerCall)} | ${times} | ${r.errors} | ${r.non2xx} |`,
    );
  }
  const failed = results.reduce((n, r) => n + r.errors + r.non2xx, 0);
  if (failed) console.log(`\nWARNING: ${failed} requests failed or answered other than 2xx; the figures above are not valid`);
}

/** The three workloads on one server; returns the figures and whether the database's targets were met. */
async function benchOne(label: string, databaseUrl: string, target: Target, checkout?: string): Promise<{ results: Figures[]; met: boolean }> {
  console.log(`\n## ${label}, Node ${process.version}`);
  const server = await startServer(databaseUrl, ENV, checkout);
  const pid = server.proc.pid!;
  const db = databaseUrl.startsWith('postgres') ? await postgresCpu(databaseUrl) : () => null;
  try {
    const { url, ids, slug } = await prepare(server.base, CONNECTIONS);
    console.log('  warming up…');
    await autocannon({ url: `${server.base}/healthz`, connections: 8, duration: 2 });
    await autocannon({ url, method: 'POST', headers, body: JSON.stringify({ message: 'where is my order' }), connections: 8, duration: 2 });
    const results: Figures[] = [];
    results.push(await run(pid, 'GET /healthz', { url: `${server.base}/healthz` }));
    results.push(
      await run(
        pid,
        'converse, new conversation',
        {
          url,
          method: 'POST',
          headers,
          body: JSON.stringify({ message: 'where is my order', context: { version: 'v1', context: { identity: { user_id: 'bench-user' } } } }),
        },
        db,
      ),
    );
    results.push(await run(pid, 'converse, continuing', continuing(url, ids), db));
    results.push(await run(pid, 'converse, new conversation, many users', newConversations(url), db));
    await startSplit(server.base, slug);
    results.push(await run(pid, 'converse, new conversation, many users, split 50%', newConversations(url), db));
    await fetch(`${server.base}/api/v1/agents/${slug}/split`, { method: 'DELETE', headers });
    results.push(await run(pid, 'converse, new conversation, many users, split ended', newConversations(url), db));
    // The same personal data without a privacy policy and with every type masked: what masking adds to a turn.
    results.push(await run(pid, 'converse, continuing, personal data, no policy', continuing(url, ids, CONNECTIONS, PERSONAL), db));
    const policy = await fetch(`${server.base}/api/v1/privacy-policy`, { method: 'PUT', headers, body: JSON.stringify(FULL_POLICY) });
    // A build without tenant privacy policies (a baseline's) runs without this one.
    if (policy.ok) results.push(await run(pid, 'converse, continuing, personal data, every type masked', continuing(url, ids, CONNECTIONS, PERSONAL), db));
    else console.log(`  (no privacy policy on this build: PUT answered ${policy.status})`);
    table(results);
    const [plain, masked] = [results[6], results[7]];
    if (masked && plain.cpuPerCall !== null && masked.cpuPerCall !== null) {
      console.log(
        `\nmasking every type: ${Math.round(masked.cpuPerCall - plain.cpuPerCall)} µs of server CPU a turn ` +
          `(${Math.round(masked.cpuPerCall)} against ${Math.round(plain.cpuPerCall)}), p50 ${masked.p50} against ${plain.p50} ms, p99 ${masked.p99} against ${plain.p99} ms`,
      );
    }
    // The split's run between two without: the database grows and the process warms over the three.
    const [before, split, after] = [results[3], results[4], results[5]];
    if (before.cpuPerCall !== null && split.cpuPerCall !== null && after.cpuPerCall !== null) {
      const without = (before.cpuPerCall + after.cpuPerCall) / 2;
      console.log(
        `\nsplit active: ${Math.round(split.cpuPerCall)} µs of server CPU a new conversation against ${Math.round(without)} without ` +
          `(the runs before and after), ${(split.cpuPerCall / without).toFixed(2)}×; p99 ${split.p99} ms against ${before.p99} and ${after.p99} ms`,
      );
    }
    const [health, turn] = [results[0], results[2]];
    const share = turn.rps / health.rps;
    if ('share' in target) {
      const met = share >= target.share && turn.p99 < target.p99;
      console.log(
        `\ncontinuing converse at ${(share * 100).toFixed(1)}% of /healthz, p99 ${turn.p99} ms ` +
          `(target ≥ ${target.share * 100}%, p99 < ${target.p99} ms): ${met ? 'met' : 'NOT met'}`,
      );
      return { results, met };
    }
    if (!health.cpuPerCall || turn.cpuPerCall === null || turn.dbCpuPerCall === null) {
      console.log(
        `\ncontinuing converse at ${(share * 100).toFixed(1)}% of /healthz, p99 ${turn.p99} ms; CPU not measured (the database is not on this machine)`,
      );
      return { results, met: false };
    }
    const total = turn.cpuPerCall + turn.dbCpuPerCall;
    const met = total <= target.cpu * health.cpuPerCall && turn.dbCpuPerCall <= total / 2 && turn.p99 < target.p99;
    console.log(
      `\ncontinuing converse: ${µs(total)} µs of CPU a call (server ${µs(turn.cpuPerCall)}, database ${µs(turn.dbCpuPerCall)}, ` +
        `${Math.round((turn.dbCpuPerCall / total) * 100)}%), ${(total / health.cpuPerCall).toFixed(2)}× a /healthz call's ${µs(health.cpuPerCall)}; ` +
        `p99 ${turn.p99} ms (target ≤ ${target.cpu}×, database ≤ half, p99 < ${target.p99} ms): ${met ? 'met' : 'NOT met'}`,
    );
    return { results, met };
  } finally {
    await server.stop();
  }
}

/** Continuing converse through two server processes on one database, against one process's figure. */
async function benchReplicas(databaseUrl: string, single: number): Promise<boolean> {
  console.log('\n## PostgreSQL, two server processes on one database');
  const servers = [await startServer(databaseUrl, ENV), await startServer(databaseUrl, ENV)];
  try {
    const half = Math.floor(CONNECTIONS / 2);
    const prepared = await Promise.all(servers.map((s) => prepare(s.base, half)));
    await Promise.all(prepared.map((p) => autocannon({ ...continuing(p.url, p.ids, half), duration: 2 })));
    process.stdout.write(`  converse, continuing: ${SECONDS}s at ${half} connections on each… `);
    const runs = await Promise.all(prepared.map((p) => autocannon({ ...continuing(p.url, p.ids, half), duration: SECONDS })));
    const rps = runs.reduce((n, r) => n + r.requests.average, 0);
    const failed = runs.reduce((n, r) => n + r.errors + r.timeouts + r.non2xx, 0);
    console.log(`${Math.round(rps)} req/s`);
    const p99 = Math.max(...runs.map((r) => r.latency.p99));
    const ratio = rps / single;
    const met = ratio >= 1.5 && failed === 0;
    console.log(
      `\ntwo processes: ${Math.round(rps)} req/s (p99 ${p99} ms, ${failed} failed), ${ratio.toFixed(2)}× one process (target ≥ 1.5×): ${met ? 'met' : 'NOT met'}`,
    );
    return met;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * The medians of several runs of each build on one database: /healthz's CPU a call, and for the
 * converse workloads the server's and the database's CPU a call, their sum as a multiple of
 * /healthz's, and p99.
 */
function medians(database: string, runs: Map<string, Figures[][]>): void {
  console.log(`\n## ${database}: medians of ${[...runs.values()][0].length} runs a build`);
  console.log('\n| build | workload | server CPU µs/call | database CPU µs/call | CPU × /healthz | p99 ms | req/s |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const [build, results] of runs) {
    const health = median(results.map((r) => r[0].cpuPerCall ?? 0));
    console.log(
      `| ${build} | GET /healthz | ${µs(health)} | — | 1.00× | ${median(results.map((r) => r[0].p99))} | ${Math.round(median(results.map((r) => r[0].rps)))} |`,
    );
    for (const i of [1, 2]) {
      const server = median(results.map((r) => r[i].cpuPerCall ?? 0));
      const dbs = results.map((r) => r[i].dbCpuPerCall);
      const db = dbs.every((d) => d !== null) ? median(dbs as number[]) : null;
      const times = median(results.map((r) => ((r[i].cpuPerCall ?? 0) + (r[i].dbCpuPerCall ?? 0)) / (r[0].cpuPerCall ?? 1)));
      console.log(
        `| ${build} | ${results[0][i].name} | ${µs(server)} | ${µs(db)} | ${times.toFixed(2)}× | ${median(results.map((r) => r[i].p99))} | ${Math.round(median(results.map((r) => r[i].rps)))} |`,
      );
    }
  }
}

/**
 * This build and BENCH_BASELINE's side by side, both servers up on fresh databases, their
 * `/healthz` and continuing workloads taking turns in bursts of BENCH_BURST seconds (2) for
 * BENCH_ROUNDS rounds (10): the machine's speed, which drifts over minutes here, then weighs on
 * both alike, where whole runs one after the other can differ by a fifth. Prints each build's CPU
 * a call summed over its bursts, and the ratio of the two.
 */
async function interleaved(fresh: () => Promise<{ url: string; drop: () => Promise<void> }>): Promise<void> {
  const BURST = Number(process.env.BENCH_BURST ?? 2);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
  const builds: [string, string | undefined][] = [
    ['this build', undefined],
    [`baseline (${BASELINE})`, BASELINE],
  ];
  const sides: {
    name: string;
    pid: number;
    base: string;
    opts: autocannon.Options;
    stop: () => Promise<void>;
    drop: () => Promise<void>;
    health: { cpu: number; n: number };
    turn: { cpu: number; db: number; n: number; errors: number };
  }[] = [];
  const db = PG_URL ? await postgresCpu(PG_URL) : () => null;
  try {
    for (const [name, checkout] of builds) {
      const d = await fresh();
      const server = await startServer(d.url, ENV, checkout).catch(async (err: unknown) => {
        await d.drop();
        throw err;
      });
      sides.push({
        name,
        pid: server.proc.pid!,
        base: server.base,
        opts: { url: server.base },
        stop: () => server.stop(),
        drop: d.drop,
        health: { cpu: 0, n: 0 },
        turn: { cpu: 0, db: 0, n: 0, errors: 0 },
      });
      const { url, ids } = await prepare(server.base, CONNECTIONS);
      sides.at(-1)!.opts = continuing(url, ids);
      await autocannon({ ...continuing(url, ids), duration: 2 });
    }
    console.log(`
## PostgreSQL, this build and the baseline interleaved: ${ROUNDS} rounds of ${BURST} s bursts, ${CONNECTIONS} connections`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 ? [...sides].reverse() : sides) {
        let before = cpuMicros(side.pid)!;
        const h = await autocannon({ url: `${side.base}/healthz`, connections: CONNECTIONS, duration: BURST });
        side.health.cpu += cpuMicros(side.pid)! - before;
        side.health.n += h.requests.total;
        before = cpuMicros(side.pid)!;
        const dbBefore = db();
        const t = await autocannon({ ...side.opts, duration: BURST });
        side.turn.cpu += cpuMicros(side.pid)! - before;
        const dbAfter = db();
        side.turn.db += dbBefore === null || dbAfter === null ? 0 : dbAfter - dbBefore;
        side.turn.n += t.requests.total;
        side.turn.errors += t.errors + t.timeouts + t.non2xx;
      }
      process.stdout.write(`  round ${round + 1} of ${ROUNDS}\r`);
    }
    console.log('\n\n| build | /healthz CPU µs/call | continuing: server CPU µs/call | database CPU µs/call | together | × /healthz | calls | errors |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    const totals = sides.map((side) => {
      const health = side.health.cpu / side.health.n;
      const server = side.turn.cpu / side.turn.n;
      const dbc = side.turn.db / side.turn.n;
      console.log(
        `| ${side.name} | ${µs(health)} | ${µs(server)} | ${µs(dbc)} | ${µs(server + dbc)} | ${((server + dbc) / health).toFixed(2)}× | ${side.turn.n} | ${side.turn.errors} |`,
      );
      return { server, dbc };
    });
    const [mine, theirs] = totals;
    console.log(
      `\nthis build against the baseline, a continuing call: server ${(mine.server / theirs.server).toFixed(2)}×, database ${(mine.dbc / theirs.dbc).toFixed(2)}×, ` +
        `together ${((mine.server + mine.dbc) / (theirs.server + theirs.dbc)).toFixed(2)}×`,
    );
  } finally {
    for (const side of sides) {
      await side.stop();
      await side.drop();
    }
  }
}

/** BENCH_RUNS runs of this build (and of BENCH_BASELINE's, alternating) on fresh databases; the targets judged on the first run, or on the medians. */
async function onDatabase(database: string, fresh: () => Promise<{ url: string; drop: () => Promise<void> }>, target: Target, met: boolean[]): Promise<void> {
  const builds: [string, string | undefined][] = [['this build', undefined], ...(BASELINE ? [[`baseline (${BASELINE})`, BASELINE] as [string, string]] : [])];
  // BENCH_BASELINE_FIRST=1: the baseline first in each pair, to tell a build's cost from the order's.
  if (process.env.BENCH_BASELINE_FIRST === '1') builds.reverse();
  const runs = new Map<string, Figures[][]>(builds.map(([name]) => [name, []]));
  for (let run = 1; run <= RUNS; run++) {
    for (const [name, checkout] of builds) {
      const db = await fresh();
      try {
        const label = `${database}${builds.length > 1 || RUNS > 1 ? `, ${name}, run ${run} of ${RUNS}` : ''}`;
        const one = await benchOne(label, db.url, target, checkout);
        runs.get(name)!.push(one.results);
        if (!checkout && run === 1) met.push(one.met);
        if (!checkout && run === 1 && database === 'PostgreSQL' && process.env.BENCH_REPLICAS !== '0')
          met.push(await benchReplicas(db.url, one.results[2].rps));
      } finally {
        await db.drop();
      }
    }
  }
  if (RUNS > 1 || builds.length > 1) medians(database, runs);
  if (BASELINE && database === 'PostgreSQL' && process.env.BENCH_INTERLEAVED !== '0') await interleaved(fresh);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const met: boolean[] = [];
  try {
    let files = 0;
    const sqliteFile = async () => {
      const file = join(dir, `bench-${files++}.db`);
      return { url: `sqlite://${file}`, drop: async () => rmSync(file, { force: true }) };
    };
    if (ONLY === 'postgres') console.log('\nSQLite: skipped (BENCH_DATABASES=postgres)');
    else await onDatabase('SQLite (better-sqlite3)', sqliteFile, TARGETS.sqlite, met);
    if (ONLY === 'sqlite') console.log('\nPostgreSQL: skipped (BENCH_DATABASES=sqlite)');
    else if (!PG_URL) console.log('\nPostgreSQL: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL server)');
    else await onDatabase('PostgreSQL', () => freshPostgres(PG_URL, 'bench'), TARGETS.postgres, met);
    if (!met.length) console.log('\nNothing measured.');
    else console.log(`\n${met.every(Boolean) ? 'All targets met.' : 'Some targets NOT met (see above).'}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
