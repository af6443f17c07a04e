// Messaging channels end to end, per provider, against scripted providers on loopback that sign
// what they send as each provider documents and check every API call the service makes: a whole
// conversation with an option chosen by button (or by number, for SMS), a redelivered message
// answered once, forged and stale signatures refused, a 429 then a 200, a person's reply to an
// escalated conversation delivered out, and credentials in no response, log line or audit entry.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { createApp, type App } from '../../server/src/app.js';
import { chosen } from '../../server/src/service/channels/inbound.js';
import { UnavailableError } from '../../server/src/errors.js';
import { splitText } from '../../server/src/channels/adapter.js';
import { twilioSignature } from '../../server/src/channels/sms/adapter.js';
import { ADAPTERS } from '../../server/src/channels/index.js';
import { databases, eachDatabase, type TestDatabase } from '../helpers/databases.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { FakeClock } from '../helpers/clock.js';
import { testConfig } from '../helpers/servers.js';
import {
  CREDS,
  slackButton,
  slackHeaders,
  slackMessage,
  startFakeProviders,
  telegramButton,
  telegramMessage,
  twilioHeaders,
  twilioMessage,
  whatsappHeaders,
  whatsappMessage,
  type FakeProviders,
  type Provider,
  type ProviderCall,
} from '../helpers/fake-providers.js';

const TENANT = 'acme';
const PUBLIC_URL = 'https://switchboard.test';

const helpdesk: AgentDefinitionInput = {
  name: 'Helpdesk',
  capabilities: [
    {
      name: 'greeting',
      description: 'Say hello',
      examples: ['hello', 'hi', 'hey there', 'good morning'],
      phases: [
        {
          id: 'hello',
          say: 'Hello! I can answer billing questions or find you a person.',
          options: [
            { label: 'Billing', value: 'billing question' },
            { label: 'Talk to a person', value: 'talk to a human' },
          ],
        },
      ],
    },
    {
      name: 'billing',
      description: 'Billing questions',
      examples: ['billing question', 'a question about my invoice', 'I was charged twice', 'billing please'],
      phases: [
        {
          id: 'topic',
          say: 'Which billing topic is it?',
          options: [
            { label: 'Invoice copy', value: 'invoice' },
            { label: 'Refund', value: 'refund' },
            { label: 'Payment method', value: 'payment' },
            { label: 'Something else entirely', value: 'other' },
          ],
          collect: { slot: 'topic', type: 'choice' },
          next: 'done',
        },
        { id: 'done', say: 'Noted: {{ slots.topic }}. Thank you!', end: 'completed' },
      ],
    },
    {
      name: 'human',
      description: 'A person',
      examples: ['talk to a human', 'a person please', 'I want to speak to someone', 'real agent'],
      phases: [{ id: 'hand', say: 'A colleague will take over here shortly.', end: 'escalated' }],
    },
  ],
};

/** A request a provider makes to the webhook. */
interface Hook {
  type: string;
  body: string;
  headers: (url: string) => Record<string, string>;
}

/** What each provider sends and how its calls read. */
interface Script {
  kind: Provider;
  message(n: number, text: string): Hook;
  /** The user choosing the option with `value`, labelled `label` (SMS: replies with its number). */
  press(n: number, value: string, label: string, number: number): Hook;
  /** The text a call shows and the choices it offers (value, or the number for numbered text). */
  read(call: ProviderCall): { text: string; choices: string[] };
  /** A request signed with the wrong secret. */
  forged(n: number): Hook;
}

const json = (v: unknown) => JSON.stringify(v);

function scripts(clock: FakeClock): Script[] {
  const slackHook = (payload: string, type = 'application/json', secret?: string): Hook => ({
    type,
    body: payload,
    headers: () => slackHeaders(payload, clock.now(), secret),
  });
  const waHook = (payload: string, secret?: string): Hook => ({ type: 'application/json', body: payload, headers: () => whatsappHeaders(payload, secret) });
  const tgHook = (payload: string, token: string = CREDS.telegram.secret_token): Hook => ({
    type: 'application/json',
    body: payload,
    headers: () => ({ 'x-telegram-bot-api-secret-token': token }),
  });
  const smsHook = (params: Record<string, string>, token?: string): Hook => ({
    type: 'application/x-www-form-urlencoded',
    body: new URLSearchParams(params).toString(),
    headers: (url) => twilioHeaders(url, params, token),
  });
  const ts = (n: number) => `1732442${String(700 + n)}.00${String(n).padStart(4, '0')}`;
  return [
    {
      kind: 'slack',
      message: (n, text) => slackHook(json(slackMessage(text, ts(n)))),
      press: (n, value, label) =>
        slackHook(`payload=${encodeURIComponent(json(slackButton(value, label, ts(n), ts(1))))}`, 'application/x-www-form-urlencoded'),
      read: (call) => {
        const blocks = (call.body.blocks ?? []) as { type: string; elements?: { value: string }[] }[];
        return { text: String(call.body.text), choices: blocks.flatMap((b) => (b.type === 'actions' ? b.elements!.map((e) => e.value) : [])) };
      },
      forged: (n) => slackHook(json(slackMessage('hello', ts(n))), 'application/json', 'f'.repeat(32)),
    },
    {
      kind: 'telegram',
      message: (n, text) => tgHook(json(telegramMessage(5000 + n, 100 + n, text))),
      press: (n, value) => tgHook(json(telegramButton(5000 + n, `4382${n}000123456789`, value))),
      read: (call) => {
        const kb = (call.body.reply_markup as { inline_keyboard: { callback_data: string }[][] } | undefined)?.inline_keyboard ?? [];
        return { text: String(call.body.text), choices: kb.flat().map((b) => b.callback_data) };
      },
      forged: (n) => tgHook(json(telegramMessage(5000 + n, 100 + n, 'hello')), 'not-the-secret-token-000'),
    },
    {
      kind: 'whatsapp',
      message: (n, text) => waHook(json(whatsappMessage(`wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQz${n}`, '16315551181', { type: 'text', text: { body: text } }))),
      press: (n, value, label) =>
        waHook(
          json(
            whatsappMessage(`wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQz${n}`, '16315551181', {
              type: 'interactive',
              interactive: { type: 'button_reply', button_reply: { id: value, title: label } },
            }),
          ),
        ),
      read: (call) => {
        if (call.body.type === 'text') return { text: String((call.body.text as { body: string }).body), choices: [] };
        const i = call.body.interactive as {
          body: { text: string };
          action: { buttons?: { reply: { id: string } }[]; sections?: { rows: { id: string }[] }[] };
        };
        return {
          text: i.body.text,
          choices: i.action.buttons ? i.action.buttons.map((b) => b.reply.id) : i.action.sections!.flatMap((s) => s.rows.map((r) => r.id)),
        };
      },
      forged: (n) => waHook(json(whatsappMessage(`wamid.forged${n}`, '16315551181', { type: 'text', text: { body: 'hello' } })), 'not-the-app-secret'),
    },
    {
      kind: 'sms',
      message: (n, text) => smsHook(twilioMessage(`SM${n.toString(16).padStart(32, 'a')}`, '+14155550100', text)),
      press: (n, _value, _label, number) => smsHook(twilioMessage(`SM${n.toString(16).padStart(32, 'a')}`, '+14155550100', String(number))),
      read: (call) => {
        const text = String(call.body.Body);
        return { text, choices: [...text.matchAll(/^(\d+)\. /gm)].map((m) => m[1]) };
      },
      forged: (n) => smsHook(twilioMessage(`SM${n.toString(16).padStart(32, 'b')}`, '+14155550100', 'hello'), '0'.repeat(32)),
    },
  ];
}

/** The app with a log that the test reads, on a fresh database. */
function channelApp(database: TestDatabase, providers: () => FakeProviders, clock: FakeClock) {
  const ctx = {} as { app: App; logs: string[]; drop: () => Promise<void>; secrets: string[] };
  beforeAll(async () => {
    const created = await database.create();
    ctx.drop = created.drop;
    ctx.logs = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        ctx.logs.push(chunk.toString('utf8'));
        done();
      },
    });
    ctx.app = createApp(
      testConfig({
        publicUrl: PUBLIC_URL,
        secretsKey: randomBytes(32),
        channels: { intervalMs: 0, concurrency: { total: 8, perTenant: 4 }, inboundPerMinute: 1000, apiUrls: providers().apiUrls },
      }),
      { db: created.db, clock, logger: pino({ level: 'debug' }, sink) },
    );
    await request(ctx.app.app).put('/api/v1/agents/helpdesk').set('tenant-id', TENANT).send(helpdesk).expect(200);
  });
  afterAll(async () => {
    await ctx.app?.close();
    await ctx.drop?.();
  });
  return ctx;
}

const SECRET_VALUES = Object.values(CREDS).flatMap((c) =>
  Object.entries(c)
    .filter(([k]) => k !== 'phone_number_id' && k !== 'from')
    .map(([, v]) => v),
);

eachDatabase('channels on $name', (database) => {
  let providers: FakeProviders;
  const clock = new FakeClock(new Date().toISOString());
  beforeAll(async () => {
    providers = await startFakeProviders();
  });
  afterAll(async () => providers?.close());
  const ctx = channelApp(database, () => providers, clock);
  const api = () => request(ctx.app.app);
  const hookIds: Partial<Record<Provider, string>> = {};

  const post = (kind: Provider, hook: Hook) => {
    const path = `/hooks/v1/${hookIds[kind]}`;
    return api()
      .post(path)
      .set('content-type', hook.type)
      .set(hook.headers(`${PUBLIC_URL}${path}`))
      .send(hook.body);
  };
  const script = (kind: Provider) => scripts(clock).find((x) => x.kind === kind)!;
  const callsOf = (kind: Provider) => providers.calls.filter((c) => c.provider === kind && c.method !== 'answerCallbackQuery' && c.method !== 'setWebhook');

  for (const script of scripts(clock)) {
    const { kind } = script;
    describe(kind, () => {
      it('connects with credentials that no response shows', async () => {
        const body = { credentials: CREDS[kind], set_webhook: kind === 'telegram' };
        const res = await api().put(`/api/v1/agents/helpdesk/channels/${kind}`).set('tenant-id', TENANT).send(body).expect(200);
        expect(res.body.webhook_url).toMatch(new RegExp(`^${PUBLIC_URL}/hooks/v1/ch_[A-Za-z0-9_-]{32}$`));
        expect(res.body.credentials).toEqual(Object.keys(CREDS[kind]).sort());
        expect(res.body.status).toBe('active');
        hookIds[kind] = String(res.body.webhook_url).split('/').at(-1);
        if (kind === 'telegram') {
          expect(res.body.webhook_set).toBe(true);
          const set = providers.calls.find((c) => c.provider === 'telegram' && c.method === 'setWebhook')!;
          expect(set.body).toMatchObject({
            url: res.body.webhook_url,
            secret_token: CREDS.telegram.secret_token,
            allowed_updates: ['message', 'callback_query'],
          });
        }
        const list = await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', TENANT).expect(200);
        expect(list.body.data.map((c: { channel: string }) => c.channel)).toContain(kind);
        for (const s of SECRET_VALUES) expect(JSON.stringify([res.body, list.body])).not.toContain(s);
        // Credentials of the wrong shape change nothing.
        const bad = await api()
          .put(`/api/v1/agents/helpdesk/channels/${kind}`)
          .set('tenant-id', TENANT)
          .send({ credentials: { bot_token: 'nope' } })
          .expect(400);
        expect(bad.body.code).toBe('validation_error');
      });

      it('holds a conversation with an option chosen by button, answering each message once', async () => {
        const before = callsOf(kind).length;
        const first = await post(kind, script.message(1, 'hello'));
        expect(first.status).toBe(200);
        await ctx.app.channels.runOnce();
        const greeting = callsOf(kind).slice(before);
        expect(greeting).toHaveLength(1);
        const shown = script.read(greeting[0]);
        expect(shown.text).toContain('Hello! I can answer billing questions');
        expect(shown.choices).toEqual(kind === 'sms' ? ['1', '2'] : ['billing question', 'talk to a human']);

        // The user presses "Billing" (SMS: replies 1).
        await post(kind, script.press(2, 'billing question', 'Billing', 1)).expect(200);
        await ctx.app.channels.runOnce();
        const topic = callsOf(kind).slice(before + 1);
        expect(topic).toHaveLength(1);
        const asked = script.read(topic[0]);
        expect(asked.text).toContain('Which billing topic is it?');
        // Four options: buttons on Slack and Telegram, a list on WhatsApp, numbered text by SMS.
        expect(asked.choices).toEqual(kind === 'sms' ? ['1', '2', '3', '4'] : ['invoice', 'refund', 'payment', 'other']);
        if (kind === 'whatsapp') expect((topic[0].body.interactive as { type: string }).type).toBe('list');
        if (kind === 'telegram') expect(providers.calls.filter((c) => c.provider === 'telegram' && c.method === 'answerCallbackQuery')).toHaveLength(1);

        // The provider delivers the same press again (a retry): processed once.
        await post(kind, script.press(2, 'billing question', 'Billing', 1)).expect(200);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before + 2);
        expect(providers.violations).toEqual([]);
      });

      it('retries a reply the provider answers 429, after its retry-after, then sends it', async () => {
        const before = callsOf(kind).length;
        const rateLimited =
          kind === 'telegram'
            ? { status: 429, body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 3', parameters: { retry_after: 3 } } }
            : kind === 'whatsapp'
              ? { status: 429, headers: { 'retry-after': '3' }, body: { error: { message: 'Rate limit hit', type: 'OAuthException', code: 130429 } } }
              : kind === 'sms'
                ? { status: 429, headers: { 'retry-after': '3' }, body: { code: 20429, message: 'Too Many Requests', status: 429 } }
                : { status: 429, headers: { 'retry-after': '3' }, body: { ok: false, error: 'ratelimited' } };
        providers.failNext(kind, rateLimited, kind === 'telegram' ? 'sendMessage' : undefined);
        await post(kind, script.press(3, 'refund', 'Refund', 2)).expect(200);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before + 1);
        let log = await api().get(`/api/v1/agents/helpdesk/channel-deliveries?channel=${kind}&limit=1`).set('tenant-id', TENANT).expect(200);
        expect(log.body.data[0]).toMatchObject({ status: 'pending', attempts: 1, last_status: 429 });
        // Not before the provider's retry-after.
        clock.advance(1000);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before + 1);
        clock.advance(3000);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before + 2);
        expect(script.read(callsOf(kind).at(-1)!).text).toContain('Noted: refund. Thank you!');
        log = await api().get(`/api/v1/agents/helpdesk/channel-deliveries?channel=${kind}&limit=1`).set('tenant-id', TENANT).expect(200);
        const d = log.body.data[0];
        // Telegram's reply to a button press starts with answerCallbackQuery, sent once: the retry resumes after it.
        const calls = kind === 'telegram' ? 2 : 1;
        expect(d).toMatchObject({ status: 'sent', attempts: 2, calls, calls_done: calls, last_status: kind === 'sms' ? 201 : 200, source: 'reply' });
        expect(d.history.map((h: { status: number }) => h.status)).toEqual([...(kind === 'telegram' ? [200] : []), 429, kind === 'sms' ? 201 : 200]);
        expect(d.provider_message_ids).toHaveLength(1);
      });

      it('starts a new conversation after one completed, and sends a person’s reply to an escalated one', async () => {
        const before = callsOf(kind).length;
        await post(kind, script.message(4, 'I want to speak to someone')).expect(200);
        await ctx.app.channels.runOnce();
        expect(script.read(callsOf(kind).at(-1)!).text).toContain('A colleague will take over here shortly.');
        const list = await api().get(`/api/v1/agents/helpdesk/conversations?channel=${kind}`).set('tenant-id', TENANT).expect(200);
        expect(list.body.data).toHaveLength(2);
        const [escalated, completed] = list.body.data as { id: string; status: string; user_id: string; channel: unknown }[];
        expect(escalated.status).toBe('escalated');
        expect(completed.status).toBe('completed');
        expect(escalated.user_id.startsWith(`${kind}:`)).toBe(true);
        expect(escalated.channel).toEqual({ kind, origin: null, page_url: null });

        await api()
          .post(`/api/v1/agents/helpdesk/conversations/${escalated.id}/messages`)
          .set('tenant-id', TENANT)
          .send({ message: 'Hi, this is Dana from support. How can I help?', author: 'dana' })
          .expect(201);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before + 2);
        expect(script.read(callsOf(kind).at(-1)!).text).toBe('Hi, this is Dana from support. How can I help?');
        const log = await api().get(`/api/v1/agents/helpdesk/channel-deliveries?conversation_id=${escalated.id}`).set('tenant-id', TENANT).expect(200);
        expect(log.body.data.map((d: { source: string; status: string }) => [d.source, d.status])).toEqual([
          ['operator', 'sent'],
          ['reply', 'sent'],
        ]);

        // Every send is in the conversation's audit log, chained.
        const audit = await api()
          .get(`/api/v1/agents/helpdesk/conversations/${escalated.id}/audit-logs?type=channel_delivery`)
          .set('tenant-id', TENANT)
          .expect(200);
        expect(
          audit.body.data.map((e: { data: { source: string; status: string; channel: string } }) => [e.data.channel, e.data.source, e.data.status]),
        ).toEqual([
          [kind, 'reply', 'sent'],
          [kind, 'operator', 'sent'],
        ]);
        const verified = await api().get(`/api/v1/agents/helpdesk/conversations/${escalated.id}/audit-logs/verify`).set('tenant-id', TENANT).expect(200);
        expect(verified.body.valid).toBe(true);
        expect(providers.violations).toEqual([]);
      });

      it('refuses a forged signature with 401 and stores nothing', async () => {
        const before = callsOf(kind).length;
        const inboundRows = async () =>
          Number((await ctx.app.channels['deps'].store.knex('channel_inbound').where({ channel_id: hookIds[kind] }).count({ n: '*' }))[0].n);
        const stored = await inboundRows();
        const res = await post(kind, script.forged(9));
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('invalid_signature');
        if (kind === 'slack') {
          // A signature that was right five minutes and more ago.
          const hook = script.message(10, 'hello');
          const old = slackHeaders(hook.body, new Date(clock.now().getTime() - 301_000));
          const stale = await api().post(`/hooks/v1/${hookIds.slack}`).set('content-type', hook.type).set(old).send(hook.body);
          expect(stale.status).toBe(401);
          expect(stale.body.detail).toContain('stale');
        }
        const unsigned = await api().post(`/hooks/v1/${hookIds[kind]}`).set('content-type', 'application/json').send('{}');
        expect(unsigned.status).toBe(401);
        await ctx.app.channels.runOnce();
        expect(callsOf(kind).length).toBe(before);
        // Nothing more than before the refused requests, whatever the earlier tests stored.
        expect(await inboundRows()).toBe(stored);
      });

      it('keeps credentials out of every response, log line and audit entry', async () => {
        const conversations = await api().get(`/api/v1/agents/helpdesk/conversations?channel=${kind}`).set('tenant-id', TENANT).expect(200);
        const everything = [JSON.stringify(conversations.body)];
        for (const c of conversations.body.data as { id: string }[]) {
          everything.push(
            JSON.stringify((await api().get(`/api/v1/agents/helpdesk/conversations/${c.id}/audit-logs`).set('tenant-id', TENANT).expect(200)).body),
          );
          everything.push(JSON.stringify((await api().get(`/api/v1/agents/helpdesk/conversations/${c.id}`).set('tenant-id', TENANT).expect(200)).body));
        }
        everything.push(
          JSON.stringify((await api().get(`/api/v1/agents/helpdesk/channel-deliveries?channel=${kind}`).set('tenant-id', TENANT).expect(200)).body),
        );
        everything.push(ctx.logs.join(''));
        const all = everything.join('\n');
        expect(ctx.logs.length).toBeGreaterThan(0);
        for (const s of SECRET_VALUES) expect(all).not.toContain(s);
      });
    });
  }

  it('counts by channel in analytics and metrics', async () => {
    const analytics = await api().get('/api/v1/agents/helpdesk/analytics').set('tenant-id', TENANT).expect(200);
    const byChannel = Object.fromEntries((analytics.body.channels as { channel: string; started: number }[]).map((c) => [c.channel, c.started]));
    expect(byChannel).toMatchObject({ api: 0, web: 0, slack: 2, telegram: 2, whatsapp: 2, sms: 2 });
    const metrics = await api().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/switchboard_channel_messages_total\{channel="slack",outcome="duplicate"\} 1/);
    expect(metrics.text).toMatch(/switchboard_channel_messages_total\{channel="whatsapp",outcome="refused"\} 2/);
    expect(metrics.text).toMatch(/switchboard_channel_deliveries_total\{channel="telegram",status="retried"\} 1/);
    expect(metrics.text).toMatch(/switchboard_channel_deliveries_total\{channel="sms",status="sent"\} \d+/);
  });

  it('says why an update was not answered: a log line and the channel’s list of ignored updates, once a minute per reason', async () => {
    const logged = ctx.logs.length;
    const press = (n: number) => ({
      type: 'application/json',
      body: JSON.stringify({ update_id: 9000 + n, callback_query: { id: `cq-${n}`, from: { id: 77 } } }),
      headers: () => ({ 'x-telegram-bot-api-secret-token': CREDS.telegram.secret_token }),
    });
    await post('telegram', press(1)).expect(200);
    await post('telegram', press(2)).expect(200);
    const lines = ctx.logs.slice(logged).filter((l) => l.includes('telegram update ignored'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/telegram update ignored: incomplete callback_query/);
    const list = await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', TENANT).expect(200);
    const telegram = (list.body.data as { channel: string; ignored: { at: string; reason: string }[] }[]).find((c) => c.channel === 'telegram')!;
    expect(telegram.ignored[0]).toEqual({ at: clock.now().toISOString(), reason: 'incomplete callback_query' });
    expect(telegram.ignored.filter((e) => e.reason === 'incomplete callback_query')).toHaveLength(1);
  });

  it('answers Slack’s url_verification challenge, signed like every request', async () => {
    const body = json({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' });
    const ok = await api()
      .post(`/hooks/v1/${hookIds.slack}`)
      .set('content-type', 'application/json')
      .set(slackHeaders(body, clock.now()))
      .send(body)
      .expect(200);
    expect(ok.text).toBe('3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
    await api().post(`/hooks/v1/${hookIds.slack}`).set('content-type', 'application/json').send(body).expect(401);
  });

  it('retries a reply the provider answers with nonsense (a 502 page, then JSON it cannot read), and sends it', async () => {
    const before = callsOf('whatsapp').length;
    providers.failNext('whatsapp', { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad gateway</html>' });
    // A user of their own: the others' conversation is with a person now.
    const body = json(whatsappMessage('wamid.nonsense1', '16315551199', { type: 'text', text: { body: 'hello' } }));
    await post('whatsapp', { type: 'application/json', body, headers: () => whatsappHeaders(body) }).expect(200);
    await ctx.app.channels.runOnce();
    let log = await api().get('/api/v1/agents/helpdesk/channel-deliveries?channel=whatsapp&limit=1').set('tenant-id', TENANT).expect(200);
    expect(log.body.data[0]).toMatchObject({ status: 'pending', attempts: 1, last_status: 502 });
    clock.advance(3000);
    await ctx.app.channels.runOnce();
    log = await api().get('/api/v1/agents/helpdesk/channel-deliveries?channel=whatsapp&limit=1').set('tenant-id', TENANT).expect(200);
    expect(log.body.data[0]).toMatchObject({ status: 'sent', attempts: 2 });
    expect(callsOf('whatsapp').length).toBe(before + 2);
  });

  /** An SMS from a number of its own, so that each test has its own user and conversation. */
  const smsFrom = (from: string, n: number, text: string): Hook => {
    const params = twilioMessage(`SM${n.toString(16).padStart(32, 'c')}`, from, text);
    return { type: 'application/x-www-form-urlencoded', body: new URLSearchParams(params).toString(), headers: (url) => twilioHeaders(url, params) };
  };
  const lastDelivery = async (kind: Provider) =>
    (await api().get(`/api/v1/agents/helpdesk/channel-deliveries?channel=${kind}&limit=1`).set('tenant-id', TENANT).expect(200)).body.data[0] as Record<
      string,
      unknown
    >;

  it('fails a reply the provider refuses for good (a 400) at its first attempt, and calls no more', async () => {
    providers.failNext('sms', { status: 400, body: { code: 21211, message: "The 'To' number is not a valid phone number." } });
    await post('sms', smsFrom('+14155550161', 1, 'hello')).expect(200);
    await ctx.app.channels.runOnce();
    expect(await lastDelivery('sms')).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_status: 400,
      last_error: "21211: The 'To' number is not a valid phone number.",
    });
    const calls = callsOf('sms').length;
    clock.advance(3_600_000);
    await ctx.app.channels.runOnce();
    expect(callsOf('sms').length).toBe(calls);
  });

  it('gives a reply up after its last backoff, when every attempt failed', async () => {
    for (let i = 0; i < 8; i++) providers.failNext('sms', { status: 503, body: { code: 20503, message: 'Service Unavailable' } });
    await post('sms', smsFrom('+14155550162', 2, 'hello')).expect(200);
    await ctx.app.channels.runOnce();
    const attempts: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const d = await lastDelivery('sms');
      attempts.push(d.attempts);
      if (d.status !== 'pending') break;
      clock.advance(1_800_001);
      await ctx.app.channels.runOnce();
    }
    // Seven backoffs, so eight attempts, then no more.
    expect(await lastDelivery('sms')).toMatchObject({ status: 'failed', attempts: 8, last_status: 503 });
    expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('holds the replies of a paused channel and sends them once it is resumed', async () => {
    await post('sms', smsFrom('+14155550163', 3, 'hello')).expect(200);
    await ctx.app.channels.runOnce();
    const list = await api().get('/api/v1/agents/helpdesk/conversations?channel=sms').set('tenant-id', TENANT).expect(200);
    const conversation = list.body.data.find((c: { user_id: string }) => c.user_id === 'sms:+14155550163') as { id: string };
    await api().patch('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ status: 'paused' }).expect(200);
    const before = callsOf('sms').length;
    try {
      // A person's reply while the channel is paused: queued, not sent.
      await api()
        .post(`/api/v1/agents/helpdesk/conversations/${conversation.id}/messages`)
        .set('tenant-id', TENANT)
        .send({ message: 'A colleague here: held for now.' })
        .expect(201);
      await ctx.app.channels.runOnce();
      clock.advance(120_000);
      await ctx.app.channels.runOnce();
      expect(callsOf('sms').length).toBe(before);
      expect(await lastDelivery('sms')).toMatchObject({ status: 'pending', attempts: 0 });
    } finally {
      await api().patch('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ status: 'active' }).expect(200);
    }
    clock.advance(61_000);
    await ctx.app.channels.runOnce();
    expect(
      callsOf('sms')
        .slice(before)
        .map((c) => String(c.body.Body)),
    ).toEqual(['A colleague here: held for now.']);
    expect(await lastDelivery('sms')).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it("answers 404 for a channel whose stored credentials no longer decrypt, says so in the log and in a reply's delivery, and lists the channel still", async () => {
    const store = ctx.app.channels['deps'].store;
    const [row] = await store.knex('channels').where({ id: hookIds.sms }).select('credentials', 'agent_id');
    const sent = await lastDelivery('sms');
    const sealed = JSON.parse(row.credentials as string) as Record<string, unknown>;
    // The ciphertext altered: its authentication tag no longer matches.
    const altered = Object.fromEntries(
      Object.entries(sealed).map(([k, v]) => [k, typeof v === 'string' && v.length > 8 ? `${v.slice(0, -4)}${v.endsWith('AAAA') ? 'BBBB' : 'AAAA'}` : v]),
    );
    await store
      .knex('channels')
      .where({ id: hookIds.sms })
      .update({ credentials: JSON.stringify(altered) });
    try {
      const logged = ctx.logs.length;
      await post('sms', smsFrom('+14155550164', 4, 'hello')).expect(404);
      expect(ctx.logs.slice(logged).join('')).toMatch(/stored channel credentials do not decrypt/);
      const list = await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', TENANT).expect(200);
      expect(list.body.data.map((c: { channel: string }) => c.channel)).toContain('sms');
      // A reply queued meanwhile fails, and says why: not "channel removed", since it is not.
      await store.enqueue({
        tenantId: TENANT,
        agentId: row.agent_id as string,
        channelId: hookIds.sms!,
        kind: 'sms',
        conversationId: sent.conversation_id as string,
        userKey: '+14155550164',
        source: 'operator',
        sourceKey: 'op:unreadable',
        calls: [{ method: 'Messages', body: { Body: 'never sent' } }],
        now: clock.now().toISOString(),
      });
      await ctx.app.channels.runOnce();
      expect(await lastDelivery('sms')).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/^channel credentials do not decrypt/) });
    } finally {
      await store.knex('channels').where({ id: hookIds.sms }).update({ credentials: row.credentials });
    }
    await post('sms', smsFrom('+14155550164', 5, 'hello')).expect(200);
    await ctx.app.channels.runOnce();
    expect(await lastDelivery('sms')).toMatchObject({ status: 'sent' });
  });

  it('holds a user’s messages back after a passing failure of the turn, then answers them', async () => {
    const conversations = ctx.app.conversations;
    const real = conversations.converse.bind(conversations);
    let failures = 1;
    conversations.converse = async (call) => {
      if (failures-- > 0) throw new UnavailableError();
      return real(call);
    };
    try {
      // This user's replies only: other tests' deliveries may be due as the clock moves.
      const mine = () => callsOf('whatsapp').filter((c) => c.body.to === '16315551177');
      const before = mine().length;
      const body = json(whatsappMessage('wamid.passing1', '16315551177', { type: 'text', text: { body: 'hello' } }));
      await post('whatsapp', { type: 'application/json', body, headers: () => whatsappHeaders(body) }).expect(200);
      await ctx.app.channels.runOnce();
      await ctx.app.channels.runOnce();
      // Not tried again at once, by this process or another.
      expect(mine().length).toBe(before);
      const row = await ctx.app.channels['deps'].store.knex('channel_inbound').where({ message_key: 'wamid.passing1' }).first();
      expect(row).toMatchObject({ status: 'pending', attempts: 1 });
      clock.advance(6000);
      await ctx.app.channels.runOnce();
      expect(mine().length).toBe(before + 1);
      expect(script('whatsapp').read(mine().at(-1)!).text).toContain('Hello!');
    } finally {
      conversations.converse = real;
    }
  });

  it('stores nothing when Telegram refuses setWebhook (502 channel_setup_failed)', async () => {
    const before = await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', TENANT).expect(200);
    providers.failNext('telegram', { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } }, 'setWebhook');
    const res = await api()
      .put('/api/v1/agents/helpdesk/channels/telegram')
      .set('tenant-id', TENANT)
      .send({ credentials: { bot_token: CREDS.telegram.bot_token }, set_webhook: true })
      .expect(502);
    expect(res.body.code).toBe('channel_setup_failed');
    expect(res.body.detail).toContain('Unauthorized');
    const after = await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', TENANT).expect(200);
    expect(after.body).toEqual(before.body);
  });

  it('answers WhatsApp’s verification request with the challenge for the right verify token only', async () => {
    const path = `/hooks/v1/${hookIds.whatsapp}`;
    const ok = await api().get(`${path}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${CREDS.whatsapp.verify_token}`).expect(200);
    expect(ok.text).toBe('1158201444');
    await api().get(`${path}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=wrong-token`).expect(403);
  });

  it('refuses a WhatsApp reply outside the 24-hour window, audited', async () => {
    const conversations = await api().get('/api/v1/agents/helpdesk/conversations?channel=whatsapp&status=escalated').set('tenant-id', TENANT).expect(200);
    const id = conversations.body.data[0].id as string;
    clock.advance(25 * 3600_000);
    const before = callsOf('whatsapp').length;
    await api().post(`/api/v1/agents/helpdesk/conversations/${id}/messages`).set('tenant-id', TENANT).send({ message: 'Are you still there?' }).expect(201);
    await ctx.app.channels.runOnce();
    expect(callsOf('whatsapp').length).toBe(before);
    const log = await api().get(`/api/v1/agents/helpdesk/channel-deliveries?conversation_id=${id}&limit=1`).set('tenant-id', TENANT).expect(200);
    expect(log.body.data[0]).toMatchObject({ status: 'refused', source: 'operator', attempts: 1 });
    expect(log.body.data[0].last_error).toContain('24-hour window');
    const audit = await api().get(`/api/v1/agents/helpdesk/conversations/${id}/audit-logs?type=channel_delivery`).set('tenant-id', TENANT).expect(200);
    expect(audit.body.data.at(-1).data).toMatchObject({ status: 'refused', channel: 'whatsapp', source: 'operator' });
  });

  it('erases a channel user: their record, their messages’ keys and their deliveries’ text', async () => {
    const res = await api()
      .delete(`/api/v1/users/${encodeURIComponent('telegram:1111111')}/conversations`)
      .set('tenant-id', TENANT)
      .expect(200);
    expect(res.body.erased).toBe(2);
    const knex = ctx.app.channels['deps'].store.knex;
    expect(await knex('channel_users').where({ channel_id: hookIds.telegram })).toHaveLength(0);
    const inbound = await knex('channel_inbound').where({ channel_id: hookIds.telegram });
    expect(inbound.length).toBeGreaterThan(0);
    expect(inbound.filter((r: { user_key: string; payload: string | null }) => r.user_key !== 'erased' || r.payload !== null)).toEqual([]);
    const deliveries = await knex('channel_deliveries').where({ channel_id: hookIds.telegram });
    expect(deliveries.filter((r: { user_key: string; calls: string | null }) => r.user_key !== 'erased' || r.calls !== null)).toEqual([]);
  });

  it('forgets the ids of messages processed more than 8 days ago, and only those', async () => {
    const knex = ctx.app.channels['deps'].store.knex;
    const count = async () => Number((await knex('channel_inbound').count({ n: '*' }))[0].n);
    expect(await count()).toBeGreaterThan(1);
    clock.advance(24 * 3600_000);
    const body = json(whatsappMessage('wamid.recent1', '16315551166', { type: 'text', text: { body: 'hello' } }));
    await post('whatsapp', { type: 'application/json', body, headers: () => whatsappHeaders(body) }).expect(200);
    await ctx.app.channels.runOnce();
    // Everything else was received more than 8 days before this pass; the new message 2 days.
    clock.advance(8 * 24 * 3600_000 - 3600_000);
    await ctx.app.channels.runOnce();
    expect(await knex('channel_inbound').pluck('message_key')).toEqual(['wamid.recent1']);
    clock.advance(2 * 3600_000);
    await ctx.app.channels.runOnce();
    expect(await count()).toBe(0);
  });

  it('pauses, resumes and removes a channel; a removed channel’s URL answers 404 and its credentials are gone', async () => {
    const paused = await api().patch('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ status: 'paused' }).expect(200);
    expect(paused.body.status).toBe('paused');
    const before = callsOf('sms').length;
    const script = scripts(clock).find((s) => s.kind === 'sms')!;
    await post('sms', script.message(20, 'hello')).expect(200);
    await ctx.app.channels.runOnce();
    expect(callsOf('sms').length).toBe(before);
    await api().patch('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ status: 'active' }).expect(200);
    await api().delete('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).expect(204);
    await post('sms', script.message(21, 'hello')).expect(404);
    const rows = await ctx.app.channels['deps'].store.knex('channels').where({ id: hookIds.sms });
    expect(rows).toHaveLength(0);
    await api().patch('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ status: 'active' }).expect(404);
    // Another tenant sees none of this agent's channels.
    await api().get('/api/v1/agents/helpdesk/channels').set('tenant-id', 'globex').expect(404);
  });
});

// Behind a proxy that serves the service under a path: Twilio signs the URL it was given, which
// is PUBLIC_URL with its path.
describe('a channel behind PUBLIC_URL with a path', () => {
  let app: App;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await databases[0].create();
    drop = created.drop;
    app = createApp(testConfig({ publicUrl: 'https://example.com/switchboard/', secretsKey: randomBytes(32) }), {
      db: created.db,
      logger: pino({ level: 'silent' }),
    });
    await request(app.app).put('/api/v1/agents/helpdesk').set('tenant-id', TENANT).send(helpdesk).expect(200);
  });
  afterAll(async () => {
    await app?.close();
    await drop?.();
  });

  it('checks the signature of the URL it gave', async () => {
    const res = await request(app.app).put('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ credentials: CREDS.sms }).expect(200);
    const url = res.body.webhook_url as string;
    expect(url).toMatch(/^https:\/\/example\.com\/switchboard\/hooks\/v1\/ch_/);
    const params = twilioMessage(`SM${'c'.repeat(32)}`, '+14155550111', 'hello');
    // The proxy passes the request on without the path it serves the service under.
    await request(app.app)
      .post(new URL(url).pathname.replace('/switchboard', ''))
      .set('content-type', 'application/x-www-form-urlencoded')
      .set(twilioHeaders(url, params))
      .send(new URLSearchParams(params).toString())
      .expect(200);
  });

  it("limits one channel's inbound messages a minute (429 with retry-after), and the other channels keep theirs", async () => {
    const created = await databases[0].create();
    const base = testConfig({ publicUrl: PUBLIC_URL, secretsKey: randomBytes(32) });
    const limited = createApp({ ...base, channels: { ...base.channels, inboundPerMinute: 2 } }, { db: created.db, logger: pino({ level: 'silent' }) });
    try {
      await request(limited.app).put('/api/v1/agents/helpdesk').set('tenant-id', TENANT).send(helpdesk).expect(200);
      await request(limited.app).put('/api/v1/agents/other').set('tenant-id', TENANT).send(helpdesk).expect(200);
      const connect = async (slug: string) =>
        String(
          (await request(limited.app).put(`/api/v1/agents/${slug}/channels/sms`).set('tenant-id', TENANT).send({ credentials: CREDS.sms }).expect(200)).body
            .webhook_url,
        );
      const [busy, quiet] = [await connect('helpdesk'), await connect('other')];
      const send = (url: string, n: number) => {
        const params = twilioMessage(`SM${n.toString(16).padStart(32, 'd')}`, '+14155550171', 'hello');
        return request(limited.app)
          .post(new URL(url).pathname)
          .set('content-type', 'application/x-www-form-urlencoded')
          .set(twilioHeaders(url, params))
          .send(new URLSearchParams(params).toString());
      };
      expect([(await send(busy, 1)).status, (await send(busy, 2)).status]).toEqual([200, 200]);
      const refused = await send(busy, 3);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await created.db.knex('channel_inbound').where({ message_key: `SM${(3).toString(16).padStart(32, 'd')}` })).toHaveLength(0);
      expect((await send(quiet, 4)).status).toBe(200);
    } finally {
      await limited.close();
      await created.drop();
    }
  });

  it('says why a channel cannot be connected without SECRETS_KEY', async () => {
    const created = await databases[0].create();
    const keyless = createApp(testConfig(), { db: created.db, logger: pino({ level: 'silent' }) });
    try {
      await request(keyless.app).put('/api/v1/agents/helpdesk').set('tenant-id', TENANT).send(helpdesk).expect(200);
      const res = await request(keyless.app).put('/api/v1/agents/helpdesk/channels/sms').set('tenant-id', TENANT).send({ credentials: CREDS.sms }).expect(409);
      expect(res.body.detail).toBe('Channel credentials are kept encrypted, and this server has no key for them: the operator has to set SECRETS_KEY');
    } finally {
      await keyless.close();
      await created.drop();
    }
  });
});

describe('channel adapters', () => {
  it("checks Twilio's signature as its documentation's example computes it", () => {
    // https://www.twilio.com/docs/usage/security (auth token 12345, the documented URL and parameters)
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675310', Digits: '1234', From: '+14158675310', To: '+18005551212' };
    expect(twilioSignature('12345', url, Object.entries(params))).toBe('GvWf1cFY/Q7PnoempGyD5oXAezc=');
    expect(twilioSignature('12345', url, Object.entries({ ...params, Caller: '+14158675309', From: '+14158675309' }))).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
  });

  it("checks Slack's signature as its documentation's example computes it, within five minutes of its timestamp", () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack (the documented secret, timestamp, body and signature)
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const req = (signature: string, raw = body) => ({
      method: 'POST',
      url: 'https://switchboard.example.com/hooks/v1/ch_x',
      query: {},
      headers: { 'x-slack-request-timestamp': '1531420618', 'x-slack-signature': signature },
      body: Buffer.from(raw),
    });
    const creds = { bot_token: 'xoxb-1', signing_secret: '8f742231b10e8888abcd99yyyzzz85a5' };
    const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
    const at = (seconds: number) => new Date((1531420618 + seconds) * 1000);
    expect(ADAPTERS.slack.verify(req(signature), creds, at(30))).toBeNull();
    expect(ADAPTERS.slack.verify(req(signature, `${body}&x=1`), creds, at(30))).toBe('X-Slack-Signature does not match');
    expect(ADAPTERS.slack.verify(req(signature), creds, at(301))).toMatch(/stale/);
  });

  it("checks WhatsApp's X-Hub-Signature-256 as the scheme's published example computes it", () => {
    // Meta signs as GitHub does (sha256= and the HMAC-SHA256 of the raw body, in hex); GitHub's
    // documentation publishes the example: https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries
    const req = (signature: string, raw = 'Hello, World!') => ({
      method: 'POST',
      url: '',
      query: {},
      headers: { 'x-hub-signature-256': signature },
      body: Buffer.from(raw),
    });
    const creds = { access_token: 't', app_secret: "It's a Secret to Everybody", phone_number_id: '1', verify_token: 'v' };
    const signature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(ADAPTERS.whatsapp.verify(req(signature), creds, new Date())).toBeNull();
    expect(ADAPTERS.whatsapp.verify(req(signature, 'Hello, World?'), creds, new Date())).toBe('X-Hub-Signature-256 does not match');
  });

  it('splits long replies at the provider’s limit, at a break where one falls near it', () => {
    const long = `${'word '.repeat(900)}end`;
    const pieces = splitText(long, 1600);
    expect(pieces.every((p) => Array.from(p).length <= 1600)).toBe(true);
    expect(pieces.join(' ').replace(/\s+/g, ' ')).toBe(long.replace(/\s+/g, ' '));
    const calls = ADAPTERS.sms.render({ text: long, options: [] }, { to: '+14155550100' });
    expect(calls.length).toBe(pieces.length);
    const tg = ADAPTERS.telegram.render({ text: 'x'.repeat(9000), options: [{ label: 'A', value: 'a' }] }, { chat_id: '1' });
    expect(tg.map((c) => Array.from(String(c.body.text)).length)).toEqual([4096, 4096, 808]);
    expect(tg.at(-1)!.body.reply_markup).toBeDefined();
  });

  it('adapts options a channel cannot show: beyond ten on WhatsApp, long values by number', () => {
    const options = Array.from({ length: 12 }, (_, i) => ({ label: `Option number ${i + 1}`, value: `v${i + 1}` }));
    const wa = ADAPTERS.whatsapp.render({ text: 'Pick one', options }, { to: '16315551181' });
    expect(wa).toHaveLength(1);
    expect(wa[0].body.type).toBe('text');
    expect(String((wa[0].body.text as { body: string }).body)).toContain('12. Option number 12');
    const longValue = 'x'.repeat(100);
    const tg = ADAPTERS.telegram.render({ text: 'Pick', options: [{ label: 'Long', value: longValue }] }, { chat_id: '1' });
    const data = (tg[0].body.reply_markup as { inline_keyboard: { callback_data: string }[][] }).inline_keyboard[0][0].callback_data;
    expect(data).toBe('#1');
    expect(chosen({ text: '#1', choice: '#1' }, [{ label: 'Long', value: longValue }])).toBe(longValue);
    expect(chosen({ text: '2' }, options)).toBe('v2');
    expect(chosen({ text: 'option number 3' }, options)).toBe('v3');
    expect(chosen({ text: 'something else' }, options)).toBe('something else');
  });
});

// Two replicas on one PostgreSQL database, the provider delivering the same message to both at
// once (a retry on a slow answer) while both work their queues: one turn, one reply.
describe.skipIf(!process.env.TEST_DATABASE_URL)('channels across two replicas on postgres', () => {
  const clock = new FakeClock(new Date().toISOString());
  let providers: FakeProviders;
  let drop: () => Promise<void>;
  const apps: App[] = [];
  let second: Database;
  beforeAll(async () => {
    providers = await startFakeProviders();
    const postgres = databases.find((d) => d.name === 'postgres')!;
    const created = await postgres.create();
    drop = created.drop;
    const key = randomBytes(32);
    const config = testConfig({
      publicUrl: PUBLIC_URL,
      secretsKey: key,
      channels: { intervalMs: 0, concurrency: { total: 8, perTenant: 4 }, inboundPerMinute: 1000, apiUrls: providers.apiUrls },
    });
    second = openDatabase(created.url, { poolMax: 20 });
    apps.push(
      createApp(config, { db: created.db, clock, logger: pino({ level: 'silent' }) }),
      createApp(config, { db: second, clock, logger: pino({ level: 'silent' }) }),
    );
    await request(apps[0].app).put('/api/v1/agents/helpdesk').set('tenant-id', TENANT).send(helpdesk).expect(200);
  });
  afterAll(async () => {
    for (const a of apps) await a.close();
    await second?.close();
    await drop?.();
    await providers?.close();
  });

  it('processes a message delivered to both replicas at once exactly once', async () => {
    const res = await request(apps[0].app)
      .put('/api/v1/agents/helpdesk/channels/whatsapp')
      .set('tenant-id', TENANT)
      .send({ credentials: CREDS.whatsapp })
      .expect(200);
    const path = new URL(res.body.webhook_url as string).pathname;
    const messages = ['hello', 'billing please', 'I was charged twice'].map((text, i) =>
      json(whatsappMessage(`wamid.replicas${i}`, '16315551182', { type: 'text', text: { body: text } })),
    );
    for (const body of messages) {
      // Each message reaches both replicas at the same moment.
      const answers = await Promise.all(
        apps.map((a) => request(a.app).post(path).set('content-type', 'application/json').set(whatsappHeaders(body)).send(body)),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
    }
    await Promise.all(apps.map((a) => a.channels.runOnce()));
    await Promise.all(apps.map((a) => a.channels.runOnce()));
    const sent = providers.calls.filter((c) => c.provider === 'whatsapp' && c.body.to === '16315551182');
    expect(sent).toHaveLength(3);
    // In the order the user wrote.
    const texts = sent.map((c) =>
      c.body.type === 'text' ? (c.body.text as { body: string }).body : (c.body.interactive as { body: { text: string } }).body.text,
    );
    expect(texts[0]).toContain('Hello!');
    expect(texts[1]).toContain('Which billing topic is it?');
    const list = await request(apps[1].app).get('/api/v1/agents/helpdesk/conversations?channel=whatsapp').set('tenant-id', TENANT).expect(200);
    expect(list.body.data).toHaveLength(1);
    const history = await request(apps[1].app)
      .get(`/api/v1/agents/helpdesk/conversations/${list.body.data[0].id}/history`)
      .set('tenant-id', TENANT)
      .expect(200);
    expect(history.body.turns.filter((t: { role: string }) => t.role === 'user').map((t: { message: string }) => t.message)).toEqual([
      'hello',
      'billing please',
      'I was charged twice',
    ]);
    expect(providers.violations).toEqual([]);
  });
});
