// `npm run load` against a running server: it reports what it sent and how the server answered.
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { echoAgent } from './helpers/agents.js';
import { databases } from './helpers/databases.js';
import { appFixture } from './helpers/fixture.js';

const run = promisify(execFile);

describe('the load tool', () => {
  const f = appFixture(databases[0], { agents: { echo: echoAgent }, config: { rateLimit: { rps: 0, burst: 0 } } });
  let server: Server;
  let url: string;
  /** Runs the load tool against the app, for the agent `echo` of tenant acme, with `args` added. */
  const load = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/load.ts', '--url', url, '--tenant', 'acme', '--agent', 'echo', ...args]);
  beforeAll(async () => {
    server = f.app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return () => new Promise((r) => server.close(r));
  });

  it('drives conversations at the asked rate and prints throughput, latency and answers by status', { timeout: 30_000 }, async () => {
    const { stdout } = await load('--rate', '40', '--duration', '2s', '--connections', '4');
    expect(stdout).toMatch(/1s\/2s: \d+ answers in the last second/);
    expect(stdout).toMatch(/requests: \d+ in [\d.]+s, \d+ req\/s \(asked for 40\)/);
    expect(stdout).toMatch(/latency ms: p50 \d+, p90 \d+, p99 \d+/);
    expect(stdout).toMatch(/errors: 0 \(timeouts 0\), non-2xx answers: 0/);
    expect(stdout).toMatch(/answers by status: 200: \d+$/m);
    const conversations = await f.db.knex('conversations').count({ n: '*' });
    expect(Number(conversations[0].n)).toBeGreaterThan(1);
  });

  it('refuses a duration it cannot read, saying what it expects', async () => {
    const failed = await load('--duration', 'soon').catch((e: { code: number; stderr: string }) => e);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(/a duration such as 60s, 2m or 500ms/);
  });
});
