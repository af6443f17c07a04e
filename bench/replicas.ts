// `npm run replicas`: three replicas (the built server, node dist/…) on one PostgreSQL database
// behind Debian's HAProxy, under load from clients that retry with idempotency keys, while one
// replica is killed -9 and another is restarted with SIGTERM. Then every conversation's history
// is read back: each message the client sent once, each answer as the client finally received
// it, nothing lost or doubled. Then a traffic split: each user meets the same version whichever
// replica answers. All of it twice: the replicas straight on PostgreSQL, then through Debian's
// PgBouncer in transaction mode (when installed). Prints the figures; exits 1 on any mismatch or
// failed request. Needs `haproxy` on the PATH and SOAK_DATABASE_URL or TEST_DATABASE_URL.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { echoAgent as agent, freshPostgres } from './server.js';

const PG = process.env.SOAK_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const SECONDS = Number(process.env.REPLICAS_SECONDS ?? 20);
const CLIENTS = Number(process.env.REPLICAS_CLIENTS ?? 60);
const PORTS = [3311, 3312, 3313];
const LB_PORT = 3310;
const headers = { 'tenant-id': 'acme', 'content-type': 'application/json' };

/** How the replicas reach the database: straight, or through PgBouncer in transaction mode with the settings that needs. */
interface Route {
  name: string;
  env: Record<string, string>;
}

function startReplica(route: Route, port: number): ChildProcess {
  return spawn(process.execPath, ['--expose-gc', 'dist/server/src/main.js'], {
    env: {
      ...process.env,
      ...route.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      AGENTS_DIR: '',
      RATE_LIMIT_RPS: '0',
      SHUTDOWN_DELAY_MS: '2500',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function ready(port: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`replica on ${port} did not become ready`);
}

/** One message, retried with the same idempotency key until some replica answers 200 (at most 30 s). */
async function send(body: unknown, key: string): Promise<{ body: any; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await fetch(`http://127.0.0.1:${LB_PORT}/api/v1/agents/echo/converse`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': key },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      if (r.status === 200) return { body: await r.json(), attempts: attempt };
      await r.body?.cancel();
    } catch {
      // a reset connection: the replica died; try again
    }
    if (attempt >= 60) throw new Error(`no answer for ${key} after ${attempt} attempts`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * A traffic split of 50% to a second version, then two new conversations of each of 40 users
 * through HAProxy (round robin: a user's two land on different replicas): each user's must run on
 * the same version. Returns the users whose did not.
 */
async function splitHeld(): Promise<number> {
  const base = `http://127.0.0.1:${LB_PORT}/api/v1/agents/echo`;
  const draft = await fetch(`${base}?activate=false`, { method: 'PUT', headers, body: JSON.stringify({ ...agent, description: 'candidate' }) });
  const { stored_version: candidate } = (await draft.json()) as { stored_version: number };
  const split = await fetch(`${base}/split`, { method: 'PUT', headers, body: JSON.stringify({ version: candidate, percent: 50 }) });
  if (!split.ok) throw new Error(`PUT split: ${split.status}`);
  const versionOf = async (user: string) => {
    const r = await send({ message: 'start talking', context: { version: 'v1', context: { identity: { user_id: user } } } }, randomUUID());
    const c = await fetch(`${base}/conversations/${r.body.conversation_id as string}`, { headers });
    return ((await c.json()) as { agent_version: number }).agent_version;
  };
  let onCandidate = 0;
  let differ = 0;
  for (let u = 0; u < 40; u++) {
    const [a, b] = [await versionOf(`user-${u}`), await versionOf(`user-${u}`)];
    if (a !== b) differ++;
    if (a === candidate) onCandidate++;
  }
  console.log(`replicas: split of 50% to version ${candidate}: ${onCandidate} of 40 users on it, ${differ} user(s) sent to two versions by different replicas`);
  return differ;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });

/** Debian's PgBouncer, or null when it is not installed. */
const pgbouncerPath = () => ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p)) ?? null;

/**
 * PgBouncer in transaction mode in front of the server `url` names, on a free port, until stopped.
 * It refuses to run as root: as root it runs as the postgres user.
 */
async function startPgbouncer(binary: string, url: string, dir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const server = new URL(url);
  const port = await freePort();
  const user = decodeURIComponent(server.username) || 'postgres';
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 400',
      'default_pool_size = 20',
      // pg sends statement_timeout at connect: PgBouncer would refuse the connection over it.
      'ignore_startup_parameters = extra_float_digits, statement_timeout',
      'log_connections = 0',
      'log_disconnections = 0',
      'log_stats = 0',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const proc = spawn(asRoot ? 'runuser' : binary, [...(asRoot ? ['-u', 'postgres', '--', binary] : []), join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  const through = new URL(url);
  through.port = String(port);
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const c = connect(port, '127.0.0.1', () => (c.end(), resolve(true))).on('error', () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null) throw new Error(`pgbouncer exited with ${proc.exitCode} (run it with ${join(dir, 'pgbouncer.ini')} to see why)`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: through.toString(),
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** The run on one route: three replicas behind HAProxy, load, chaos, then every conversation checked and the split. */
async function scenario(route: Route, dir: string): Promise<void> {
  const replicas = new Map<number, ChildProcess>();
  let lb: ChildProcess | null = null;
  try {
    // All three start together on the empty database: one migrates, the others wait for it.
    for (const p of PORTS) replicas.set(p, startReplica(route, p));
    await Promise.all(PORTS.map(ready));
    const cfg = join(dir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      [
        'defaults',
        '  mode http',
        '  timeout connect 2s',
        '  timeout client 30s',
        '  timeout server 30s',
        '  retries 2',
        '  option redispatch',
        'frontend fe',
        `  bind 127.0.0.1:${LB_PORT}`,
        '  default_backend replicas',
        'backend replicas',
        '  balance roundrobin',
        '  option httpchk GET /readyz',
        '  default-server inter 500ms fall 2 rise 2',
        ...PORTS.map((p, i) => `  server r${i} 127.0.0.1:${p} check`),
        '',
      ].join('\n'),
    );
    lb = spawn('haproxy', ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'inherit'] });
    await new Promise((r) => setTimeout(r, 1500));
    const put = await fetch(`http://127.0.0.1:${LB_PORT}/api/v1/agents/echo`, { method: 'PUT', headers, body: JSON.stringify(agent) });
    if (!put.ok) throw new Error(`PUT: ${put.status}`);

    const deadline = Date.now() + SECONDS * 1000;
    let retried = 0;
    const chaos = (async () => {
      await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 3));
      replicas.get(PORTS[0])!.kill('SIGKILL');
      console.log(`replicas: killed -9 the replica on ${PORTS[0]}`);
      await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 3));
      const old = replicas.get(PORTS[1])!;
      old.kill('SIGTERM');
      await new Promise((r) => old.once('exit', r));
      replicas.set(PORTS[1], startReplica(route, PORTS[1]));
      await ready(PORTS[1]);
      console.log(`replicas: restarted the replica on ${PORTS[1]} (SIGTERM, drained, started again)`);
    })();
    const sessions = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const sent: string[] = [];
        const heard: string[] = [];
        let id: string | null = null;
        for (let k = 0; Date.now() < deadline; k++) {
          const message = id ? `c${c}-m${k}` : 'start talking';
          const r = await send(id ? { message, conversation_id: id } : { message }, randomUUID());
          if (r.attempts > 1) retried++;
          id = r.body.conversation_id;
          sent.push(message);
          heard.push(r.body.response.message);
        }
        return { id, sent, heard };
      }),
    );
    await chaos;
    let mismatched = 0;
    let messages = 0;
    for (const s of sessions) {
      messages += s.sent.length;
      const r = await fetch(`http://127.0.0.1:${LB_PORT}/api/v1/agents/echo/conversations/${s.id}/history`, { headers });
      const turns = ((await r.json()) as { turns: { role: string; message: string }[] }).turns;
      const expected = s.sent.flatMap((m, i) => [
        { role: 'user', message: m },
        { role: 'agent', message: s.heard[i] },
      ]);
      const exact = turns.length === expected.length && turns.every((t, i) => t.role === expected[i].role && t.message === expected[i].message);
      if (!exact) mismatched++;
    }
    console.log(
      `replicas: ${CLIENTS} clients for ${SECONDS} s through HAProxy over 3 replicas, ${route.name}: ${messages} messages, ${retried} answered after a retry, ` +
        `${mismatched} conversation${mismatched === 1 ? '' : 's'} not exactly as sent and received`,
    );
    if (mismatched > 0) process.exitCode = 1;
    if ((await splitHeld()) > 0) process.exitCode = 1;
  } finally {
    lb?.kill('SIGTERM');
    // A process killed by a signal has a signalCode and no exitCode.
    const running = [...replicas.values()].filter((p) => p.exitCode === null && p.signalCode === null);
    for (const p of running) p.kill('SIGTERM');
    await Promise.all(running.map((p) => new Promise((r) => p.once('exit', r))));
  }
}

async function main(): Promise<void> {
  if (!PG) {
    console.log('replicas: skipped (set SOAK_DATABASE_URL or TEST_DATABASE_URL)');
    return;
  }
  const direct = await freshPostgres(PG, 'replicas');
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-replicas-'));
  try {
    await scenario({ name: 'straight to PostgreSQL', env: { DATABASE_URL: direct.url } }, dir);
  } finally {
    await direct.drop();
  }
  const binary = pgbouncerPath();
  if (!binary) {
    console.log("replicas behind PgBouncer: skipped (Debian's pgbouncer is not installed)");
    return;
  }
  const db = await freshPostgres(PG, 'replicas');
  const bouncer = await startPgbouncer(binary, db.url, dir);
  try {
    // Transaction mode: no session state between transactions, so the converse path's statements
    // are not kept prepared, and the LISTEN session goes to the server itself.
    await scenario(
      {
        name: 'through PgBouncer in transaction mode',
        env: { DATABASE_URL: bouncer.url, DATABASE_LISTEN_URL: db.url, DB_PREPARED_STATEMENTS: 'false' },
      },
      dir,
    );
  } finally {
    await bouncer.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
