// Telegram: the Bot API's webhook (message and callback_query updates), checked by the secret
// token given to setWebhook (X-Telegram-Bot-Api-Secret-Token); replies by sendMessage, options as
// an inline keyboard, a button press answered with answerCallbackQuery.
// https://core.telegram.org/bots/api#setwebhook
import { randomBytes } from 'node:crypto';
import { sameText } from '../../lib/same-text.js';
import { ChannelCredentials } from '@switchboard/contract';
import {
  choicePayload,
  clip,
  header,
  jsonOf,
  numbered,
  splitText,
  type CallResult,
  type ChannelAdapter,
  type ProviderCall,
  type ProviderHttp,
} from '../adapter.js';

type Creds = { bot_token: string; secret_token?: string };

const TEXT_MAX = 4096;
/** callback_data holds 1 to 64 bytes. */
const CALLBACK_MAX = 64;
const BUTTONS_MAX = 100;

const chatId = (v: unknown): string | undefined => (typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : undefined);

async function botCall(method: string, body: Record<string, unknown>, creds: Creds, http: ProviderHttp): Promise<CallResult> {
  // The token is part of the URL: errors name the method only, never the URL.
  const res = await http.call({
    method: 'POST',
    url: `${http.base}/bot${creds.bot_token}/${method}`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = jsonOf(res.text);
  if (answer?.ok === true) {
    const result = answer.result as { message_id?: unknown } | undefined;
    return { ok: true, status: res.status, providerId: typeof result?.message_id === 'number' ? String(result.message_id) : undefined };
  }
  const description = typeof answer?.description === 'string' ? answer.description.slice(0, 200) : `HTTP ${res.status}`;
  const retryAfter = (answer?.parameters as { retry_after?: unknown } | undefined)?.retry_after;
  if (res.status === 429) return { ok: false, status: 429, error: description, retryAfter: typeof retryAfter === 'number' ? retryAfter : 1 };
  return { ok: false, status: res.status, error: description, permanent: res.status >= 400 && res.status < 500 };
}

export const telegram: ChannelAdapter<Creds> = {
  kind: 'telegram',
  label: 'Telegram',
  defaultApiUrl: 'https://api.telegram.org',
  credentials: ChannelCredentials.telegram,

  complete: (creds) => (creds.secret_token ? creds : { ...creds, secret_token: randomBytes(24).toString('base64url') }),

  verify(req, creds) {
    const given = header(req, 'x-telegram-bot-api-secret-token');
    if (!given || !creds.secret_token) return 'missing X-Telegram-Bot-Api-Secret-Token';
    return sameText(given, creds.secret_token) ? null : 'X-Telegram-Bot-Api-Secret-Token does not match';
  },

  parse(req) {
    const ok = { status: 200 };
    const update = jsonOf(req.body.toString('utf8'));
    if (!update) return { messages: [], answer: { status: 400 }, ignored: 'not JSON' };
    const m = update.message as Record<string, unknown> | undefined;
    if (m) {
      const chat = chatId((m.chat as { id?: unknown } | undefined)?.id);
      const from = (m.from ?? {}) as { is_bot?: unknown };
      const messageId = chatId(m.message_id);
      if (from.is_bot === true || !chat || !messageId) return { messages: [], answer: ok, ignored: 'bot or incomplete message' };
      if (typeof m.text !== 'string' || !m.text.trim()) return { messages: [], answer: ok, ignored: 'not a text message' };
      return { answer: ok, messages: [{ key: `m:${chat}:${messageId}`, user: chat, text: m.text.trim(), replyTo: { chat_id: chat } }] };
    }
    const q = update.callback_query as Record<string, unknown> | undefined;
    if (q) {
      const chat = chatId(((q.message as { chat?: { id?: unknown } } | undefined)?.chat ?? {}).id);
      const queryId = typeof q.id === 'string' && /^[0-9]{1,40}$/.test(q.id) ? q.id : undefined;
      if (!chat || !queryId || typeof q.data !== 'string') return { messages: [], answer: ok, ignored: 'incomplete callback_query' };
      return {
        answer: ok,
        messages: [
          {
            key: `q:${queryId}`,
            user: chat,
            text: q.data,
            choice: q.data,
            replyTo: { chat_id: chat },
            // Stops the button's spinner; sent before the reply.
            acknowledge: [{ method: 'answerCallbackQuery', body: { callback_query_id: queryId } }],
          },
        ],
      };
    }
    return { messages: [], answer: ok, ignored: 'neither message nor callback_query' };
  },

  render(reply, to) {
    const options = reply.options;
    const keyboard = options.length > 0 && options.length <= BUTTONS_MAX;
    const text = keyboard || !options.length ? reply.text : `${reply.text}\n\n${numbered(options)}`.trim();
    const pieces = splitText(text || (keyboard ? options.map((o) => o.label).join(' · ') : ''), TEXT_MAX).filter(Boolean);
    const calls: ProviderCall[] = pieces.map((t) => ({ method: 'sendMessage', body: { chat_id: Number(to.chat_id), text: t } }));
    if (keyboard && calls.length) {
      calls[calls.length - 1].body.reply_markup = {
        inline_keyboard: options.map((o, i) => [{ text: clip(o.label, 64), callback_data: choicePayload(o, i, CALLBACK_MAX) }]),
      };
    }
    return calls;
  },

  send: (call, creds, http) => botCall(call.method, call.body, creds, http),

  setWebhook: (creds, url, http) =>
    botCall('setWebhook', { url, secret_token: creds.secret_token, allowed_updates: ['message', 'callback_query'] }, creds, http),
};
