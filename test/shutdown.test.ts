// `npm start` ends on SIGTERM whatever is open: a visitor's widget event stream, an API event
// stream, and a channel reply under way, twenty times in a row. Streams end at once (their
// clients resume elsewhere with Last-Event-ID), so the drain waits only for the reply's call: a
// provider that answers in 1 s gives a clean exit soon after; one that never answers is cut off
// by SHUTDOWN_TIMEOUT_MS. Every port the demo opened is closed when the process is gone.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/servers.js';
import { openSse } from './helpers/sse.js';
import { waitUntil } from './helpers/wait.js';

const RUNS = 20;
// Room for a clean drain (the provider answers in 1 s) on a loaded 2-core machine, where the
// demo's own work on SIGTERM can take seconds of the drain.
const SHUTDOWN_TIMEOUT_MS = 6000;
const SECRET_TOKEN = 'telegram-secret-token-0123456789';

describe('npm start and SIGTERM', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-shutdown-'));
  /**
   * Telegram's API as a provider that answers sendMessage in 1 s for the current run's chat when
   * its id is even, as Telegram documents the answer, and never when it is odd. An earlier run's
   * reply, taken up again once its killed run's claim has expired, is answered at once.
   */
  let provider: Server;
  /** The chat ids of the sendMessage calls the provider took. */
  const calls: number[] = [];
  let providerUrl = '';
  let current = 0;
  beforeAll(async () => {
    provider = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const chat = Number((JSON.parse(body || '{}') as { chat_id?: number }).chat_id);
        calls.push(chat);
        if (chat === current && chat % 2) return;
        setTimeout(
          () => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ ok: true, result: { message_id: 1, date: 1732442745, chat: { id: chat, type: 'private' }, text: 'ok' } }));
          },
          chat === current ? 1000 : 0,
        );
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    providerUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    provider.closeAllConnections();
    await new Promise((r) => provider.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it(`exits every time with streams open and a reply under way: cleanly after the reply's call, else at SHUTDOWN_TIMEOUT_MS (${RUNS} runs)`, async () => {
    const [port, backendPort, shopPort] = [await freePort(), await freePort(), await freePort()];
    const base = `http://127.0.0.1:${port}`;
    const shop = `http://127.0.0.1:${shopPort}`;
    const env = {
      ...process.env,
      LOG_LEVEL: 'warn',
      DATABASE_URL: `sqlite://${join(dir, 'demo.db')}`,
      PORT: String(port),
      EXAMPLE_BACKEND_PORT: String(backendPort),
      EXAMPLE_SHOP_PORT: String(shopPort),
      SECRETS_KEY: randomBytes(32).toString('hex'),
      CHANNEL_API_URLS: JSON.stringify({ telegram: providerUrl }),
      CHANNEL_INTERVAL_MS: '100',
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    };
    const T = { 'tenant-id': 'demo', 'content-type': 'application/json' };
    let hook = '';
    for (let run = 0; run < RUNS; run++) {
      // A group of its own, so that a failed run ends npm's node child too, not npm alone.
      const npm: ChildProcess = spawn('npm', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let output = '';
      npm.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      npm.stderr!.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
      const streams: Awaited<ReturnType<typeof openSse>>[] = [];
      try {
        await waitUntil(
          `npm start to answer /readyz (run ${run + 1})`,
          async () => {
            if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}: ${output}`);
            return fetch(`${base}/readyz`).then(
              (r) => r.ok,
              () => false,
            );
          },
          30_000,
          50,
        );
        if (!hook) {
          const put = await fetch(`${base}/api/v1/agents/acme-support/channels/telegram`, {
            method: 'PUT',
            headers: T,
            body: JSON.stringify({ credentials: { bot_token: '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', secret_token: SECRET_TOKEN }, status: 'active' }),
          });
          expect(put.status).toBe(200);
          hook = String(((await put.json()) as { webhook_url: string }).webhook_url);
        }
        // A visitor of the demo's shop page, following its conversation.
        const keys = (await (await fetch(`${base}/api/v1/keys`, { headers: T })).json()) as { data: { widget?: { key: string; origins: string[] } }[] };
        const key = keys.data.find((k) => k.widget?.origins.includes(shop))!.widget!.key;
        const page = { origin: shop, 'content-type': 'application/json' };
        const minted = await fetch(`${base}/widget/v1/agents/acme-support/visitor?key=${key}`, { method: 'POST', headers: page, body: '{}' });
        const token = ((await minted.json()) as { visitor_token: string }).visitor_token;
        const said = await fetch(`${base}/widget/v1/agents/acme-support/converse?key=${key}`, {
          method: 'POST',
          headers: { ...page, 'x-visitor-token': token },
          body: JSON.stringify({ message: 'talk to a human' }),
        });
        const id = ((await said.json()) as { conversation_id: string }).conversation_id;
        streams.push(await openSse(`${base}/widget/v1/agents/acme-support/conversations/${id}/events?key=${key}`, { origin: shop, 'x-visitor-token': token }));
        streams.push(await openSse(`${base}/api/v1/agents/acme-support/conversations/${id}/events`, { 'tenant-id': 'demo' }));
        expect(streams.map((s) => s.status)).toEqual([200, 200]);
        // A Telegram message whose reply is under way at a provider that never answers (a user of
        // its own each run: the reply a killed run left claimed holds its user's next ones back).
        current = 4242 + run;
        const message = {
          update_id: 100 + run,
          message: {
            message_id: 100 + run,
            from: { id: 4242 + run, is_bot: false, first_name: 'T' },
            chat: { id: 4242 + run, type: 'private' },
            date: 1732442745,
            text: 'hello',
          },
        };
        const hooked = await fetch(hook, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET_TOKEN },
          body: JSON.stringify(message),
        });
        expect(hooked.status).toBe(200);
        await waitUntil('the reply to reach the provider', () => Promise.resolve(calls.includes(current)), 10_000, 20);

        const sent = performance.now();
        npm.kill('SIGTERM');
        const code = await Promise.race([exited, new Promise<'alive'>((r) => setTimeout(() => r('alive'), 3 * SHUTDOWN_TIMEOUT_MS))]);
        const took = performance.now() - sent;
        expect(code, `run ${run + 1}: npm start still running ${3 * SHUTDOWN_TIMEOUT_MS} ms after SIGTERM\n${output}`).not.toBe('alive');
        if (run % 2 === 0) {
          // The provider answers in 1 s: the drain ends cleanly (exit 0), so before the timeout,
          // which would have ended it with 1.
          expect(code, output).toBe(0);
        } else {
          // It never answers: SHUTDOWN_TIMEOUT_MS ends the process.
          expect(code, output).toBe(1);
          expect(took).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_MS - 100);
          expect(output).toMatch(/drain took longer than SHUTDOWN_TIMEOUT_MS/);
        }
        // Nothing the demo opened is left listening.
        for (const p of [port, backendPort, shopPort]) {
          const answered = await fetch(`http://127.0.0.1:${p}/`).then(
            () => true,
            () => false,
          );
          expect(answered, `port ${p} still answers after run ${run + 1}`).toBe(false);
        }
      } finally {
        for (const s of streams) s.close();
        if (npm.pid !== undefined) {
          try {
            process.kill(-npm.pid, 'SIGKILL');
          } catch {
            // the group is gone: every process of it exited
          }
        }
      }
    }
  }, 600_000);
});
