// `npm run soak`: conversations talking at once for a bounded time, on SQLite (one server
// process) and, when SOAK_DATABASE_URL (or TEST_DATABASE_URL) names a PostgreSQL server, on
// PostgreSQL with two server processes taking turns. Then every conversation's history is read
// back and checked against what its client sent and received: nothing lost, nothing duplicated,
// nothing out of order.
// The noisy-neighbour run: well-behaved tenants talk at a steady pace (with think time), once
// alone and once beside a noisy tenant (slow actions, heavy templates, hundreds of open event
// streams, as fast as it can); their p99 beside it must stay within 1.5x of their p99 alone.
// Prints the figures; exits 1 on any mismatch, error or a p99 over that bound.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as httpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPostgres, startServer } from './server.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 15);
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS ?? 300);
const PG = process.env.SOAK_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
/** The noisy-neighbour comparison: quiet tenants, their conversations each, think time between messages. */
const QUIET_TENANTS = 5;
const QUIET_CONVERSATIONS = 20;
const THINK_MS = 200;
const NOISY_BOUND = 1.5;
const headers = (tenant: string) => ({ 'tenant-id': tenant, 'content-type': 'application/json' });

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

/** The noisy tenant's agents: every turn calls a slow action, or burns its whole template budget. */
const slowAgent = (backend: string) => ({
  name: 'Noisy slow',
  capabilities: [
    {
      name: 'slow',
      examples: ['start talking'],
      phases: [
        { id: 'listen', say: 'Go on.', collect: { slot: 'said' } },
        { id: 'wait', call: 'slow', on_error: 'again' },
        { id: 'again', say: 'Done.', collect: { slot: 'said' }, next: 'wait' },
      ],
    },
  ],
  actions: { slow: { type: 'http', method: 'GET', url: `${backend}/slow?x={{ slots.said }}`, timeout_ms: 10_000 } },
});
const heavyAgent = {
  name: 'Noisy heavy',
  capabilities: [
    {
      name: 'heavy',
      examples: ['start talking'],
      phases: [
        { id: 'burn', say: '{% for i in (1..50000000) %}{% endfor %}' },
        { id: 'burn2', say: '{% for i in (1..50000000) %}{{ i }}{% endfor %}' },
        { id: 'again', collect: { slot: 'said' }, next: 'burn' },
      ],
    },
  ],
};

async function post(url: string, body: unknown, tenant: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { method: 'POST', headers: headers(tenant), body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function putAgent(base: string, tenant: string, slug: string, def: unknown): Promise<void> {
  const put = await fetch(`${base}/api/v1/agents/${slug}`, { method: 'PUT', headers: headers(tenant), body: JSON.stringify(def) });
  if (!put.ok) throw new Error(`PUT agent ${tenant}/${slug}: ${put.status} ${await put.text()}`);
}

const pct = (a: number[], q: number) => (a.length ? [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))] : 0);

interface SoakResult {
  ok: boolean;
  latencies: number[];
}

/** `conversations` conversations over `tenants`, each message after `thinkMs`; histories checked after. */
async function soak(label: string, bases: string[], opts: { tenants?: string[]; conversations?: number; thinkMs?: number } = {}): Promise<SoakResult> {
  const tenants = opts.tenants ?? ['soak'];
  const count = opts.conversations ?? CONVERSATIONS;
  const slug = `soak-${randomBytes(3).toString('hex')}`;
  for (const t of tenants) await putAgent(bases[0], t, slug, agent);
  const deadline = Date.now() + SECONDS * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const sessions = await Promise.all(
    Array.from({ length: count }, async (_, c) => {
      const tenant = tenants[c % tenants.length];
      const sent: string[] = [];
      const heard: string[] = [];
      let id: string | null = null;
      let k = 0;
      while (Date.now() < deadline) {
        const message = id ? `c${c}-m${k++}` : 'start talking';
        const started = performance.now();
        try {
          // Turns alternate between the server processes.
          const r = await post(`${bases[k % bases.length]}/api/v1/agents/${slug}/converse`, id ? { message, conversation_id: id } : { message }, tenant);
          latencies.push(performance.now() - started);
          if (opts.thinkMs) await new Promise((w) => setTimeout(w, opts.thinkMs));
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
      return { id, sent, heard, tenant };
    }),
  );
  const elapsed = SECONDS;
  let mismatched = 0;
  let turns = 0;
  for (const s of sessions) {
    if (!s.id) continue;
    const r = await fetch(`${bases[bases.length - 1]}/api/v1/agents/${slug}/conversations/${s.id}/history`, { headers: headers(s.tenant) });
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
    `${label}: ${count} conversations of ${tenants.length} tenant${tenants.length > 1 ? 's' : ''} for ${elapsed} s over ${bases.length} server process${bases.length > 1 ? 'es' : ''}: ` +
      `${total} messages (${Math.round(total / elapsed)}/s), p50 ${pct(latencies, 0.5).toFixed(1)} ms, p99 ${pct(latencies, 0.99).toFixed(1)} ms, ` +
      `${errors} errors; ${turns} turns read back, ${mismatched} conversation${mismatched === 1 ? '' : 's'} not as sent and received`,
  );
  return { ok: mismatched === 0 && errors === 0, latencies };
}

/**
 * The noisy tenant, until `stop` resolves: conversations waiting on slow actions, conversations
 * burning their template budget as fast as they can, and hundreds of open event streams.
 */
async function noisyTenant(base: string, backend: string, stop: Promise<void>): Promise<{ requests: number; refused: number; streams: number }> {
  const tenant = 'noisy';
  await putAgent(base, tenant, 'slow', slowAgent(backend));
  await putAgent(base, tenant, 'heavy', heavyAgent);
  let requests = 0;
  let refused = 0;
  let stopped = false;
  void stop.then(() => (stopped = true));
  const talk = async (slug: string) => {
    let id: string | null = null;
    while (!stopped) {
      try {
        const r = await post(`${base}/api/v1/agents/${slug}/converse`, id ? { message: 'more', conversation_id: id } : { message: 'start talking' }, tenant);
        requests++;
        if (r.status === 200) id = r.body.conversation_id;
        else {
          refused++;
          if (r.status === 429) await new Promise((w) => setTimeout(w, 50));
        }
      } catch {
        refused++;
      }
    }
  };
  // Event streams on the noisy tenant's own conversations, up to the per-tenant cap.
  const controllers: AbortController[] = [];
  let streams = 0;
  for (let c = 0; c < 50; c++) {
    const r = await post(`${base}/api/v1/agents/heavy/converse`, { message: 'start talking' }, tenant);
    if (r.status !== 200) continue;
    for (let k = 0; k < 10; k++) {
      const ctl = new AbortController();
      controllers.push(ctl);
      const res = await fetch(`${base}/api/v1/agents/heavy/conversations/${r.body.conversation_id}/events`, {
        headers: headers(tenant),
        signal: ctl.signal,
      }).catch(() => null);
      if (res?.status === 200) {
        streams++;
        void res.body?.pipeTo(new WritableStream()).catch(() => undefined);
      } else void res?.body?.cancel();
    }
  }
  await Promise.all([...Array.from({ length: 40 }, () => talk('slow')), ...Array.from({ length: 10 }, () => talk('heavy'))]);
  for (const c of controllers) c.abort();
  return { requests, refused, streams };
}

/** Quiet tenants alone, then beside the noisy tenant, on one SQLite server; their p99 must stay within the bound. */
async function noisyNeighbour(dir: string, procs: ChildProcess[]): Promise<boolean> {
  const slow = httpServer((_q, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 2000));
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const backend = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
  try {
    // A production-like server: per-tenant rate limits on, the slow backend granted to the noisy tenant only.
    const server = await startServer(`sqlite://${join(dir, 'noisy.db')}`, {
      DB_POOL_MAX: '20',
      RATE_LIMIT_RPS: '100',
      RATE_LIMIT_BURST: '200',
      ACTION_ALLOWED_HOSTS: `noisy=${backend.replace('http://', '')}`,
    });
    procs.push(server.proc);
    const quietTenants = Array.from({ length: QUIET_TENANTS }, (_, i) => `quiet-${i}`);
    const quiet = { tenants: quietTenants, conversations: QUIET_TENANTS * QUIET_CONVERSATIONS, thinkMs: THINK_MS };
    const alone = await soak('Quiet tenants alone', [server.base], quiet);
    let release!: () => void;
    const stop = new Promise<void>((r) => (release = r));
    const noise = noisyTenant(server.base, backend, stop);
    await new Promise((r) => setTimeout(r, 1500)); // let the noise build up first
    const beside = await soak('Quiet tenants beside a noisy one', [server.base], quiet);
    release();
    const n = await noise;
    const p99Alone = pct(alone.latencies, 0.99);
    const p99Beside = pct(beside.latencies, 0.99);
    const ratio = p99Beside / Math.max(p99Alone, 0.001);
    console.log(
      `noisy tenant: ${n.requests} requests (${n.refused} refused), ${n.streams} open event streams, slow actions and heavy templates; ` +
        `quiet tenants' p99 ${p99Alone.toFixed(1)} ms alone, ${p99Beside.toFixed(1)} ms beside it: ${ratio.toFixed(2)}x (bound ${NOISY_BOUND}x)`,
    );
    return alone.ok && beside.ok && ratio <= NOISY_BOUND;
  } finally {
    slow.closeAllConnections();
    await new Promise((r) => slow.close(r));
  }
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await exited;
}

async function main() {
  let ok = true;
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-soak-'));
  const procs: ChildProcess[] = [];
  try {
    console.log(`soak: ${CONVERSATIONS} conversations, ${SECONDS} s each run`);
    const sqlite = await startServer(`sqlite://${join(dir, 'soak.db')}`, { DB_POOL_MAX: '20' });
    procs.push(sqlite.proc);
    ok = (await soak('SQLite', [sqlite.base])).ok && ok;
    await stopProcess(sqlite.proc);
    ok = (await noisyNeighbour(dir, procs)) && ok;
    if (PG) {
      const pg = await freshPostgres(PG, 'soak');
      try {
        const first = await startServer(pg.url, { DB_POOL_MAX: '20' });
        const second = await startServer(pg.url, { DB_POOL_MAX: '20' });
        procs.push(first.proc, second.proc);
        ok = (await soak('PostgreSQL', [first.base, second.base])).ok && ok;
      } finally {
        for (const p of procs) await stopProcess(p);
        await pg.drop();
      }
    } else {
      console.log('PostgreSQL: skipped (set SOAK_DATABASE_URL or TEST_DATABASE_URL)');
    }
  } finally {
    for (const p of procs) await stopProcess(p);
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(ok ? 'soak: every conversation is exactly as its client sent and received it' : 'soak: FAILED');
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
