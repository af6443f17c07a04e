// Clients generated from the committed openapi.json by three generators, as a team that does not
// use our typed client would make them: openapi-typescript's types with openapi-fetch,
// @hey-api/openapi-ts's whole fetch client, and openapi-zod-client's Zod schemas with its Zodios
// client (which parses every answer with the schemas, so a response the document does not
// describe fails the call). Each is compiled with a strict consumer
// (`strict`, `skipLibCheck: false`, so the generated code is checked too) that holds the README's
// conversation against a listening server, reads its history, narrows audit entries by `type`
// and reads a routing decision's candidates and a status change's `to`; then it runs.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '@hey-api/openapi-ts';
import { generateZodClientFromOpenAPI } from 'openapi-zod-client';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../server/src/app.js';
import { exampleAgentApp } from './helpers/example-agent.js';
import { listen } from './helpers/servers.js';

const run = promisify(execFile);
const root = process.cwd();
const DOCUMENT = join(root, 'openapi.json');

/** What each consumer prints: the conversation as its program saw it. */
interface Held {
  reply: string;
  status: string;
  turns: number;
  candidates: string[];
  statuses: string[];
}

/** The openapi-fetch program docs/api.md shows, as a reader copies it. */
function documentedConsumer(): string {
  const docs = readFileSync(join(root, 'docs/api.md'), 'utf8');
  const at = docs.indexOf('<!-- test/generated-clients.test.ts compiles this program');
  const block = /```ts\n([\s\S]*?)```/.exec(docs.slice(at));
  if (at < 0 || !block) throw new Error('docs/api.md has no openapi-fetch program');
  return block[1];
}

const HEY_API_CONSUMER = `import { client } from './hey/client.gen.js';
import { converse, getAuditLogs, getHistory } from './hey/sdk.gen.js';
import type { AuditEntry } from './hey/types.gen.js';

const slug = 'acme-support';
client.setConfig({ baseUrl: process.env.BASE_URL, headers: { 'tenant-id': 'demo' } });
const first = await converse({
  path: { slug },
  body: { message: 'where is my order?', context: { version: 'v1', context: { identity: { user_id: 'u-42' } } } },
  throwOnError: true,
});
const id: string = first.data.conversation_id;
const second = await converse({ path: { slug }, body: { message: '100001', conversation_id: id }, throwOnError: true });
const history = await getHistory({ path: { slug, id }, throwOnError: true });
const audit = await getAuditLogs({ path: { slug, id }, query: { limit: 100 }, throwOnError: true });
const candidates: string[] = [];
const statuses: string[] = [];
const entries: AuditEntry[] = audit.data.data;
for (const e of entries) {
  if (e.type === 'routing_decision') candidates.push(...e.data.candidates.map((c) => c.capability));
  else if (e.type === 'status_change') statuses.push(e.data.to);
}
const status: string = second.data.state.status;
console.log(JSON.stringify({ reply: second.data.response.message, status, turns: history.data.turns.length, candidates, statuses }));
`;

const ZOD_CONSUMER = `import { createApiClient, schemas } from './zod/client.js';

const slug = 'acme-support';
const api = createApiClient(process.env.BASE_URL!, { validate: 'all' });
const config = { params: { slug }, headers: { 'tenant-id': 'demo' } };
const first = await api.converse({ message: 'where is my order?', context: { version: 'v1', context: { identity: { user_id: 'u-42' } } } }, config);
const id: string = first.conversation_id;
const second = await api.converse({ message: '100001', conversation_id: id }, config);
const history = await api.getHistory({ ...config, params: { slug, id } });
const audit = await api.getAuditLogs({ ...config, params: { slug, id }, queries: { limit: 100 } });
const candidates: string[] = [];
const statuses: string[] = [];
for (const e of audit.data) {
  if (e.type === 'routing_decision') candidates.push(...e.data.candidates.map((c) => c.capability));
  else if (e.type === 'status_change') statuses.push(e.data.to);
}
// The exported schemas parse what the service answered, and refuse what it would not.
schemas.Conversation.parse(history);
if (schemas.ConverseResponse.safeParse({ ...second, state: { status: 'lost' } }).success) throw new Error('a status the document does not allow was accepted');
const status: string = second.state.status;
console.log(JSON.stringify({ reply: second.response.message, status, turns: history.turns.length, candidates, statuses }));
`;

describe('clients generated from openapi.json', () => {
  let app: App;
  let closeApp: () => Promise<void>;
  let server: { url: string; close(): Promise<void> };
  let baseUrl: string;
  let dir: string;

  beforeAll(async () => {
    ({ app, close: closeApp } = await exampleAgentApp());
    server = await listen(app);
    baseUrl = server.url;
    dir = mkdtempSync(join(tmpdir(), 'switchboard-generated-'));
    // The consumers resolve openapi-fetch and the generated client's imports from the project's packages.
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  afterAll(async () => {
    await server.close();
    await closeApp();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Compiles `files` strictly (generated code included) and runs `main` against the server. */
  async function compileAndRun(name: string, files: Record<string, string>, include: string[]): Promise<Held> {
    const at = join(dir, name);
    mkdirSync(at, { recursive: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(at, file), text);
    writeFileSync(
      join(at, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          skipLibCheck: false,
          outDir: 'out',
          lib: ['es2022', 'dom'],
        },
        include,
      }),
    );
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(at, 'tsconfig.json')]).catch(
      (e: { stdout: string; stderr: string }) => {
        throw new Error(`${name} does not compile:\n${e.stdout}${e.stderr}`);
      },
    );
    const { stdout } = await run(process.execPath, [join(at, 'out', 'main.js')], { env: { ...process.env, BASE_URL: baseUrl } });
    return JSON.parse(stdout) as Held;
  }

  const expectTheConversation = (held: Held) => {
    expect(held.reply).toMatch(/^Order 100001 shipped/);
    expect(held.status).toBe('completed');
    expect(held.turns).toBe(4);
    expect(held.candidates).toContain('order_status');
    expect(held.statuses).toEqual(expect.arrayContaining(['active', 'completed']));
  };

  it("openapi-typescript with openapi-fetch, docs/api.md's program: compiles strictly, narrows audit entries and holds the conversation", async () => {
    const types = astToString(await openapiTS(JSON.parse(readFileSync(DOCUMENT, 'utf8'))));
    expectTheConversation(await compileAndRun('openapi-fetch', { 'api.d.ts': types, 'main.ts': documentedConsumer() }, ['*.ts']));
  }, 120_000);

  it('@hey-api/openapi-ts (fetch client): compiles strictly, narrows audit entries and holds the conversation', async () => {
    const at = join(dir, 'hey-api');
    await createClient({
      input: DOCUMENT,
      output: { path: join(at, 'hey'), importFileExtension: '.js' },
      plugins: ['@hey-api/client-fetch'],
      logs: { level: 'silent' },
    });
    expectTheConversation(await compileAndRun('hey-api', { 'main.ts': HEY_API_CONSUMER }, ['*.ts', 'hey/**/*.ts']));
  }, 120_000);

  it('openapi-zod-client (Zod schemas and a Zodios client): compiles strictly, parses every answer and holds the conversation', async () => {
    const at = join(dir, 'zod-client');
    mkdirSync(join(at, 'zod'), { recursive: true });
    await generateZodClientFromOpenAPI({
      openApiDoc: JSON.parse(readFileSync(DOCUMENT, 'utf8')),
      distPath: join(at, 'zod', 'client.ts'),
      options: { shouldExportAllSchemas: true, withAlias: true },
    });
    expectTheConversation(await compileAndRun('zod-client', { 'main.ts': ZOD_CONSUMER }, ['*.ts', 'zod/*.ts']));
  }, 120_000);
});
