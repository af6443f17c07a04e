// SMS through Twilio: the incoming-message webhook (a form POST), checked by X-Twilio-Signature
// (base64 HMAC-SHA1, under the auth token, of the URL Twilio called followed by every POST
// parameter's name and value in name order); replies through the Messages API. SMS has no
// buttons: options are a numbered list, and a reply of a number or a label chooses.
// https://www.twilio.com/docs/usage/security#validating-requests
import { createHmac } from 'node:crypto';
import { sameText } from '../../lib/same-text.js';
import { ChannelCredentials } from '@switchboard/contract';
import { byStatus, header, jsonOf, numbered, retryAfterHeader, splitText, type ChannelAdapter, type HookRequest } from '../adapter.js';

type Creds = { account_sid: string; auth_token: string; from: string };

/** Twilio takes a body of up to 1,600 characters (it splits it into segments itself). */
const BODY_MAX = 1600;

/** X-Twilio-Signature of a form POST to `url` with `params`, under `authToken`. */
export function twilioSignature(authToken: string, url: string, params: [string, string][]): string {
  const data = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).reduce((acc, [k, v]) => acc + k + v, url);
  return createHmac('sha1', authToken).update(Buffer.from(data, 'utf8')).digest('base64');
}

const params = (req: HookRequest): [string, string][] => [...new URLSearchParams(req.body.toString('utf8')).entries()];

/** The URL as Twilio may have signed it: as given, and with or without the scheme's default port. */
function urlVariants(url: string): string[] {
  const u = new URL(url);
  const port = u.protocol === 'https:' ? '443' : '80';
  if (u.port) return [url, url.replace(u.host, u.hostname)];
  return [url, url.replace(u.host, `${u.hostname}:${port}`)];
}

export const sms: ChannelAdapter<Creds> = {
  kind: 'sms',
  label: 'Twilio',
  defaultApiUrl: 'https://api.twilio.com',
  credentials: ChannelCredentials.sms,

  verify(req, creds) {
    const sig = header(req, 'x-twilio-signature');
    if (!sig) return 'missing X-Twilio-Signature';
    const p = params(req);
    for (const url of urlVariants(req.url)) if (sameText(sig, twilioSignature(creds.auth_token, url, p))) return null;
    return 'X-Twilio-Signature does not match';
  },

  parse(req) {
    // An empty TwiML answer: the reply goes out through the Messages API, after the turn.
    const answer = { status: 200, contentType: 'text/xml; charset=utf-8', body: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' };
    const p = new URLSearchParams(req.body.toString('utf8'));
    const sid = p.get('MessageSid') ?? p.get('SmsSid');
    const from = p.get('From');
    const body = p.get('Body');
    if (!sid || !/^(SM|MM)[0-9a-fA-F]{32}$/.test(sid) || !from || !/^\+?[0-9]{5,16}$/.test(from))
      return { messages: [], answer, ignored: 'no MessageSid or From' };
    if (!body?.trim()) return { messages: [], answer, ignored: 'an empty message' };
    return { answer, messages: [{ key: sid, user: from, text: body.trim(), replyTo: { to: from } }] };
  },

  render(reply, to) {
    const text = reply.options.length ? `${reply.text}\n\n${numbered(reply.options)}\nReply with a number.`.trim() : reply.text;
    return splitText(text, BODY_MAX)
      .filter(Boolean)
      .map((body) => ({ method: 'Messages', body: { To: to.to, Body: body } }));
  },

  async send(call, creds, http) {
    const form = new URLSearchParams({
      ...(call.body as Record<string, string>),
      ...(creds.from.startsWith('MG') ? { MessagingServiceSid: creds.from } : { From: creds.from }),
    });
    const res = await http.call({
      method: 'POST',
      url: `${http.base}/2010-04-01/Accounts/${creds.account_sid}/Messages.json`,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64')}`,
      },
      body: form.toString(),
    });
    const answer = jsonOf(res.text);
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, providerId: typeof answer?.sid === 'string' ? answer.sid : undefined };
    const error = `${typeof answer?.code === 'number' ? answer.code : `HTTP ${res.status}`}${typeof answer?.message === 'string' ? `: ${answer.message.slice(0, 160)}` : ''}`;
    return byStatus(res.status, error, retryAfterHeader(res.headers) ?? (res.status === 429 ? 1 : undefined));
  },
};
