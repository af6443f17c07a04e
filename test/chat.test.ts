// `npm run agents -- chat` driven through a pseudo-terminal (util-linux `script`) against real
// servers, in both auth modes.
import { spawn } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAgentFile } from '../server/src/agents-loader.js';
import type { App } from '../server/src/app.js';
import { databases } from './helpers/databases.js';
import { listen, testApp } from './helpers/servers.js';

/** The chat command in a pseudo-terminal: what it printed so far, and a way to type into it. */
function terminal(args: string[]) {
  const cmd = ['node', '--import', 'tsx', 'server/src/cli/agents.ts', 'chat', ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], { env: { ...process.env, FORCE_COLOR: '0' } });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  // What a person sees: without the terminal's cursor and colour sequences.
  const seen = () => stripVTControlCharacters(out).replace(/\r/g, '');
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    seen,
    type: (line: string) => child.stdin.write(`${line}\n`),
    async waitFor(pattern: RegExp, ms = 15_000): Promise<string> {
      const until = Date.now() + ms;
      while (!pattern.test(seen())) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${pattern}; saw:\n${seen()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return seen();
    },
    exited,
    kill: () => child.kill(),
  };
}

async function serve(config: Parameters<typeof testApp>[1]) {
  const created = await databases[0].create();
  const app = testApp(created.db, config);
  const { definition } = await readAgentFile('agents/acme-support.yaml');
  await app.agents.put('acme', 'acme-support', definition);
  const server = await listen(app);
  return {
    app,
    url: server.url,
    close: async () => {
      await server.close();
      await app.close();
      await created.drop();
    },
  };
}

describe('npm run agents -- chat', () => {
  let header: Awaited<ReturnType<typeof serve>>;
  let keyed: Awaited<ReturnType<typeof serve>>;
  let key: string;
  beforeAll(async () => {
    header = await serve({});
    keyed = await serve({ authMode: 'api_key' });
    key = (await (keyed.app as App).keys.create('acme', ['converse', 'read'])).key;
  });
  afterAll(async () => {
    await header?.close();
    await keyed?.close();
  });

  it('talks at the prompt: numbered options, a status line per turn, /history, /new and /quit', async () => {
    const t = terminal(['acme-support', '--url', header.url, '--tenant', 'acme', '--user', 'u-7']);
    try {
      await t.waitFor(/Acme Support \(acme-support, version 1\)[^\n]*\n> /);
      t.type('billing question');
      await t.waitFor(/\[billing · topic · confidence 0\.\d\d · active\]\n> /);
      expect(t.seen()).toMatch(/Which billing topic is it\?\n {2}1\. Invoice copy\n {2}2\. Refund\n {2}3\. Payment method\n/);
      t.type('2');
      await t.waitFor(/\[billing · refund_email · confidence n\/a \(answered the question\) · active\]\n> /);
      t.type('/history');
      await t.waitFor(/user {5}refund\nagent {4}Which email address/);
      t.type('/new');
      await t.waitFor(/A new conversation starts with your next message\.\n> /);
      t.type('talk to a human');
      await t.waitFor(/\[human · handoff · confidence 0\.\d\d · escalated · not waiting\]|\[human · handoff · confidence 0\.\d\d · escalated\]/);
      t.type('/quit');
      expect(await t.exited).toBe(0);
    } finally {
      t.kill();
    }
  });

  /** The chat command with its input piped in whole (a script), and what it printed. */
  async function piped(args: string[], input: string) {
    const child = spawn('node', ['--import', 'tsx', 'server/src/cli/agents.ts', 'chat', ...args], { env: { ...process.env, FORCE_COLOR: '0' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // All of it at once, before the first reply: the lines must wait their turn, none dropped.
    child.stdin.end(input);
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    return { code, stdout, stderr };
  }

  it('answers piped input line by line, in order, to its end', async () => {
    const r = await piped(['acme-support', '--url', header.url, '--tenant', 'acme'], 'billing question\n2\n\n/history\ntalk to a human\n');
    expect(r.code).toBe(0);
    const order = [
      '> billing question',
      'Which billing topic is it?',
      '[billing · topic · confidence',
      '> 2',
      'Which email address',
      '[billing · refund_email',
      '> /history',
      'user     refund',
      '> talk to a human',
      '[human · handoff',
    ];
    let at = 0;
    for (const text of order) {
      const found = r.stdout.indexOf(text, at);
      expect(found, `${text} after position ${at} in:\n${r.stdout}`).toBeGreaterThanOrEqual(0);
      at = found;
    }
  });

  it('prints one JSON object per turn with --json, and nothing else on standard output', async () => {
    const r = await piped(['acme-support', '--url', header.url, '--tenant', 'acme', '--json'], 'billing question\n2\nwhere is my order?\n');
    expect(r.code).toBe(0);
    const turns = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(turns).toHaveLength(3);
    expect(turns[0]).toMatchObject({ message: 'billing question', capability: 'billing', phase: 'topic', status: 'active', confidence: expect.any(Number) });
    expect((turns[0].options as { label: string }[]).map((o) => o.label)).toEqual(['Invoice copy', 'Refund', 'Payment method']);
    expect(turns[1]).toMatchObject({ message: 'refund', phase: 'refund_email', confidence: null, conversation_id: turns[0].conversation_id });
    expect(turns[2].message).toBe('where is my order?');
    expect(r.stderr).toMatch(/Acme Support \(acme-support, version 1\)/);
  });

  it('works with an API key, and says in one line when the key is refused', async () => {
    const t = terminal(['acme-support', '--url', keyed.url, '--key', key]);
    try {
      await t.waitFor(/> $/);
      t.type('where is my order?');
      await t.waitFor(/What is your order number\?[\s\S]*\[order_status · ask_order · confidence 0\.\d\d · active\]\n> /);
      t.type('/audit');
      await t.waitFor(/routing_decision/);
      t.type('/quit');
      expect(await t.exited).toBe(0);
    } finally {
      t.kill();
    }
    const refused = terminal(['acme-support', '--url', keyed.url, '--key', 'sbk_not_a_key']);
    expect(await refused.exited).toBe(1);
    expect(refused.seen()).toMatch(/answered 401 unauthorized: .* \(pass an API key with --key\)/);
  });
});
