// The one shape every messaging channel has (docs/channels.md, "Adding a channel"): check that a
// webhook request really comes from the provider, read it into messages with the provider's own
// ids, render a reply into the provider's API calls, and make one such call. A channel is one
// folder with one adapter; everything else (storage, exactly-once processing, the delivery
// queue, retries, audit, metrics) is the channel service's and the same for all.
import type { ChannelKind } from '@switchboard/contract';
import type { z } from 'zod';

/** A webhook request as the adapter sees it: the raw bytes (signatures cover them) and the URL the provider called. */
export interface HookRequest {
  method: string;
  /** The public URL the provider called (PUBLIC_URL, else the request's own), with its query. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, string>;
  body: Buffer;
}

/** What a webhook answers the provider. */
export interface HookAnswer {
  status: number;
  contentType?: string;
  body?: string;
}

/** One message from a channel user. */
export interface InboundMessage {
  /** The provider's own id of the message (Slack channel and ts, Telegram update id, wamid, MessageSid): processed once. */
  key: string;
  /** Who and where, without the channel's prefix: one conversation at a time per user key. */
  user: string;
  /** What the user wrote, or the label of the button they pressed. */
  text: string;
  /** The payload of a button or list row: an option's value, or `#<n>` for the n-th option offered last. */
  choice?: string;
  /** Where the reply goes (a chat, a thread, a number), as the adapter's render reads it. */
  replyTo: Record<string, string>;
  /** Calls to make before the reply, such as Telegram's answerCallbackQuery. */
  acknowledge?: ProviderCall[];
}

export type Parsed = { messages: InboundMessage[]; answer: HookAnswer; ignored?: string };

/** A reply as the converse service answered it. */
export interface Reply {
  text: string;
  options: { label: string; value: string }[];
}

/** One call of the provider's API; credentials are added when it is made, never stored with it. */
export interface ProviderCall {
  /** The provider's name for it, as the delivery log shows it (chat.postMessage, sendMessage, messages, Messages). */
  method: string;
  body: Record<string, unknown>;
}

export interface CallResult {
  ok: boolean;
  status: number | null;
  /** The provider's id of what it accepted (Slack ts, Telegram message_id, wamid, SM… sid). */
  providerId?: string;
  /** Seconds the provider asked to wait (429 Retry-After, Telegram's retry_after). */
  retryAfter?: number;
  /** The provider will not take this call however often it is tried (a bad token, a closed window). */
  permanent?: boolean;
  /** Refused on the provider's terms, not a failure (WhatsApp outside its 24-hour window). */
  refused?: boolean;
  error?: string;
}

/** How an adapter reaches its provider: the operator's base URL, and one HTTP call within limits. */
export interface ProviderHttp {
  base: string;
  call(req: {
    method: 'POST';
    url: string;
    headers: Record<string, string>;
    body: string;
  }): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>;
}

export interface ChannelAdapter<C = Record<string, string>> {
  kind: ChannelKind;
  /** The provider's name, as people know it (in messages). */
  label: string;
  /** Where the provider's API is, unless the operator points it elsewhere (CHANNEL_API_URLS). */
  defaultApiUrl: string;
  /** The contract's schema of this channel's credentials. */
  credentials: z.ZodType<C>;
  /**
   * Whether the request carries the provider's signature (or token) for these credentials, and
   * is fresh where the provider dates it: null when it does, else why not. Runs before anything
   * else of the request is read.
   */
  verify(req: HookRequest, creds: C, now: Date): string | null;
  /** A GET the provider makes to confirm the URL (WhatsApp's hub.challenge), when it has one. */
  challenge?(req: HookRequest, creds: C): HookAnswer;
  /** The messages of a verified request, and what to answer. */
  parse(req: HookRequest): Parsed;
  /** The calls that show `reply` to `to`. */
  render(reply: Reply, to: Record<string, string>): ProviderCall[];
  /** Makes one call with the credentials. */
  send(call: ProviderCall, creds: C, http: ProviderHttp): Promise<CallResult>;
  /** Tells the provider where to send messages (Telegram's setWebhook), when the service can. */
  setWebhook?(creds: C, url: string, http: ProviderHttp): Promise<CallResult>;
  /** Credentials the service fills in when the tenant leaves them out (Telegram's secret token). */
  complete?(creds: C): C;
  /** Hours after a user's last message in which the provider accepts free-form replies (WhatsApp: 24). */
  replyWindowHours?: number;
}

/** The first value of a header. */
export const header = (req: HookRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Splits text into pieces of at most `max` characters (code points), at a paragraph, line or
 * word break where one falls in the last fifth of a piece, else mid-word.
 */
export function splitText(text: string, max: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  let at = 0;
  while (chars.length - at > max) {
    const window = chars.slice(at, at + max).join('');
    const floor = Math.floor(max * 0.8);
    let cut = -1;
    for (const sep of ['\n\n', '\n', ' ']) {
      const i = window.lastIndexOf(sep);
      if (i >= floor) {
        cut = Array.from(window.slice(0, i)).length;
        break;
      }
    }
    const n = cut > 0 ? cut : max;
    out.push(
      chars
        .slice(at, at + n)
        .join('')
        .trimEnd(),
    );
    at += n;
    while (at < chars.length && /\s/.test(chars[at])) at++;
  }
  const rest = chars.slice(at).join('');
  if (rest || !out.length) out.push(rest);
  return out;
}

/** Options as numbered lines ("1. Track an order"), for channels and cases without buttons. */
export const numbered = (options: Reply['options']) => options.map((o, i) => `${i + 1}. ${o.label}`).join('\n');

/** A button's payload: the option's value when it fits in `maxBytes`, else its number among those offered. */
export const choicePayload = (o: { value: string }, i: number, maxBytes: number) =>
  Buffer.byteLength(o.value) <= maxBytes && !o.value.startsWith('#') ? o.value : `#${i + 1}`;

/** Shortens a label to `max` characters with an ellipsis. */
export const clip = (s: string, max: number) =>
  Array.from(s).length <= max
    ? s
    : `${Array.from(s)
        .slice(0, max - 1)
        .join('')}…`;

/** A JSON body of at most 64 KiB, or null. */
export function jsonOf(text: string): Record<string, unknown> | null {
  if (text.length > 65_536) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Seconds of a Retry-After header (delta seconds only), when present and sane. */
export function retryAfterHeader(h: Record<string, string | string[] | undefined>): number | undefined {
  const v = h['retry-after'];
  const s = Array.isArray(v) ? v[0] : v;
  if (!s || !/^\d{1,6}$/.test(s.trim())) return undefined;
  return Number(s.trim());
}

/** A result for an HTTP status with no better reading: 2xx ok, 429 and 5xx retried, other 4xx permanent. */
export function byStatus(status: number, error: string, retryAfter?: number): CallResult {
  if (status >= 200 && status < 300) return { ok: true, status };
  return { ok: false, status, error, retryAfter, permanent: status >= 400 && status < 500 && status !== 429 && status !== 408 };
}
