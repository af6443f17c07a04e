// What the benchmarks share: a server in its own process (as in production) on a given
// database, and a fresh PostgreSQL database for one run.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
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

/** `npm run serve`'s server on `databaseUrl`, on a free loopback port, once it answers /readyz. */
export async function startServer(databaseUrl: string, env: Record<string, string> = {}): Promise<BenchServer> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
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
