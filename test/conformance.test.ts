// `npm run conformance` (server/src/cli/conformance.ts) against live servers: the service as
// `npm start` runs it behind Stoplight Prism's validating proxy (where the REST clients'
// collections run too: the Postman collection with newman, switchboard.http with httpyac), each database with header auth
// and with an API key, something that is not Switchboard, and a deployment whose answers break
// the document.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import newman, { type NewmanRunSummary } from 'newman';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTION_FILES } from '../scripts/collections.js';
import { runConformance } from '../server/src/cli/conformance.js';
import { eachDatabase } from './helpers/databases.js';
import { listen, startBackend, testApp } from './helpers/servers.js';

const root = process.cwd();

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Starts a process and resolves once `ready` appears in its output (or rejects with the output when it exits). */
function startProcess(args: string[], env: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const seen = (c: Buffer) => {
      out += c.toString();
      if (ready.test(out)) resolve(child);
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}):\n${out}`)));
  });
}

/** The command line, as a user runs it: its output and exit code. */
async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', 'conformance', ...args], {
      cwd: root,
    });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('conformance against npm start behind the Prism validating proxy', () => {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-conformance-'));
  let proxy = '';
  let shopOrigin = '';

  beforeAll(async () => {
    const [port, backendPort, proxyPort, shopPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    shopOrigin = `http://127.0.0.1:${shopPort}`;
    // What `npm start` runs: the example agents and the example orders API.
    children.push(
      await startProcess(
        ['--import', 'tsx', 'scripts/demo.ts'],
        {
          PORT: String(port),
          HOST: '127.0.0.1',
          EXAMPLE_BACKEND_PORT: String(backendPort),
          EXAMPLE_SHOP_PORT: String(shopPort),
          DATABASE_URL: `sqlite://${join(dir, 'demo.db')}`,
          LOG_LEVEL: 'info',
        },
        /switchboard listening/,
      ),
    );
    children.push(
      await startProcess(
        [
          join(root, 'node_modules/@stoplight/prism-cli/dist/index.js'),
          'proxy',
          'openapi.json',
          `http://127.0.0.1:${port}`,
          '-h',
          '127.0.0.1',
          '-p',
          String(proxyPort),
        ],
        {},
        /Prism is listening/,
      ),
    );
    proxy = `http://127.0.0.1:${proxyPort}`;
  }, 120_000);
  afterAll(() => {
    for (const c of children) c.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes every check with zero violations, and says so', async () => {
    const { code, out } = await cli('--url', proxy, '--tenant', 'demo');
    expect(out).toMatch(/^passed: 14 checks passed, 0 failed, 1 skipped; 15 responses valid/m);
    expect(out).toContain('ok');
    expect(out).not.toContain('FAIL');
    expect(code).toBe(0);
  }, 120_000);

  it("holds the README's conversation under the id the document's examples name", async () => {
    const id = '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10';
    const r = await fetch(`${proxy}/api/v1/agents/acme-support/conversations/${id}/history`, { headers: { 'tenant-id': 'demo' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('sl-violations')).toBeNull();
    expect(((await r.json()) as { turns: { message: string }[] }).turns.map((t) => t.message)).toEqual([
      'where is my order?',
      expect.stringMatching(/^What is your order number/),
      '100001',
      expect.stringMatching(/^Order 100001 shipped/),
    ]);
  });

  it("runs the Postman collection with newman: the README's folder passes its tests, and every reading request answers 2xx within the document", async () => {
    const collection = JSON.parse(readFileSync(join(root, 'collections', COLLECTION_FILES.collection), 'utf8'));
    const environment = JSON.parse(readFileSync(join(root, 'collections', COLLECTION_FILES.environment), 'utf8'));
    type Item = { name: string; item?: Item[]; request?: { method: string; url?: unknown; header?: { key: string; value: string; disabled?: boolean }[] } };
    // The README's folder as it is; of the other folders, the requests that only read (not the
    // event streams, which never end, nor the widget's, which need a browser's origin and key, nor
    // sign-in's and a person's, which need an OpenID provider: test/http/sign-in.test.ts has one).
    const [readme, ...folders] = collection.item as Item[];
    const reads = folders
      .filter((f) => f.name !== 'Web chat widget' && f.name !== 'Sign-in')
      .flatMap((f) => f.item ?? [])
      .filter((i) => i.request?.method === 'GET' && !i.request.header?.some((h) => h.key === 'Accept' && h.value === 'text/event-stream'))
      .filter((i) => !JSON.stringify(i.request?.url ?? '').includes('"people",":id"'));
    expect(readme.name).toBe("The README's conversation");
    expect(reads.length).toBeGreaterThan(15);
    const run = {
      ...collection,
      item: [readme, { name: 'Reading', item: reads }],
      event: [
        {
          listen: 'test',
          script: {
            type: 'text/javascript',
            exec: [
              "pm.test('keeps to openapi.json (the Prism proxy reports no violation)', () => pm.expect(pm.response.headers.has('sl-violations')).to.be.false);",
              "pm.test('answers 2xx', () => pm.expect(pm.response.code).to.be.within(200, 299));",
            ],
          },
        },
      ],
    };
    const summary = await new Promise<NewmanRunSummary>((resolve, reject) =>
      newman.run({ collection: run, environment, envVar: [{ key: 'baseUrl', value: proxy }], reporters: [], timeoutRequest: 20_000 }, (err, s) =>
        err ? reject(err) : resolve(s),
      ),
    );
    const failures = summary.run.failures.map((f) => `${f.source?.name ?? '?'}: ${f.error.message}`);
    expect(failures).toEqual([]);
    expect(summary.run.stats.requests).toMatchObject({ total: 9 + reads.length, failed: 0 });
    expect(summary.run.stats.assertions.failed).toBe(0);
    expect(summary.run.stats.assertions.total).toBeGreaterThan(2 * (9 + reads.length));
  }, 120_000);

  it("passes Portman's contract tests of every operation (collections/portman/), twice over on the same data", async () => {
    // `npm run contract-tests`, split in two: Portman writes the collection, newman runs it here.
    const output = join(dir, 'portman.json');
    await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules/@apideck/portman/bin/portman'),
        ...['-l', 'openapi.json', '-b', proxy, '-o', output],
        ...['-c', 'collections/portman/portman-config.json', '--filterFile', 'collections/portman/portman-filter.json'],
      ],
      { cwd: root },
    );
    const collection = JSON.parse(readFileSync(output, 'utf8'));
    const doc = JSON.parse(readFileSync(join(root, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, { operationId: string }>> };
    const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    // Left out (collections/portman/portman-filter.json): the two streams, which never end, and
    // sign-in's and a person's operations, which need an OpenID provider (test/http/sign-in.test.ts).
    const left = JSON.parse(readFileSync(join(root, 'collections/portman/portman-filter.json'), 'utf8')) as { operationIds: string[] };
    const leftOut = left.operationIds;
    for (let run = 1; run <= 2; run++) {
      const summary = await new Promise<NewmanRunSummary>((resolve, reject) =>
        newman.run(
          {
            collection,
            envVar: [{ key: 'shopOrigin', value: shopOrigin }],
            reporters: [],
            timeoutRequest: 20_000,
          },
          (err, s) => (err ? reject(err) : resolve(s)),
        ),
      );
      const failures = summary.run.failures.map((f) => `run ${run}, ${f.source?.name ?? '?'}: ${f.error.message}`);
      expect(failures).toEqual([]);
      // Every operation but those left out ran, each with its status, content-type, schema and header checks.
      const ran = new Set(summary.run.executions.map((e) => e.item.name));
      expect(ran.size).toBe(operations.length - leftOut.length);
      expect(summary.run.stats.assertions.failed).toBe(0);
      expect(summary.run.stats.assertions.total).toBeGreaterThan(4 * ran.size);
      // Prism's own check of every answer, beside Portman's.
      for (const e of summary.run.executions) expect(e.response?.headers.has('sl-violations'), e.item.name).toBe(false);
    }
    // The README's conversation is as the examples describe it after both runs.
    const r = await fetch(`${proxy}/api/v1/agents/acme-support/conversations/6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10`, { headers: { 'tenant-id': 'demo' } });
    expect(((await r.json()) as { turns: unknown[]; status: string }).turns).toHaveLength(4);
  }, 240_000);

  it("runs switchboard.http with httpyac: every request's checks pass", async () => {
    // The committed file with the proxy's address, in a folder of its own (httpyac reads files under its working directory).
    const at = mkdtempSync(join(tmpdir(), 'switchboard-http-'));
    try {
      const text = readFileSync(join(root, 'collections', COLLECTION_FILES.http), 'utf8');
      expect(text).toMatch(/^@baseUrl = http:\/\/127\.0\.0\.1:3000$/m);
      writeFileSync(join(at, 'switchboard.http'), text.replace(/^@baseUrl = .*$/m, `@baseUrl = ${proxy}`));
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [join(root, 'node_modules/httpyac/bin/httpyac.js'), 'send', 'switchboard.http', '--all', '--json'],
        {
          cwd: at,
        },
      );
      const report = JSON.parse(stdout) as {
        summary: Record<string, number>;
        requests: { title: string; response?: { statusCode: number; headers: Record<string, string> } }[];
      };
      expect(report.summary).toMatchObject({ totalRequests: 5, successRequests: 5, totalTests: 5, successTests: 5, failedTests: 0, erroredTests: 0 });
      for (const r of report.requests) expect(r.response?.headers['sl-violations'], r.title).toBeUndefined();
    } finally {
      rmSync(at, { recursive: true, force: true });
    }
  }, 120_000);

  it('fails, exit code 1, when the answers break the document', async () => {
    // A gateway that adds a field to the health answer.
    const target = proxy;
    const gateway = await startBackend((req, res, body) => {
      void fetch(`${target}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<
          string,
          string
        >,
        body: body || undefined,
      }).then(async (r) => {
        let text = await r.text();
        if (req.url === '/healthz') text = JSON.stringify({ ...(JSON.parse(text) as object), uptime: 12 });
        res.writeHead(r.status, {
          'content-type': r.headers.get('content-type') ?? 'text/plain',
          ...Object.fromEntries(['x-request-id', 'retry-after'].flatMap((h) => (r.headers.get(h) ? [[h, r.headers.get(h)!]] : []))),
        });
        res.end(text);
      });
    });
    try {
      const { code, out } = await cli('--url', gateway.url, '--tenant', 'demo');
      expect(out).toMatch(/FAIL .*GET \/healthz answers ok: the deployment’s \/openapi.json: the GET \/healthz → 200 body breaks the document/);
      expect(out).toMatch(/unevaluated properties.*uptime/);
      expect(out).toMatch(/^FAILED: 13 checks passed, 1 failed/m);
      expect(code).toBe(1);
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it('fails at once, exit code 1, against something that is not Switchboard', async () => {
    const other = await startBackend((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<h1>Not here</h1>');
    });
    try {
      const { code, out } = await cli('--url', other.url, '--tenant', 'demo');
      expect(out).toContain('answered 404 text/html: this is not a Switchboard server');
      expect(out).toMatch(/^FAILED: 0 checks passed, 1 failed/m);
      expect(code).toBe(1);
      // It stopped there: nothing was sent but the document's request.
      expect(other.requests.map((r) => r.url)).toEqual(['/openapi.json']);
    } finally {
      await other.close();
    }
    const closed = await freePort();
    const { code, out } = await cli('--url', `http://127.0.0.1:${closed}`, '--tenant', 'demo');
    expect(out).toContain(`cannot reach http://127.0.0.1:${closed}/openapi.json (ECONNREFUSED): is it running there? (--url)`);
    expect(code).toBe(1);
  }, 120_000);
});

eachDatabase('conformance on $name', (database) => {
  it('passes with header auth and with an API key, and leaves no agent behind', async () => {
    for (const authMode of ['header', 'api_key'] as const) {
      const { db, drop } = await database.create();
      const app = testApp(db, { authMode });
      const server = await listen(app);
      try {
        const key = authMode === 'api_key' ? (await app.keys.create('t-conf', ['admin', 'read', 'converse'])).key : undefined;
        const lines: string[] = [];
        const report = await runConformance({ url: server.url, tenant: key ? undefined : 't-conf', key, print: (l) => lines.push(l) });
        expect(
          lines.filter((l) => l.includes('FAIL')),
          authMode,
        ).toEqual([]);
        expect(report, authMode).toEqual({
          passed: authMode === 'api_key' ? 15 : 14,
          failed: 0,
          skipped: authMode === 'api_key' ? 0 : 1,
          responses: authMode === 'api_key' ? 16 : 15,
        });
        const left = await db.knex('agents').where({ tenant_id: 't-conf' }).whereNull('archived_at');
        expect(left).toEqual([]);
      } finally {
        await server.close();
        await app.close();
        await drop();
      }
    }
  }, 120_000);
});
