// What the benchmarks share: a server in its own process (as in production) on a given
// database, and a fresh PostgreSQL database for one run.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';

export interface BenchServer {
  base: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

let built: Promise<void> | undefined;

/**
 * Builds dist/ from the sources, once per benchmark: the benchmarks measure the server as it ships
 * (`npm run serve`, the image), not the sources compiled on the fly by tsx, which costs memory in
 * the server and in each training worker that production does not pay.
 */
function build(): Promise<void> {
  built ??= new Promise<void>((resolve, reject) => {
    process.stderr.write('building the server (npm run build) … ');
    const started = performance.now();
    const p = spawn('npm', ['run', '-s', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
    p.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`npm run build exited with ${code}`));
      process.stderr.write(`done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
      resolve();
    });
  });
  return built;
}

/**
 * `npm run serve`'s server (built first) on `databaseUrl`, on a free loopback port, once it answers
 * /readyz. `checkout`: another checkout's build (its dist/, built there) to run instead, such as the
 * previous commit's, to compare two builds in one sitting.
 */
export async function startServer(databaseUrl: string, env: Record<string, string> = {}, checkout?: string): Promise<BenchServer> {
  if (!checkout) await build();
  const port = await freePort();
  // BENCH_SERVER_NODE_ARGS: more flags for the server's node, such as `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where a run's time goes.
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const proc = spawn(process.execPath, ['--expose-gc', ...extra, '--import', './dist/server/src/tracing-preload.js', 'dist/server/src/main.js'], {
    cwd: checkout,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, LOG_LEVEL: 'error', AGENTS_DIR: '', RATE_LIMIT_RPS: '0', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  };
  // Start-up includes migrations, which on a large database take a while.
  for (let i = 0; i < 600; i++) {
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { base, proc, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error('server did not start');
}

/** A fresh database on the PostgreSQL server `url` names, dropped by the returned function. */
export async function freshPostgres(url: string, prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `switchboard_${prefix}_${process.pid}_${Date.now()}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

/**
 * Runs a benchmark of the given name on SQLite (a temporary file) and on a fresh database of the
 * PostgreSQL server named by BENCH_DATABASE_URL or TEST_DATABASE_URL; `only` ('sqlite' or
 * 'postgres', from the variable `onlyVariable`) runs one. Prints whether every target was met.
 */
export async function onEachDatabase(
  name: string,
  only: { value: string | undefined; variable: string },
  bench: (label: string, url: string) => Promise<boolean>,
): Promise<void> {
  const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const dir = mkdtempSync(join(tmpdir(), `switchboard-${name}-`));
  const results: boolean[] = [];
  try {
    if (only.value !== 'postgres') results.push(await bench('SQLite', `sqlite://${join(dir, `${name}.db`)}`));
    if (only.value === 'sqlite') console.log(`\nPostgreSQL: skipped (${only.variable}=sqlite)`);
    else if (!pgUrl) console.log('\nPostgreSQL: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL server)');
    else {
      const pg = await freshPostgres(pgUrl, name);
      try {
        results.push(await bench('PostgreSQL', pg.url));
      } finally {
        await pg.drop();
      }
    }
    console.log(`\n${results.every(Boolean) ? 'All targets met.' : 'Some targets NOT met (see above).'}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The agent the soak and replica runs talk to: each message after the first comes back as "Heard: …", so every answer can be checked. */
export const echoAgent = {
  name: 'Soak echo',
  capabilities: [
    {
      name: 'echo',
      examples: ['start talking'],
      phases: [
        { id: 'listen', say: 'Go on.', collect: { slot: 'said' } },
        { id: 'repeat', say: 'Heard: {{ slots.said }}' },
        { id: 'again', collect: { slot: 'said' }, next: 'repeat' },
      ],
    },
  ],
};

/** Resident memory of a process, in MiB (Linux). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** The fields of /proc/<pid>/stat after the command name (Linux); null when the process is gone or /proc is not there. */
function stat(pid: number | string): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  } catch {
    return null;
  }
}

/**
 * CPU time the process `pid` has used, all its threads, in microseconds (null where /proc cannot
 * tell); with `reaped`, also that of its children that have exited and been waited for.
 */
export function cpuMicros(pid: number, reaped = false): number | null {
  const f = stat(pid);
  // utime, stime, cutime and cstime are the 12th to 15th fields after the name, in clock ticks (100 a second).
  return f ? (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) * 10_000 : null;
}

/**
 * The CPU time of the PostgreSQL server that `url` names, all its processes (the postmaster, its
 * backends, the WAL writer, the checkpointer, autovacuum, and those that exited meanwhile, which
 * the postmaster has reaped), in µs; null when it is not on this machine. Other databases' work on
 * that server counts too: run the benchmark on a quiet one.
 */
export async function postgresCpu(url: string): Promise<() => number | null> {
  const db = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  let postmaster: number | null = null;
  try {
    const { rows } = (await db.raw('select pg_backend_pid() as pid')) as { rows: { pid: number }[] };
    const f = stat(rows[0].pid);
    postmaster = f ? Number(f[1]) : null;
  } catch {
    postmaster = null;
  } finally {
    await db.destroy();
  }
  return () => {
    if (postmaster === null) return null;
    let total = cpuMicros(postmaster, true);
    if (total === null) return null;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      // A process that exited between the listing and the read is in the postmaster's reaped time.
      const f = stat(entry);
      if (f && Number(f[1]) === postmaster) total += cpuMicros(Number(entry)) ?? 0;
    }
    return total;
  };
}

/** The p-th percentile (0–100) of xs; 0 for none. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}
