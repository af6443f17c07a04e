// Scripted messaging providers on loopback: Slack's Web API, Telegram's Bot API, WhatsApp's Cloud
// API and Twilio's Messages API on one server, each checking every call the service makes
// against the provider's documented shape (method, path, authentication, body fields and their
// limits) and answering as the provider documents. A call that breaks a rule is answered 400
// and listed in `violations`. `failNext` scripts the next answers (a 429 with retry-after).
// Also the signers: what each provider puts on the requests it sends to a webhook.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Provider = 'slack' | 'telegram' | 'whatsapp' | 'sms';

export interface ProviderCall {
  provider: Provider;
  method: string;
  /** When it arrived (performance.now()). */
  at: number;
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

interface Scripted {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export interface FakeProviders {
  url: string;
  /** Base URLs for CHANNEL_API_URLS. */
  apiUrls: Record<Provider, string>;
  calls: ProviderCall[];
  violations: string[];
  /** The next call of `provider` (of `method` only, when given) gets `answer`. */
  failNext(provider: Provider, answer: Scripted, method?: string): void;
  close(): Promise<void>;
}

export const CREDS = {
  slack: { bot_token: 'xoxb-17-29-fakeslacktoken', signing_secret: '8f742231b10e8888abcd99yyyzzz85a5' },
  telegram: { bot_token: '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', secret_token: 'telegram-secret-token-0123456789' },
  whatsapp: {
    access_token: 'EAAG-fake-whatsapp-access-token-0001',
    app_secret: 'whatsapp-app-secret-0001',
    phone_number_id: '106540352242922',
    verify_token: 'meatyhamhock',
  },
  sms: { account_sid: `AC${'a1'.repeat(16)}`, auth_token: 'f3'.repeat(16), from: '+15005550006' },
} as const;

const bytes = (s: unknown) => (typeof s === 'string' ? Buffer.byteLength(s) : -1);
const chars = (s: unknown) => (typeof s === 'string' ? Array.from(s).length : -1);

export async function startFakeProviders(): Promise<FakeProviders> {
  const calls: ProviderCall[] = [];
  const violations: string[] = [];
  const scripts: Record<Provider, (Scripted & { method?: string })[]> = { slack: [], telegram: [], whatsapp: [], sms: [] };
  let seq = 0;

  const answer = (res: ServerResponse, s: Scripted) => {
    res.writeHead(s.status, { 'content-type': 'application/json', ...(s.headers ?? {}) });
    res.end(JSON.stringify(s.body));
  };

  const handle = (provider: Provider, method: string, body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => {
    const problems: string[] = [];
    const check = (ok: boolean, what: string) => {
      if (!ok) problems.push(`${provider} ${method}: ${what}`);
    };
    let ok: Scripted;
    seq++;
    switch (provider) {
      case 'slack': {
        // https://api.slack.com/methods/chat.postMessage
        check(method === 'chat.postMessage', 'only chat.postMessage is expected');
        check(req.headers.authorization === `Bearer ${CREDS.slack.bot_token}`, 'Bearer bot token');
        check(String(req.headers['content-type']).startsWith('application/json'), 'JSON body');
        check(typeof body.channel === 'string', 'channel');
        check(typeof body.text === 'string' && chars(body.text) <= 40_000, 'text');
        if (body.blocks !== undefined) {
          const blocks = body.blocks as { type: string; text?: { type: string; text: string }; elements?: Record<string, unknown>[] }[];
          check(Array.isArray(blocks) && blocks.length <= 50, 'at most 50 blocks');
          for (const b of blocks) {
            if (b.type === 'section') check(b.text?.type === 'mrkdwn' && chars(b.text.text) >= 1 && chars(b.text.text) <= 3000, 'section text 1-3000');
            else if (b.type === 'actions') {
              check(Array.isArray(b.elements) && b.elements.length >= 1 && b.elements.length <= 25, 'actions hold 1-25 elements');
              for (const e of b.elements ?? []) {
                const t = e.text as { type?: string; text?: string } | undefined;
                check(e.type === 'button' && t?.type === 'plain_text' && chars(t.text) >= 1 && chars(t.text) <= 75, 'button text plain_text 1-75');
                check(chars(e.value) >= 0 && chars(e.value) <= 2000, 'button value up to 2000');
                check(chars(e.action_id) >= 1 && chars(e.action_id) <= 255, 'action_id');
              }
            } else check(false, `unexpected block ${b.type}`);
          }
        }
        ok = { status: 200, body: { ok: true, channel: body.channel, ts: `1732442745.${String(seq).padStart(6, '0')}`, message: { text: body.text } } };
        break;
      }
      case 'telegram': {
        // https://core.telegram.org/bots/api#sendmessage (the token is in the path)
        check(String(req.headers['content-type']).startsWith('application/json'), 'JSON body');
        if (method === 'sendMessage') {
          check(typeof body.chat_id === 'number' || typeof body.chat_id === 'string', 'chat_id');
          check(chars(body.text) >= 1 && chars(body.text) <= 4096, 'text 1-4096');
          const markup = body.reply_markup as { inline_keyboard?: { text: string; callback_data: string }[][] } | undefined;
          if (markup) {
            check(Array.isArray(markup.inline_keyboard), 'inline_keyboard');
            for (const row of markup.inline_keyboard ?? [])
              for (const b of row)
                check(chars(b.text) >= 1 && bytes(b.callback_data) >= 1 && bytes(b.callback_data) <= 64, 'button text, callback_data 1-64 bytes');
          }
          ok = { status: 200, body: { ok: true, result: { message_id: seq, date: 1732442745, chat: { id: body.chat_id, type: 'private' }, text: body.text } } };
        } else if (method === 'answerCallbackQuery') {
          check(typeof body.callback_query_id === 'string', 'callback_query_id');
          ok = { status: 200, body: { ok: true, result: true } };
        } else if (method === 'setWebhook') {
          check(typeof body.url === 'string' && String(body.url).startsWith('http'), 'url');
          check(typeof body.secret_token === 'string' && /^[A-Za-z0-9_-]{1,256}$/.test(String(body.secret_token)), 'secret_token 1-256 of A-Za-z0-9_-');
          ok = { status: 200, body: { ok: true, result: true, description: 'Webhook was set' } };
        } else {
          check(false, 'unexpected method');
          ok = { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
        }
        break;
      }
      case 'whatsapp': {
        // https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages
        check(req.headers.authorization === `Bearer ${CREDS.whatsapp.access_token}`, 'Bearer access token');
        check(body.messaging_product === 'whatsapp', 'messaging_product');
        check(typeof body.to === 'string', 'to');
        if (body.type === 'text')
          check(chars((body.text as { body?: string }).body) >= 1 && chars((body.text as { body?: string }).body) <= 4096, 'text.body 1-4096');
        else if (body.type === 'interactive') {
          const i = body.interactive as { type: string; body: { text: string }; action: Record<string, unknown> };
          check(chars(i.body?.text) >= 1 && chars(i.body?.text) <= 1024, 'interactive body 1-1024');
          if (i.type === 'button') {
            const buttons = i.action.buttons as { type: string; reply: { id: string; title: string } }[];
            check(buttons.length >= 1 && buttons.length <= 3, '1-3 reply buttons');
            for (const b of buttons)
              check(
                b.type === 'reply' && chars(b.reply.title) >= 1 && chars(b.reply.title) <= 20 && chars(b.reply.id) <= 256,
                'button title 1-20, id up to 256',
              );
          } else if (i.type === 'list') {
            check(chars(i.action.button) >= 1 && chars(i.action.button) <= 20, 'list button 1-20');
            const rows = (i.action.sections as { rows: { id: string; title: string; description?: string }[] }[]).flatMap((s) => s.rows);
            check(rows.length >= 1 && rows.length <= 10, '1-10 rows');
            for (const r of rows)
              check(
                chars(r.title) >= 1 && chars(r.title) <= 24 && chars(r.id) <= 200 && (r.description === undefined || chars(r.description) <= 72),
                'row title 1-24, id 200, description 72',
              );
          } else check(false, `interactive type ${i.type}`);
        } else check(false, `type ${String(body.type)}`);
        ok = {
          status: 200,
          body: {
            messaging_product: 'whatsapp',
            contacts: [{ input: body.to, wa_id: body.to }],
            messages: [{ id: `wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI${seq}` }],
          },
        };
        break;
      }
      case 'sms': {
        // https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource
        const basic = `Basic ${Buffer.from(`${CREDS.sms.account_sid}:${CREDS.sms.auth_token}`).toString('base64')}`;
        check(req.headers.authorization === basic, 'HTTP basic auth with the account SID and auth token');
        check(String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'), 'a form body');
        check(typeof body.To === 'string' && typeof body.From === 'string', 'To and From');
        check(chars(body.Body) >= 1 && chars(body.Body) <= 1600, 'Body 1-1600');
        const sid = `SM${seq.toString(16).padStart(32, '0')}`;
        ok = { status: 201, body: { sid, status: 'queued', to: body.To, from: body.From, body: body.Body, account_sid: CREDS.sms.account_sid } };
        break;
      }
    }
    violations.push(...problems);
    calls.push({ provider, method, at: performance.now(), body, headers: req.headers });
    if (problems.length) return answer(res, { status: 400, body: { error: problems.join('; ') } });
    const i = scripts[provider].findIndex((x) => !x.method || x.method === method);
    const scripted = i >= 0 ? scripts[provider].splice(i, 1)[0] : undefined;
    answer(res, scripted ?? ok);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://x');
      const parts = url.pathname.split('/').filter(Boolean);
      const json = () => {
        try {
          return JSON.parse(raw) as Record<string, unknown>;
        } catch {
          violations.push(`${req.url}: body is not JSON`);
          return {};
        }
      };
      if (req.method !== 'POST') {
        violations.push(`${req.method} ${req.url}: only POST is expected`);
        return answer(res, { status: 405, body: {} });
      }
      if (parts[0] === 'slack' && parts[1] === 'api') return handle('slack', parts[2], json(), req, res);
      if (parts[0] === 'telegram' && parts[1] === `bot${CREDS.telegram.bot_token}`) return handle('telegram', parts[2], json(), req, res);
      if (parts[0] === 'whatsapp' && parts[1] === 'v21.0' && parts[2] === CREDS.whatsapp.phone_number_id && parts[3] === 'messages')
        return handle('whatsapp', 'messages', json(), req, res);
      if (parts[0] === 'sms' && url.pathname === `/sms/2010-04-01/Accounts/${CREDS.sms.account_sid}/Messages.json`) {
        return handle('sms', 'Messages', Object.fromEntries(new URLSearchParams(raw)), req, res);
      }
      violations.push(`POST ${url.pathname}: no such endpoint`);
      answer(res, { status: 404, body: { error: 'not found' } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiUrls: { slack: `${url}/slack/api`, telegram: `${url}/telegram`, whatsapp: `${url}/whatsapp/v21.0`, sms: `${url}/sms` },
    calls,
    violations,
    failNext: (provider, a, method) => scripts[provider].push({ ...a, method }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Slack's request signature: `v0=` and the hex HMAC-SHA256 of `v0:<timestamp>:<body>`. */
export function slackHeaders(body: string, at: Date, secret: string = CREDS.slack.signing_secret): Record<string, string> {
  const ts = String(Math.floor(at.getTime() / 1000));
  return { 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}` };
}

/** WhatsApp's (Meta's) signature: `sha256=` and the hex HMAC-SHA256 of the body under the app secret. */
export function whatsappHeaders(body: string, secret: string = CREDS.whatsapp.app_secret): Record<string, string> {
  return { 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` };
}

/** Twilio's signature: base64 HMAC-SHA1 of the URL followed by each parameter's name and value, sorted by name. */
export function twilioHeaders(url: string, params: Record<string, string>, token: string = CREDS.sms.auth_token): Record<string, string> {
  const data = Object.keys(params)
    .sort()
    .reduce((acc, k) => acc + k + params[k], url);
  return { 'x-twilio-signature': createHmac('sha1', token).update(Buffer.from(data, 'utf8')).digest('base64') };
}

// Payloads as each provider documents them, with the fields that vary filled in.

/** Slack Events API: a message event (https://api.slack.com/events/message). */
export const slackMessage = (text: string, ts: string, user = 'U061F7AUR', channel = 'C0LAN2Q65') => ({
  token: 'one-long-verification-token',
  team_id: 'T061EG9R6',
  api_app_id: 'A0PNCHHK2',
  event: { type: 'message', channel, user, text, ts, event_ts: ts, channel_type: 'channel' },
  type: 'event_callback',
  authed_teams: [],
  event_id: `Ev0PV52K${ts.replace('.', '')}`,
  event_time: 1732442745,
});

/** Slack interactivity: a block_actions payload of a button press (https://api.slack.com/reference/interaction-payloads/block-actions). */
export const slackButton = (value: string, label: string, actionTs: string, messageTs: string, user = 'U061F7AUR', channel = 'C0LAN2Q65') => ({
  type: 'block_actions',
  user: { id: user, username: 'spengler', name: 'spengler', team_id: 'T061EG9R6' },
  api_app_id: 'A0PNCHHK2',
  token: 'one-long-verification-token',
  container: { type: 'message', message_ts: messageTs, channel_id: channel, is_ephemeral: false, thread_ts: messageTs },
  trigger_id: `12466734323.1395872398.${actionTs.replace('.', '')}`,
  team: { id: 'T061EG9R6', domain: 'ghostbusters' },
  channel: { id: channel, name: 'general' },
  message: { type: 'message', ts: messageTs, text: 'Hello', thread_ts: messageTs },
  response_url: 'https://hooks.slack.com/actions/T061EG9R6/1234/abcd',
  actions: [{ action_id: 'sb_option_1', block_id: 'b1', text: { type: 'plain_text', text: label, emoji: true }, value, type: 'button', action_ts: actionTs }],
});

/** Telegram: an Update with a message (https://core.telegram.org/bots/api#update). */
export const telegramMessage = (updateId: number, messageId: number, text: string, chatId = 1111111) => ({
  update_id: updateId,
  message: {
    message_id: messageId,
    from: { id: chatId, is_bot: false, first_name: 'Test', language_code: 'en' },
    chat: { id: chatId, first_name: 'Test', type: 'private' },
    date: 1732442745,
    text,
  },
});

/** Telegram: an Update with a callback_query (a button of an inline keyboard). */
export const telegramButton = (updateId: number, queryId: string, data: string, chatId = 1111111) => ({
  update_id: updateId,
  callback_query: {
    id: queryId,
    from: { id: chatId, is_bot: false, first_name: 'Test' },
    message: { message_id: 7, chat: { id: chatId, type: 'private' }, date: 1732442745, text: 'Hello' },
    chat_instance: '-8801521196393430',
    data,
  },
});

/** WhatsApp Cloud API: a messages notification (text or an interactive reply). */
export const whatsappMessage = (id: string, from: string, message: Record<string, unknown>) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      changes: [
        {
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550783881', phone_number_id: CREDS.whatsapp.phone_number_id },
            contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: from }],
            messages: [{ from, id, timestamp: '1732442745', ...message }],
          },
          field: 'messages',
        },
      ],
    },
  ],
});

/** Twilio: the parameters of an incoming SMS (https://www.twilio.com/docs/messaging/guides/webhook-request). */
export const twilioMessage = (sid: string, from: string, body: string): Record<string, string> => ({
  ToCountry: 'US',
  ToState: 'CA',
  SmsMessageSid: sid,
  NumMedia: '0',
  ToCity: '',
  FromZip: '',
  SmsSid: sid,
  FromState: 'CA',
  SmsStatus: 'received',
  FromCity: 'SAN FRANCISCO',
  Body: body,
  FromCountry: 'US',
  To: CREDS.sms.from,
  ToZip: '',
  NumSegments: '1',
  MessageSid: sid,
  AccountSid: CREDS.sms.account_sid,
  From: from,
  ApiVersion: '2010-04-01',
});
