// The channels' webhooks and workers as a stranger or one busy tenant meets them: unsigned floods
// refused before any lookup and logged once a minute, compressed and broken bodies refused as
// the API refuses them, and one tenant's backlog behind a provider that answers in 8 s that
// leaves another tenant's replies on time. Providers are loopback servers answering as each
// documents (test/helpers/fake-providers.ts); the slow one answers Slack's chat.postMessage.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { createApp, type App } from '../../server/src/app.js';
import type { Config } from '../../server/src/config.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { CREDS, slackHeaders, slackMessage, startFakeProviders, telegramMessage, type FakeProviders } from '../helpers/fake-providers.js';
import { testConfig } from '../helpers/servers.js';

warnIfPostgresSkipped();

const echo: AgentDefinitionInput = {
  name: 'Echo',
  routing: { fallback: 'echo' },
  capabilities: [{ name: 'echo', examples: ['hello', 'anything'], phases: [{ id: 'say', say: 'You said: {{ message }}' }] }],
};

/** Slack's Web API answering every chat.postMessage after `delayMs`, as Slack documents the answer. */
async function slowSlack(delayMs: number): Promise<{ url: string; calls: number; close(): Promise<void> }> {
  const state = { calls: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.calls++;
      const t = setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true, channel: 'C0LAN2Q65', ts: `${Date.now() / 1000}` }));
      }, delayMs);
      res.on('close', () => clearTimeout(t));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`,
    get calls() {
      return state.calls;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

eachDatabase('webhooks and channel workers under hostile load ($name)', (database) => {
  let providers: FakeProviders;
  let slow: Awaited<ReturnType<typeof slowSlack>>;
  let app: App;
  let drop: () => Promise<void>;
  const logs: string[] = [];
  const hooks: Record<'slack' | 'telegram', string> = { slack: '', telegram: '' };

  beforeAll(async () => {
    providers = await startFakeProviders();
    slow = await slowSlack(8000);
    const created = await database.create();
    drop = created.drop;
    const channels: Config['channels'] = {
      intervalMs: 200,
      concurrency: { total: 16, perTenant: 4 },
      inboundPerMinute: 5000,
      apiUrls: { ...providers.apiUrls, slack: slow.url },
    };
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    });
    app = createApp(testConfig({ trustProxy: 1, secretsKey: randomBytes(32), channels }), { db: created.db, logger: pino({ level: 'info' }, sink) });
    // Tenant "busy" answers on Slack (the slow provider), tenant "quiet" on Telegram.
    for (const [tenant, kind] of [
      ['busy', 'slack'],
      ['quiet', 'telegram'],
    ] as const) {
      await request(app.app).put('/api/v1/agents/echo').set('tenant-id', tenant).send(echo).expect(200);
      const put = await request(app.app)
        .put(`/api/v1/agents/echo/channels/${kind}`)
        .set('tenant-id', tenant)
        .send({ credentials: CREDS[kind], status: 'active', set_webhook: false });
      expect(put.status).toBe(200);
      hooks[kind] = String(put.body.webhook_url).split('/').at(-1)!;
    }
    await app.startBackground();
  }, 60_000);
  afterAll(async () => {
    await slow?.close();
    await app?.close(0);
    await providers?.close();
    await drop?.();
  });

  const slack = (body: string, from = '192.0.2.10', headers = slackHeaders(body, new Date())) =>
    request(app.app).post(`/hooks/v1/${hooks.slack}`).set('x-forwarded-for', from).set('content-type', 'application/json').set(headers).send(body);

  it('refuses compressed and unreadable bodies with 415 and 400, never 500', async () => {
    const gz = await request(app.app)
      .post(`/hooks/v1/${hooks.slack}`)
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip')
      .send(Buffer.from('this is not gzip at all'));
    expect(gz.status).toBe(415);
    expect(gz.body.code).toBe('unsupported_media_type');
    const real = await request(app.app)
      .post(`/hooks/v1/${hooks.slack}`)
      .set('content-type', 'application/json')
      .set('content-encoding', 'gzip')
      .send(gzipSync('{}'));
    expect(real.status).toBe(415);
    const charset = await request(app.app).post(`/hooks/v1/${hooks.slack}`).set('content-type', 'application/json; charset=koi8-r').send('{}');
    expect(charset.status).toBeLessThan(500);
  });

  it('refuses unsigned floods and made-up channel ids before any lookup, logging once a minute per channel and reason', async () => {
    const unsigned = JSON.stringify(slackMessage('hello', '1700000000.000100'));
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++)
      statuses.push((await slack(unsigned, '203.0.113.66', { 'x-slack-request-timestamp': '1', 'x-slack-signature': 'v0=00' })).status);
    expect(statuses.slice(0, 30)).toEqual(Array<number>(30).fill(401));
    expect(new Set(statuses.slice(30))).toEqual(new Set([429]));
    const refusals = logs.filter((l) => l.includes('channel webhook refused') && l.includes('stale X-Slack-Request-Timestamp'));
    expect(refusals, refusals.join('')).toHaveLength(1);
    // That budget is the channel's from that address: the same address's requests to another
    // channel, and the provider's own signed requests to this one from its address, still go.
    const telegram = await request(app.app)
      .post(`/hooks/v1/${hooks.telegram}`)
      .set('x-forwarded-for', '203.0.113.66')
      .set('content-type', 'application/json')
      .set('x-telegram-bot-api-secret-token', CREDS.telegram.secret_token)
      .send(JSON.stringify(telegramMessage(1, 1, 'hello', 3_000_000)));
    expect(telegram.status).toBe(200);
    const signed = JSON.stringify(slackMessage('hello', '1700000000.000200', 'U0SIGNED'));
    expect((await slack(signed, '198.51.100.5')).status).toBe(200);
    // Made-up channel ids: 300 a minute per address, each a 404, then 429 before any lookup, for every channel.
    const made: number[] = [];
    for (let i = 0; i < 301; i++)
      made.push(
        (
          await request(app.app)
            .post(`/hooks/v1/ch_${randomBytes(24).toString('base64url')}`)
            .set('x-forwarded-for', '203.0.113.67')
            .send('{}')
        ).status,
      );
    expect(made.slice(0, 300)).toEqual(Array<number>(300).fill(404));
    expect(made[300]).toBe(429);
    expect((await slack(signed, '203.0.113.67')).status).toBe(429);
  });

  it("answers another tenant within 5 s (p99 of 20) while one tenant's 600 users wait on a provider answering in 8 s", async () => {
    const before = slow.calls;
    // 600 users of tenant "busy", one message each, all signed by Slack.
    for (let i = 0; i < 600; i++) {
      const body = JSON.stringify(slackMessage(`hello ${i}`, `1700000001.${String(i).padStart(6, '0')}`, `UBUSY${i}`));
      expect((await slack(body)).status).toBe(200);
    }
    // Its replies are under way: the slow provider holds as many as the tenant's slots allow.
    await expect.poll(() => slow.calls - before, { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    const waits: number[] = [];
    for (let i = 0; i < 20; i++) {
      const sent = providers.calls.length;
      const at = performance.now();
      const body = JSON.stringify(telegramMessage(5000 + i, 9000 + i, `quiet ${i}`, 2_000_000 + i));
      const hook = await request(app.app)
        .post(`/hooks/v1/${hooks.telegram}`)
        .set('content-type', 'application/json')
        .set('x-telegram-bot-api-secret-token', CREDS.telegram.secret_token)
        .send(body);
      expect(hook.status).toBe(200);
      await expect
        .poll(() => providers.calls.slice(sent).some((c) => c.method === 'sendMessage' && String(c.body.text).includes(`quiet ${i}`)), {
          timeout: 30_000,
          interval: 20,
        })
        .toBe(true);
      const reached = providers.calls.slice(sent).find((c) => String(c.body.text).includes(`quiet ${i}`))!.at;
      waits.push(reached - at);
    }
    waits.sort((a, b) => a - b);
    const p99 = waits[Math.ceil(0.99 * waits.length) - 1];
    expect(p99).toBeLessThan(5000);
    // And the busy tenant's backlog is still there: its replies wait on its own slow provider.
    expect(slow.calls - before).toBeLessThan(600);
  }, 180_000);
});
