// Start-up as an operator meets it: failures in one line that says what to do, a database created
// when the role may, and `npm run serve` stopping cleanly when npm itself is signalled.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import knexFactory from 'knex';
import { ensureDatabase } from '../server/src/store/db.js';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL } from './helpers/databases.js';
import { freePort } from './helpers/servers.js';
import { waitUntil } from './helpers/wait.js';
import { startNameServer } from './helpers/dns.js';
import { HostChecker } from '../server/src/actions/ssrf.js';

const run = promisify(execFile);
/** Whether `url` answers 2xx; a refused connection is no answer. */
const up = (url: string) =>
  fetch(url).then(
    (r) => r.ok,
    () => false,
  );
/** Whether anything answers at `url` at all. */
const reachable = (url: string) =>
  fetch(url).then(
    () => true,
    () => false,
  );
const dir = mkdtempSync(join(tmpdir(), 'switchboard-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const listen = () =>
  new Promise<Server>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => resolve(s));
  });
const portOf = (s: Server) => (s.address() as { port: number }).port;

/** Runs the server (or `npm start`) and returns how it failed. */
async function fails(env: Record<string, string>, entry = 'server/src/main.ts'): Promise<{ code: number; stderr: string }> {
  const err = await run(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: `sqlite://${join(dir, `${randomBytes(4).toString('hex')}.db`)}`, ...env },
    timeout: 30_000,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  return { code: err.code, stderr: err.stderr };
}

const oneLine = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => !/^npm warn|ExperimentalWarning|--trace-warnings/.test(l));

/** `npm start` on `databaseUrl` with the example backend on `backendPort`, once it answers /readyz; what it printed, and how to stop it. */
async function startDemo(databaseUrl: string, backendPort: number) {
  const port = await freePort();
  const shopPort = await freePort();
  const logged: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
    env: {
      ...process.env,
      LOG_FORMAT: 'json',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      EXAMPLE_BACKEND_PORT: String(backendPort),
      EXAMPLE_SHOP_PORT: String(shopPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (b: Buffer) => logged.push(b.toString()));
  child.stderr.resume();
  const base = `http://127.0.0.1:${port}`;
  const shop = `http://127.0.0.1:${shopPort}`;
  const stop = async () => {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  };
  try {
    await waitUntil(
      'the demo to answer /readyz',
      async () => {
        if (child.exitCode !== null) throw new Error(`the demo exited with ${child.exitCode}`);
        return up(`${base}/readyz`);
      },
      60_000,
      100,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { base, shop, logged, stop };
}

/** The README's conversation on a running demo: the last reply. */
async function readmeConversation(base: string): Promise<string> {
  const say = async (body: object) =>
    (await (
      await fetch(`${base}/api/v1/agents/acme-support/converse`, {
        method: 'POST',
        headers: { 'tenant-id': 'demo', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json()) as { conversation_id: string; response: { message: string } };
  const a = await say({ message: 'where is my order?' });
  return (await say({ message: '100001', conversation_id: a.conversation_id })).response.message;
}

describe('start-up failures', () => {
  it('a port in use: one line, what to do, exit 1', async () => {
    const busy = await listen();
    try {
      const r = await fails({ PORT: String(portOf(busy)) });
      expect(r.code).toBe(1);
      expect(oneLine(r.stderr)).toEqual([
        `Switchboard cannot listen on 127.0.0.1:${portOf(busy)}: the port is in use. Stop what listens there, or set PORT to another port.`,
      ]);
    } finally {
      busy.close();
    }
  });

  it("the example backend's port in use under npm start: one line naming EXAMPLE_BACKEND_PORT", async () => {
    const busy = await listen();
    try {
      const r = await fails({ PORT: '0', EXAMPLE_BACKEND_PORT: String(portOf(busy)), EXAMPLE_SHOP_PORT: '0' }, 'scripts/demo.ts');
      expect(r.code).toBe(1);
      expect(oneLine(r.stderr)).toEqual([
        `The example orders backend cannot listen on 127.0.0.1:${portOf(busy)}: the port is in use. Stop what listens there, or set EXAMPLE_BACKEND_PORT to another port.`,
      ]);
    } finally {
      busy.close();
    }
  });

  it("keeps the README's conversation working when npm start comes back on the same database with another backend port", async () => {
    const data = mkdtempSync(join(dir, 'demo-'));
    const demo = (backendPort: number) => startDemo(`sqlite://${join(data, 'demo.db')}`, backendPort);
    const first = await demo(await freePort());
    await first.stop();
    const moved = await freePort();
    const second = await demo(moved);
    try {
      expect(await readmeConversation(second.base)).toBe('Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.');
      // The help centre PDF the demo ships answers the README's question, citing its page and the
      // shop's link to it, once it is read (the server answers /readyz before the demo has read it).
      await waitUntil(
        'the help centre to be indexed',
        async () => {
          const r = await fetch(`${second.base}/api/v1/knowledge/sources/help-centre`, { headers: { 'tenant-id': 'demo' } });
          return r.ok && ((await r.json()) as { state: string }).state === 'indexed';
        },
        30_000,
        100,
      );
      const warranty = (await (
        await fetch(`${second.base}/api/v1/agents/acme-support/converse`, {
          method: 'POST',
          headers: { 'tenant-id': 'demo', 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'how long is the warranty?' }),
        })
      ).json()) as { response: { message: string; citations?: { source: string; page: number | null; url: string | null }[] } };
      expect(warranty.response.message).toMatch(/^Every product has a two-year warranty from the day of delivery\./);
      expect(warranty.response.citations).toEqual([
        expect.objectContaining({ source: 'help-centre', page: 3, url: expect.stringMatching(/\/acme-help-centre\.pdf$/) }),
      ]);
      // The shop's help site, synced from its sitemap on the shop page's new port: its page answers, cited by its URL.
      await waitUntil(
        'the help site to be synced',
        async () => {
          const r = await fetch(`${second.base}/api/v1/knowledge/sources/shop-help`, { headers: { 'tenant-id': 'demo' } });
          const s = r.ok ? ((await r.json()) as { state: string; site: { url: string } }) : null;
          return s?.state === 'indexed' && s.site.url === `${second.shop}/sitemap.xml`;
        },
        30_000,
        100,
      );
      const abroad = (await (
        await fetch(`${second.base}/api/v1/agents/acme-support/converse`, {
          method: 'POST',
          headers: { 'tenant-id': 'demo', 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'how long does delivery abroad take?' }),
        })
      ).json()) as { response: { message: string; citations?: { source: string; url: string | null }[] } };
      expect(abroad.response.message).toMatch(/^Delivery abroad takes five to eight business days/);
      expect(abroad.response.citations).toEqual([expect.objectContaining({ source: 'shop-help', url: `${second.shop}/help/delivery` })]);
      // Released past the new_hosts gate, recorded as forced with the demo's reason, and said so.
      const record = (await (await fetch(`${second.base}/api/v1/agents/acme-support/releases?limit=1`, { headers: { 'tenant-id': 'demo' } })).json()) as {
        data: { forced: boolean; reason: string; gates: { gate: string; passed: boolean }[] }[];
      };
      expect(record.data[0]).toMatchObject({ forced: true, reason: expect.stringContaining(`127.0.0.1:${moved}`) });
      expect(record.data[0].gates.filter((g) => !g.passed).map((g) => g.gate)).toEqual(['new_hosts']);
      expect(second.logged.join('')).toMatch(/agent acme-support: version \d+ released past its failing release gates \(new_hosts: /);
      // A development SECRETS_KEY, made once and kept: tenant secrets work under npm start, said loudly.
      for (const run of [first, second]) expect(run.logged.join('')).toContain('SECRETS_KEY: a development key kept in data/dev-secrets.key');
      const put = await fetch(`${second.base}/api/v1/secrets/WIDGET_IDENTITY_SECRET`, {
        method: 'PUT',
        headers: { 'tenant-id': 'demo', 'content-type': 'application/json' },
        body: JSON.stringify({ value: 'a-development-identity-secret' }),
      });
      expect(put.status).toBe(204);
    } finally {
      await second.stop();
    }
  }, 150_000);

  it('an unreachable PostgreSQL: one line', async () => {
    const r = await fails({ DATABASE_URL: 'postgres://someone:pw@127.0.0.1:1/nothing' });
    expect(r.code).toBe(1);
    const lines = oneLine(r.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cannot reach PostgreSQL at postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/nothing \(ECONNREFUSED\): is it running/);
  });

  describe.skipIf(!PG_URL)(`on PostgreSQL${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
    const admin = () => knexFactory({ client: 'pg', connection: PG_URL!, pool: { min: 0, max: 1 } });

    it("runs the README's PostgreSQL demo as written: npm start on a new database, the example backend answering", async () => {
      const k = admin();
      const name = `sb_demo_${randomBytes(4).toString('hex')}`;
      const u = new URL(PG_URL!);
      u.pathname = `/${name}`;
      let demo: Awaited<ReturnType<typeof startDemo>> | null = null;
      try {
        demo = await startDemo(u.toString(), await freePort());
        expect(await readmeConversation(demo.base)).toBe('Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.');
      } finally {
        await demo?.stop();
        await k.raw(`drop database if exists ${name} with (force)`);
        await k.destroy();
      }
    }, 60_000);

    it('creates a missing database once when replicas start together', async () => {
      const k = admin();
      const name = `sb_race_${randomBytes(4).toString('hex')}`;
      const u = new URL(PG_URL!);
      u.pathname = `/${name}`;
      try {
        const created = await Promise.all(Array.from({ length: 6 }, () => ensureDatabase(u.toString())));
        expect(created.filter(Boolean).length).toBeLessThanOrEqual(1);
        expect(await ensureDatabase(u.toString())).toBe(false);
        expect((await k.raw('select 1 from pg_database where datname = ?', [name])).rows).toHaveLength(1);
      } finally {
        await k.raw(`drop database if exists ${name} with (force)`);
        await k.destroy();
      }
    });

    it('creates a database that does not exist when the role may, and says how when it may not', async () => {
      const k = admin();
      const name = `sb_start_${randomBytes(4).toString('hex')}`;
      const role = `sb_role_${randomBytes(4).toString('hex')}`;
      try {
        const u = new URL(PG_URL!);
        u.pathname = `/${name}`;
        const port = await freePort();
        const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
          env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: u.toString(), PORT: String(port) },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let printed = '';
        child.stdout.on('data', (d: Buffer) => (printed += d.toString()));
        child.stderr.on('data', (d: Buffer) => (printed += d.toString()));
        try {
          await waitUntil('the server to answer /readyz', () => up(`http://127.0.0.1:${port}/readyz`), 15_000, 100);
        } finally {
          child.kill('SIGTERM');
          await new Promise((r) => child.once('exit', r));
        }
        // Creating it is no failure: no driver error, no stack on the way (the log is silent here).
        expect(printed.split('\n').filter((l) => !/ExperimentalWarning|--trace-warnings/.test(l) && l.trim())).toEqual([]);
        await k.raw(`create role ${role} login nocreatedb`);
        const v = new URL(PG_URL!);
        v.username = role;
        v.password = '';
        v.pathname = `/${name}_missing`;
        const r = await fails({ DATABASE_URL: v.toString() });
        expect(r.code).toBe(1);
        expect(oneLine(r.stderr)).toEqual([
          `the PostgreSQL database "${name}_missing" does not exist and could not be created with this role: create it (createdb ${name}_missing, or CREATE DATABASE ${name}_missing) and start again.`,
        ]);
      } finally {
        await k.raw(`drop database if exists ${name} with (force)`);
        await k.raw(`drop role if exists ${role}`);
        await k.destroy();
      }
    });
  });
});

describe('npm run serve under a process manager', () => {
  it('stops the server when npm is sent SIGTERM', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['run', '-s', 'serve'], {
      env: { ...process.env, LOG_LEVEL: 'silent', PORT: String(port), DATABASE_URL: `sqlite://${join(dir, 'serve.db')}` },
      stdio: 'ignore',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitUntil('npm run serve to answer /healthz', () => up(`${base}/healthz`), 15_000, 100);
    npm.kill('SIGTERM');
    await waitUntil('the server to stop answering after npm got SIGTERM', async () => !(await reachable(`${base}/healthz`)), 10_000, 100);
  });
});

/** The production server's start-up on a SQLite file of `dir`, loading `agents`, with its log lines kept. */
async function loggedStart(file: string, agents: string) {
  const { Writable } = await import('node:stream');
  const { pino } = await import('pino');
  const { loadConfig } = await import('../server/src/config.js');
  const { start } = await import('../server/src/main.js');
  const config = loadConfig({
    PORT: '0',
    LOG_LEVEL: 'info',
    DATABASE_URL: `sqlite://${join(dir, file)}`,
    AGENTS_DIR: agents,
    AGENTS_TENANT: 'demo',
    RATE_LIMIT_RPS: '0',
    SWEEP_INTERVAL_MS: '0',
    WEBHOOK_INTERVAL_MS: '0',
  });
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
  return { start: (opts: { hostChecker?: HostChecker } = {}) => start(config, { logger, ...opts }), lines };
}

describe('agent files at start-up', () => {
  it('says so when a restart replaces a version applied by hand', async () => {
    const { writeFileSync, mkdirSync } = await import('node:fs');
    const agents = join(dir, 'agents');
    mkdirSync(agents, { recursive: true });
    writeFileSync(join(agents, 'bot.yaml'), 'name: Bot\ncapabilities:\n  - name: a\n    examples: [hi]\n    phases: [{ id: p, say: "From the file." }]\n');
    const { start, lines } = await loggedStart('files.db', agents);
    let running = await start();
    const h = { 'tenant-id': 'demo', 'content-type': 'application/json' };
    const byHand = { name: 'Bot', capabilities: [{ name: 'a', examples: ['hi'], phases: [{ id: 'p', say: 'Changed by hand.' }] }] };
    expect((await fetch(`${running.url}/api/v1/agents/bot`, { method: 'PUT', headers: h, body: JSON.stringify(byHand) })).status).toBe(200);
    await running.stop();
    running = await start();
    await running.stop();
    const warning = lines.map((l) => JSON.parse(l)).find((l) => l.level === 40 && l.slug === 'bot');
    expect(warning?.msg).toBe(
      `agent bot: ${join(agents, 'bot.yaml')} differs from the current version 2 and replaces it as version 3 (a version applied by hand is no longer current)`,
    );
  });

  it('does not wait on a name server that never answers: the hosts of each file are "not checked", asked once each', async () => {
    const { writeFileSync, mkdirSync } = await import('node:fs');
    const agents = join(dir, 'silent-dns');
    mkdirSync(agents, { recursive: true });
    for (const n of [1, 2, 3]) {
      const actions = Object.fromEntries(
        [1, 2, 3].map((a) => [`call_${a}`, { type: 'http', method: 'GET', url: `https://api-${n}-${a}.example.com/x`, timeout_ms: 3000 }]),
      );
      writeFileSync(
        join(agents, `silent-${n}.json`),
        JSON.stringify({ name: `Silent ${n}`, actions, capabilities: [{ name: 'a', examples: ['hi'], phases: [{ id: 'p', say: 'Hello.' }] }] }),
      );
    }
    const blackHole = await startNameServer({ blackHole: true });
    try {
      const { start, lines } = await loggedStart('silent-dns.db', agents);
      const running = await start({ hostChecker: new HostChecker({ servers: [blackHole.address] }) });
      try {
        const loaded = lines.map((l) => JSON.parse(l));
        for (const n of [1, 2, 3]) {
          expect(loaded.find((l) => l.slug === `silent-${n}` && l.msg === 'agent loaded')).toBeDefined();
          const warnings = loaded.filter((l) => l.level === 40 && l.slug === `silent-${n}`).map((l) => l.msg);
          expect(warnings).toEqual([
            expect.stringMatching(new RegExp(`^agent silent-${n}: not checked: api-${n}-1\\.example\\.com \\(the name server did not answer`)),
          ]);
          expect(warnings[0]).not.toMatch(/is not reachable/);
        }
        // One try per name (A and AAAA at most), never the ten seconds of the system resolver's retries.
        const perName = new Map<string, number>();
        for (const q of blackHole.queries) perName.set(q, (perName.get(q) ?? 0) + 1);
        expect(perName.size).toBe(9);
        for (const count of perName.values()) expect(count).toBeLessThanOrEqual(2);
        const r = await fetch(`${running.url}/api/v1/agents/silent-1/converse`, {
          method: 'POST',
          headers: { 'tenant-id': 'demo', 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hi' }),
        });
        expect(r.status).toBe(200);
      } finally {
        await running.stop();
      }
    } finally {
      await blackHole.close();
    }
  });

  it('warns, under the production server, that the example agent calls a backend this tenant may not reach (npm start runs and grants it)', async () => {
    const { start, lines } = await loggedStart('serve-examples.db', 'agents');
    const running = await start();
    await running.stop();
    const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40 && l.slug === 'acme-support');
    expect(warnings.map((w) => [w.path, w.msg])).toEqual([
      [
        'actions.get_order.url',
        'agent acme-support: 127.0.0.1:3001 is not reachable for this tenant (unknown host, or a private address not in ACTION_ALLOWED_HOSTS): every call to it will fail (actions.get_order.url)',
      ],
    ]);
  });
});
