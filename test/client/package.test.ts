// The built client package (npm run build:client), used by a plain Node.js app: no TypeScript,
// no workspace, only the package and its two dependencies.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
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
});
