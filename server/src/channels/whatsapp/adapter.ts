// WhatsApp Cloud API: the webhook's GET verification (hub.verify_token, answered with
// hub.challenge), `messages` notifications signed with the app secret (X-Hub-Signature-256,
// HMAC-SHA256 of the body); replies by POST /{phone-number-id}/messages, up to three options as
// reply buttons, up to ten as a list, more as numbered text. Free-form replies are accepted within
// 24 hours of the user's last message.
// https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples
import { createHmac } from 'node:crypto';
import { sameText } from '../../lib/same-text.js';
import { ChannelCredentials } from '@switchboard/contract';
import {
  byStatus,
  choicePayload,
  clip,
  header,
  jsonOf,
  numbered,
  retryAfterHeader,
  splitText,
  type ChannelAdapter,
  type InboundMessage,
  type ProviderCall,
} from '../adapter.js';

type Creds = { access_token: string; app_secret: string; phone_number_id: string; verify_token: string };

const TEXT_MAX = 4096;
/** An interactive message's body holds 1,024 characters; a reply button's title 20, a list row's 24. */
const INTERACTIVE_BODY_MAX = 1024;
/** Error codes of throughput and rate limits (retried), and of the closed 24-hour window. */
const RATE_CODES = new Set([4, 80007, 130429, 131048, 131056]);
const WINDOW_CLOSED = 131047;

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
/** The objects of an array (at most `max`), whatever else it holds. */
const list = (v: unknown, max: number) => (Array.isArray(v) ? v.slice(0, max).map(rec) : []);
const waId = (v: unknown) => (typeof v === 'string' && /^\d{5,20}$/.test(v) ? v : undefined);

export const whatsapp: ChannelAdapter<Creds> = {
  kind: 'whatsapp',
  label: 'WhatsApp',
  defaultApiUrl: 'https://graph.facebook.com/v21.0',
  credentials: ChannelCredentials.whatsapp,
  replyWindowHours: 24,

  verify(req, creds) {
    const sig = header(req, 'x-hub-signature-256');
    if (!sig) return 'missing X-Hub-Signature-256';
    const expected = `sha256=${createHmac('sha256', creds.app_secret).update(req.body).digest('hex')}`;
    return sameText(sig, expected) ? null : 'X-Hub-Signature-256 does not match';
  },

  challenge(req, creds) {
    const token = req.query['hub.verify_token'];
    const challenge = req.query['hub.challenge'];
    if (req.query['hub.mode'] !== 'subscribe' || !token || !challenge || !sameText(token, creds.verify_token)) return { status: 403 };
    return { status: 200, contentType: 'text/plain; charset=utf-8', body: challenge.slice(0, 256) };
  },

  parse(req) {
    const ok = { status: 200 };
    const body = jsonOf(req.body.toString('utf8'));
    if (!body) return { messages: [], answer: { status: 400 }, ignored: 'not JSON' };
    if (body.object !== 'whatsapp_business_account') return { messages: [], answer: ok, ignored: `object ${String(body.object)}` };
    const messages: InboundMessage[] = [];
    for (const entry of list(body.entry, 50)) {
      for (const change of list(entry.changes, 50)) {
        if (change.field !== 'messages') continue;
        const value = rec(change.value);
        // Status notifications (sent, delivered, read) come on the same field without messages.
        for (const m of list(value.messages, 100)) {
          const from = waId(m.from);
          const key = typeof m.id === 'string' && m.id.length <= 200 ? m.id : undefined;
          if (!from || !key) continue;
          let text: string | undefined;
          let choice: string | undefined;
          if (m.type === 'text') text = (m.text as { body?: unknown } | undefined)?.body as string | undefined;
          else if (m.type === 'interactive') {
            const i = (m.interactive ?? {}) as Record<string, { id?: unknown; title?: unknown } | undefined>;
            const picked = i.button_reply ?? i.list_reply;
            if (typeof picked?.id === 'string') {
              choice = picked.id;
              text = typeof picked.title === 'string' ? picked.title : picked.id;
            }
          } else if (m.type === 'button') {
            const b = (m.button ?? {}) as { text?: unknown; payload?: unknown };
            text = typeof b.text === 'string' ? b.text : undefined;
            if (typeof b.payload === 'string') choice = b.payload;
          }
          if (typeof text !== 'string' || !text.trim()) continue;
          messages.push({ key, user: from, text: text.trim(), ...(choice !== undefined ? { choice } : {}), replyTo: { to: from } });
        }
      }
    }
    return { messages, answer: ok, ...(messages.length ? {} : { ignored: 'no messages (statuses or other types)' }) };
  },

  render(reply, to) {
    const base = { messaging_product: 'whatsapp', recipient_type: 'individual', to: to.to };
    const text = (t: string): ProviderCall => ({ method: 'messages', body: { ...base, type: 'text', text: { body: t, preview_url: false } } });
    const options = reply.options;
    if (!options.length || options.length > 10) {
      const all = options.length ? `${reply.text}\n\n${numbered(options)}`.trim() : reply.text;
      return splitText(all, TEXT_MAX).filter(Boolean).map(text);
    }
    // Interactive messages hold a shorter body: what does not fit goes first as plain text.
    const pieces = splitText(reply.text || options.map((o) => o.label).join(' · '), INTERACTIVE_BODY_MAX);
    const calls = pieces.slice(0, -1).map(text);
    const body = { type: 'text', text: pieces.at(-1) ?? '' };
    const action =
      options.length <= 3
        ? { buttons: options.map((o, i) => ({ type: 'reply', reply: { id: choicePayload(o, i, 256), title: clip(o.label, 20) } })) }
        : {
            button: 'Choose',
            sections: [
              {
                rows: options.map((o, i) => ({
                  id: choicePayload(o, i, 200),
                  title: clip(o.label, 24),
                  ...(Array.from(o.label).length > 24 ? { description: clip(o.label, 72) } : {}),
                })),
              },
            ],
          };
    calls.push({ method: 'messages', body: { ...base, type: 'interactive', interactive: { type: options.length <= 3 ? 'button' : 'list', body, action } } });
    return calls;
  },

  async send(call, creds, http) {
    const res = await http.call({
      method: 'POST',
      url: `${http.base}/${creds.phone_number_id}/messages`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${creds.access_token}` },
      body: JSON.stringify(call.body),
    });
    const answer = jsonOf(res.text);
    if (res.status >= 200 && res.status < 300) {
      const id = (answer?.messages as { id?: unknown }[] | undefined)?.[0]?.id;
      return { ok: true, status: res.status, providerId: typeof id === 'string' ? id : undefined };
    }
    const err = (answer?.error ?? {}) as { code?: unknown; message?: unknown };
    const code = typeof err.code === 'number' ? err.code : null;
    const error = `${code ?? `HTTP ${res.status}`}${typeof err.message === 'string' ? `: ${err.message.slice(0, 160)}` : ''}`;
    if (code === WINDOW_CLOSED) return { ok: false, status: res.status, error, refused: true, permanent: true };
    if (res.status === 429 || (code !== null && RATE_CODES.has(code)))
      return { ok: false, status: res.status, error, retryAfter: retryAfterHeader(res.headers) ?? 60 };
    return byStatus(res.status, error);
  },
};
