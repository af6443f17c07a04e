// Slack: the Events API (message and app_mention events) and interactivity (block_actions) on one
// request URL, each request signed with the app's signing secret (`v0` HMAC-SHA256 of
// `v0:<timestamp>:<body>`, refused when the timestamp is more than five minutes off); replies by
// chat.postMessage in the user's thread, options as Block Kit buttons.
// https://api.slack.com/authentication/verifying-requests-from-slack
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

type Creds = { bot_token: string; signing_secret: string };

/** Section text holds at most 3,000 characters; a message at most 50 blocks, an actions block 25 elements. */
const SECTION_MAX = 3000;
const BUTTONS_MAX = 25;
/** Errors of chat.postMessage that no retry mends. */
const PERMANENT = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'no_permission',
  'missing_scope',
  'channel_not_found',
  'is_archived',
  'not_in_channel',
  'msg_too_long',
  'invalid_blocks',
  'invalid_arguments',
  'restricted_action',
]);

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= 255 ? v : undefined);
/** Slack ids: team, channel and user ids and timestamps, safe in keys. */
const id = (v: unknown): string | undefined => {
  const s = str(v);
  return s && /^[A-Za-z0-9._-]{1,64}$/.test(s) ? s : undefined;
};

export const slack: ChannelAdapter<Creds> = {
  kind: 'slack',
  label: 'Slack',
  defaultApiUrl: 'https://slack.com/api',
  credentials: ChannelCredentials.slack,

  verify(req, creds, now) {
    const ts = header(req, 'x-slack-request-timestamp');
    const sig = header(req, 'x-slack-signature');
    if (!ts || !/^\d{1,12}$/.test(ts) || !sig) return 'missing X-Slack-Request-Timestamp or X-Slack-Signature';
    if (Math.abs(now.getTime() / 1000 - Number(ts)) > 300) return 'stale X-Slack-Request-Timestamp (more than five minutes off)';
    const expected = `v0=${createHmac('sha256', creds.signing_secret).update(`v0:${ts}:`).update(req.body).digest('hex')}`;
    return sameText(sig, expected) ? null : 'X-Slack-Signature does not match';
  },

  parse(req) {
    const ok = { status: 200 };
    const type = String(req.headers['content-type'] ?? '');
    if (type.startsWith('application/x-www-form-urlencoded')) {
      const payload = jsonOf(new URLSearchParams(req.body.toString('utf8')).get('payload') ?? '');
      if (!payload || payload.type !== 'block_actions') return { messages: [], answer: ok, ignored: 'not block_actions' };
      const action = (payload.actions as Record<string, unknown>[] | undefined)?.[0];
      const team = id((payload.team as { id?: unknown } | undefined)?.id) ?? id((payload.user as { team_id?: unknown } | undefined)?.team_id);
      const channel = id((payload.channel as { id?: unknown } | undefined)?.id) ?? id((payload.container as { channel_id?: unknown } | undefined)?.channel_id);
      const user = id((payload.user as { id?: unknown } | undefined)?.id);
      const actionTs = id(action?.action_ts);
      const value = typeof action?.value === 'string' ? action.value : undefined;
      if (!action || !team || !channel || !user || !actionTs || value === undefined) return { messages: [], answer: ok, ignored: 'incomplete block_actions' };
      const container = (payload.container ?? {}) as Record<string, unknown>;
      const message = (payload.message ?? {}) as Record<string, unknown>;
      const thread = id(container.thread_ts) ?? id(message.thread_ts) ?? (container.is_ephemeral ? undefined : id(container.message_ts));
      const label = (action.text as { text?: unknown } | undefined)?.text;
      return {
        answer: ok,
        messages: [
          {
            key: `a:${channel}:${actionTs}`,
            user: `${team}/${channel}/${user}`,
            text: typeof label === 'string' ? label : value,
            choice: value,
            replyTo: { channel, ...(thread && !channel.startsWith('D') ? { thread_ts: thread } : {}) },
          },
        ],
      };
    }
    const body = jsonOf(req.body.toString('utf8'));
    if (!body) return { messages: [], answer: { status: 400 }, ignored: 'not JSON' };
    if (body.type === 'url_verification' && typeof body.challenge === 'string') {
      return {
        messages: [],
        answer: { status: 200, contentType: 'text/plain; charset=utf-8', body: body.challenge.slice(0, 512) },
        ignored: 'url_verification',
      };
    }
    if (body.type !== 'event_callback') return { messages: [], answer: ok, ignored: `type ${String(body.type)}` };
    const e = (body.event ?? {}) as Record<string, unknown>;
    // Bots (this one included) and edits, joins and other subtypes are not someone talking to the agent.
    if ((e.type !== 'message' && e.type !== 'app_mention') || e.bot_id !== undefined || e.subtype !== undefined) {
      return { messages: [], answer: ok, ignored: `event ${typeof e.type === 'string' ? e.type : '?'}${typeof e.subtype === 'string' ? `/${e.subtype}` : ''}` };
    }
    const team = id(body.team_id) ?? id(e.team);
    const channel = id(e.channel);
    const user = id(e.user);
    const ts = id(e.ts);
    const text = typeof e.text === 'string' ? e.text.replace(/<@[A-Z0-9]+>/g, '').trim() : '';
    if (!team || !channel || !user || !ts || !text) return { messages: [], answer: ok, ignored: 'incomplete message event' };
    const direct = e.channel_type === 'im' || channel.startsWith('D');
    const thread = id(e.thread_ts) ?? (direct ? undefined : ts);
    // A message that mentions the app in a channel arrives twice (message and app_mention): the
    // key is the message's own (channel and ts), so it is answered once.
    const message: InboundMessage = {
      key: `m:${channel}:${ts}`,
      user: `${team}/${channel}/${user}`,
      text,
      replyTo: { channel, ...(thread ? { thread_ts: thread } : {}) },
    };
    return { answer: ok, messages: [message] };
  },

  render(reply, to) {
    const pieces = splitText(reply.text, SECTION_MAX);
    const base = { channel: to.channel, ...(to.thread_ts ? { thread_ts: to.thread_ts } : {}) };
    const calls: ProviderCall[] = pieces.slice(0, -1).map((text) => ({ method: 'chat.postMessage', body: { ...base, text } }));
    const last = pieces.at(-1) ?? '';
    const options = reply.options;
    if (!options.length) {
      if (last) calls.push({ method: 'chat.postMessage', body: { ...base, text: last } });
      return calls;
    }
    if (options.length > BUTTONS_MAX) {
      // More options than an actions block holds: a numbered list, answered by number or label.
      for (const text of splitText(`${last}\n\n${numbered(options)}`.trim(), SECTION_MAX)) calls.push({ method: 'chat.postMessage', body: { ...base, text } });
      return calls;
    }
    const blocks: Record<string, unknown>[] = [];
    if (last) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: last } });
    blocks.push({
      type: 'actions',
      elements: options.map((o, i) => ({
        type: 'button',
        text: { type: 'plain_text', text: clip(o.label, 75) },
        action_id: `sb_option_${i + 1}`,
        value: choicePayload(o, i, 2000),
      })),
    });
    calls.push({ method: 'chat.postMessage', body: { ...base, text: last || options.map((o) => o.label).join(' · '), blocks } });
    return calls;
  },

  async send(call, creds, http) {
    const res = await http.call({
      method: 'POST',
      url: `${http.base}/${call.method}`,
      headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${creds.bot_token}` },
      body: JSON.stringify(call.body),
    });
    if (res.status === 429) return { ok: false, status: 429, error: 'rate limited', retryAfter: retryAfterHeader(res.headers) ?? 1 };
    if (res.status !== 200) return byStatus(res.status, `HTTP ${res.status}`, retryAfterHeader(res.headers));
    const body = jsonOf(res.text);
    if (!body) return { ok: false, status: res.status, error: 'the answer is not JSON' };
    if (body.ok === true) return { ok: true, status: 200, providerId: typeof body.ts === 'string' ? body.ts : undefined };
    const error = typeof body.error === 'string' ? body.error.slice(0, 100) : 'ok: false';
    return {
      ok: false,
      status: 200,
      error,
      permanent: PERMANENT.has(error),
      ...(error === 'ratelimited' ? { retryAfter: retryAfterHeader(res.headers) ?? 1 } : {}),
    };
  },
};
