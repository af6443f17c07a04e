// `npm run soak`: a few hundred conversations talking at once for a bounded time, on SQLite (one
// server process) and, when SOAK_DATABASE_URL (or TEST_DATABASE_URL) names a PostgreSQL server, on
// PostgreSQL with two server processes taking turns. Then every conversation's history is read
// back and checked against what its client sent and received: nothing lost, nothing duplicated,
// nothing out of order. Prints the figures; exits 1 on any mismatch.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 15);
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS ?? 300);
const PG = process.env.SOAK_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const H = { 'tenant-id': 'soak', 'content-type': 'application/json' };

const agent = {
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

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

async function startServer(databaseUrl: string): Promise<{ base: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'error', RATE_LIMIT_RPS: '0', DB_POOL_MAX: '20' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${base}/readyz`).then((r) => r.ok, () => false)) return { base, proc };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { method: 'POST', headers: H, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

const pct = (a: number[], q: number) => (a.length ? [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))] : 0);

async function soak(label: string, bases: string[]): Promise<boolean> {
  const slug = `soak-${randomBytes(3).toString('hex')}`;
  const put = await fetch(`${bases[0]}/api/v1/agents/${slug}`, { method: 'PUT', headers: H, body: JSON.stringify(agent) });
  if (!put.ok) throw new Error(`PUT agent: ${put.status}`);
  const deadline = Date.now() + SECONDS * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const sessions = await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, c) => {
      const sent: string[] = [];
      const heard: string[] = [];
      let id: string | null = null;
      let k = 0;
      while (Date.now() < deadline) {
        const message = id ? `c${c}-m${k++}` : 'start talking';
        const started = performance.now();
        try {
          // Turns alternate between the server processes.
          const r = await post(`${bases[k % bases.length]}/api/v1/agents/${slug}/converse`, id ? { message, conversation_id: id } : { message });
          latencies.push(performance.now() - started);
          if (r.status !== 200) {
            errors++;
            continue;
          }
          id = r.body.conversation_id;
          sent.push(message);
          heard.push(r.body.response.message);
        } catch {
          errors++;
        }
      }
      return { id, sent, heard };
    }),
  );
  const elapsed = SECONDS;
  let mismatched = 0;
  let turns = 0;
  for (const s of sessions) {
    if (!s.id) continue;
    const r = await fetch(`${bases[bases.length - 1]}/api/v1/agents/${slug}/conversations/${s.id}/history`, { headers: H });
    const history = ((await r.json()) as { turns: { role: string; message: string }[] }).turns;
    turns += history.length;
    const expected = s.sent.flatMap((m, i) => [
      { role: 'user', message: m },
      { role: 'agent', message: s.heard[i] },
    ]);
    const ok =
      history.length === expected.length &&
      history.every((t, i) => t.role === expected[i].role && t.message === expected[i].message) &&
      s.heard.slice(1).every((h, i) => h === `Heard: ${s.sent[i + 1]}`);
    if (!ok) mismatched++;
  }
  const total = latencies.length;
  console.log(
    `${label}: ${CONVERSATIONS} conversations for ${elapsed} s over ${bases.length} server process${bases.length > 1 ? 'es' : ''}: ` +
      `${total} messages (${Math.round(total / elapsed)}/s), p50 ${pct(latencies, 0.5).toFixed(1)} ms, p99 ${pct(latencies, 0.99).toFixed(1)} ms, ` +
      `${errors} errors; ${turns} turns read back, ${mismatched} conversation${mismatched === 1 ? '' : 's'} not as sent and received`,
  );
  return mismatched === 0 && errors === 0;
}

async function main() {
  let ok = true;
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-soak-'));
  const procs: ChildProcess[] = [];
  try {
    console.log(`soak: ${CONVERSATIONS} conversations, ${SECONDS} s each run`);
    const sqlite = await startServer(`sqlite://${join(dir, 'soak.db')}`);
    procs.push(sqlite.proc);
    ok = (await soak('SQLite', [sqlite.base])) && ok;
    if (PG) {
      const admin = knexFactory({ client: 'pg', connection: PG, pool: { min: 0, max: 1 } });
      const name = `sb_soak_${randomBytes(4).toString('hex')}`;
      await admin.raw(`create database ${name}`);
      const u = new URL(PG);
      u.pathname = `/${name}`;
      try {
        const first = await startServer(u.toString());
        const second = await startServer(u.toString());
        procs.push(first.proc, second.proc);
        ok = (await soak('PostgreSQL', [first.base, second.base])) && ok;
      } finally {
        for (const p of procs.splice(1)) {
          p.kill('SIGTERM');
          await new Promise((r) => p.once('exit', r));
        }
        await admin.raw(`drop database if exists ${name} with (force)`);
        await admin.destroy();
      }
    } else {
      console.log('PostgreSQL: skipped (set SOAK_DATABASE_URL or TEST_DATABASE_URL)');
    }
  } finally {
    for (const p of procs) {
      p.kill('SIGTERM');
      await new Promise((r) => p.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(ok ? 'soak: every conversation is exactly as its client sent and received it' : 'soak: FAILED');
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
