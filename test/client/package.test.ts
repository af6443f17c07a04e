// The built client package (npm run build:client), used by a plain Node.js app: no TypeScript,
// no workspace, only the package and its dependencies; and packed, installed into fresh
// CommonJS and ES module projects, type-checked strictly and run, as another team would.
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClient } from '../../scripts/build-client.js';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { testApp } from '../helpers/servers.js';

describe('the built client package', () => {
  let app: App;
  let server: Server;
  let drop: () => Promise<void>;
  let pkg: string;
  const consumer = join(process.cwd(), 'build', `consumer-${process.pid}`);

  beforeAll(async () => {
    pkg = buildClient();
    const created = await databases[0].create();
    drop = created.drop;
    app = testApp(created.db);
    server = app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await drop?.();
    rmSync(consumer, { recursive: true, force: true });
  });

  it("ships its declarations as plain types, without the contract's Zod types: under 500 KB for each entry", () => {
    const declarations = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? declarations(join(dir, e.name)) : e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
      );
    const all = declarations(pkg);
    expect(all.map((f) => f.slice(pkg.length + 1)).sort()).toEqual(['cjs/client/src/index.d.ts', 'client/src/index.d.ts']);
    const text = readFileSync(join(pkg, 'client/src/index.d.ts'), 'utf8');
    expect(text.length).toBeLessThan(500 * 1024);
    expect(text).not.toMatch(/ZodObject|objectOutputType|ZodOptional/);
    // Nor do they load Zod's or ts-rest's declarations, which a consumer would check too.
    expect(text).not.toMatch(/from 'zod'|@ts-rest/);
    expect(text).toMatch(/^export declare const ConverseRequest: Schema<ConverseRequest>;$/m);
    expect(text).toMatch(/^export type ConverseResponse = \{ conversation_id: string;/m);
    const converse = text.split('\n').find((l) => l.startsWith('  converse(args: {'));
    expect(converse).toContain('params: { slug: string }');
    expect(converse).toContain('body: ConverseRequest;');
  });

  it('talks to the service from a plain JavaScript app', async () => {
    mkdirSync(consumer, { recursive: true });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(
      join(consumer, 'app.mjs'),
      `import { createSwitchboardClient, ConverseRequest } from ${JSON.stringify(join(pkg, 'client/src/index.js'))};
const sb = createSwitchboardClient({ baseUrl: process.argv[2], tenantId: 'acme' });
const put = await sb.api.putAgent({ params: { slug: 'echo' }, body: JSON.parse(process.argv[3]) });
const first = await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'echo this' } });
const second = await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'from plain node', conversation_id: first.body.conversation_id } });
const history = await sb.api.getHistory({ params: { slug: 'echo', id: first.body.conversation_id } });
console.log(JSON.stringify({ put: put.status, reply: second.body.response.message, turns: history.body.turns.length, schema: ConverseRequest.safeParse({}).success }));
`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, [join(consumer, 'app.mjs'), base, JSON.stringify(echoAgent)]);
    expect(JSON.parse(stdout)).toEqual({ put: 200, reply: 'You said: from plain node', turns: 4, schema: false });
  });

  it('installs from its npm pack tarball into a fresh CommonJS app and a fresh ES module app, type-checks under @tsconfig/strictest and talks', async () => {
    const run = promisify(execFile);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const packed = join(consumer, 'packed');
    mkdirSync(packed, { recursive: true });
    // The README's command as written, from the repository's root.
    const readme = /`(npm pack [^`]+)`/.exec(readFileSync('README.md', 'utf8'))?.[1];
    expect(readme).toBe('npm pack ./build/client-package');
    expect(join(process.cwd(), readme!.split(' ')[2])).toBe(pkg);
    const { stdout: tarball } = await run('npm', [...readme!.split(' ').slice(1), '--pack-destination', packed, '--silent'], { cwd: process.cwd() });
    const tgz = join(packed, tarball.trim().split('\n').at(-1)!);
    const tsc = join(process.cwd(), 'node_modules/typescript/bin/tsc');
    const strictest = (JSON.parse(readFileSync('node_modules/@tsconfig/strictest/tsconfig.json', 'utf8')) as { compilerOptions: Record<string, unknown> })
      .compilerOptions;
    expect(strictest).toMatchObject({ strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true });
    const apps = {
      cjs: {
        type: 'commonjs',
        source: `import { createSwitchboardClient, type AuditEntry } from '@switchboard/client';
declare const process: { argv: string[] };
async function main(): Promise<void> {
  const sb = createSwitchboardClient({ baseUrl: process.argv[2] ?? '', tenantId: 'acme' });
  const first = await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'echo this' } });
  if (first.status !== 200) throw new Error(String(first.status));
  const audit = await sb.api.getAuditLogs({ params: { slug: 'echo', id: first.body.conversation_id }, query: {} });
  if (audit.status !== 200) throw new Error(String(audit.status));
  const changes = audit.body.data.filter((e: AuditEntry) => e.type === 'status_change').length;
  console.log(JSON.stringify({ reply: first.body.response.message, changes }));
}
void main();
`,
        module: 'node16',
        resolution: 'node16',
      },
      esm: {
        type: 'module',
        source: `import { createSwitchboardClient } from '@switchboard/client';
declare const process: { argv: string[] };
const sb = createSwitchboardClient({ baseUrl: process.argv[2] ?? '', tenantId: 'acme' });
const first = await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'echo this' } });
if (first.status !== 200) throw new Error(String(first.status));
const audit = await sb.api.getAuditLogs({ params: { slug: 'echo', id: first.body.conversation_id }, query: {} });
if (audit.status !== 200) throw new Error(String(audit.status));
const health = await sb.ops.healthz();
if (health.status !== 200) throw new Error(String(health.status));
console.log(JSON.stringify({ reply: first.body.response.message, changes: audit.body.data.filter((e) => e.type === 'status_change').length }));
`,
        module: 'nodenext',
        resolution: 'nodenext',
      },
    };
    await request(app.app).put('/api/v1/agents/echo').set('tenant-id', 'acme').send(echoAgent).expect(200);
    for (const [kind, a] of Object.entries(apps)) {
      const dir = join(consumer, kind);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${kind}`, version: '1.0.0', private: true, type: a.type }));
      writeFileSync(join(dir, 'app.ts'), a.source);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          // @tsconfig/strictest (exactOptionalPropertyTypes, noUncheckedIndexedAccess, …), the package's declarations checked too.
          compilerOptions: {
            ...strictest,
            target: 'ES2022',
            module: a.module,
            moduleResolution: a.resolution,
            skipLibCheck: false,
            lib: ['ES2023', 'DOM'],
            types: [],
            outDir: 'out',
          },
          files: ['app.ts'],
        }),
      );
      await run('npm', ['install', tgz, '--prefer-offline', '--no-audit', '--no-fund', '--silent'], { cwd: dir, timeout: 120_000 });
      await run(process.execPath, [tsc, '-p', dir], { cwd: dir }).catch((e: { stdout: string }) => {
        throw new Error(`${kind}: ${e.stdout}`);
      });
      const { stdout } = await run(process.execPath, [join(dir, 'out/app.js'), base], { cwd: dir });
      expect(JSON.parse(stdout), kind).toEqual({ reply: 'Say something.', changes: 1 });
    }
  }, 240_000);
});
