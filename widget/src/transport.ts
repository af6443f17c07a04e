// The widget's requests to the service's widget routes (/widget/v1): the visitor's token (asked
// for once, renewed before it runs out or when refused), the agent's settings, the stored
// conversation, a streamed converse answer and the conversation's event stream. No DOM: tested
// in Node against a fake fetch.
import type { ConverseResponse, WidgetConversation, WidgetSettings } from '@switchboard/contract';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Saved } from './storage.js';

export interface Problem {
  status?: number;
  code?: string;
  detail?: string;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
    readonly retryAfter: number | null,
  ) {
    super(problem.detail ?? `HTTP ${status}`);
  }
}

export interface TransportOptions {
  server: string;
  agent: string;
  key: string;
  userId?: string;
  userHash?: string;
  saved: Saved;
  fetch?: typeof fetch;
  now?: () => number;
}

export type Transport = ReturnType<typeof transport>;

/** Reads an event stream to its end, handing each event to `onEvent`. */
export async function readEvents(res: Response, onEvent: (e: EventSourceMessage) => void): Promise<void> {
  const parser = createParser({ onEvent });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    parser.feed(value);
  }
}

async function httpError(res: Response): Promise<HttpError> {
  const problem = (await res.json().catch(() => ({}))) as Problem;
  const after = Number(res.headers.get('retry-after'));
  return new HttpError(res.status, problem, Number.isFinite(after) && after > 0 ? after : null);
}

export function transport(o: TransportOptions) {
  const doFetch = o.fetch ?? ((input: string | URL | Request, init?: RequestInit) => fetch(input, init));
  const now = o.now ?? Date.now;
  const base = `${o.server.replace(/\/+$/, '')}/widget/v1/agents/${encodeURIComponent(o.agent)}`;
  const q = `key=${encodeURIComponent(o.key)}`;
  const identity: Record<string, string> = {};
  if (o.userId) identity['x-user-id'] = o.userId;
  if (o.userHash) identity['x-user-hash'] = o.userHash;
  let minting: Promise<string> | null = null;

  /**
   * The visitor's token as this browser keeps it, asked of the service on a first visit and
   * renewed (the same visitor) when less than an hour of it is left, or at once after the service
   * refused it (`stale`). One request at a time, whatever asks.
   */
  function visitorToken(stale?: string): Promise<string> {
    const s = o.saved.get();
    if (s.token && s.token !== stale && Number(s.tokenExpires) - now() > 3600_000) return Promise.resolve(s.token);
    minting ??= (async () => {
      try {
        const res = await doFetch(`${base}/visitor?${q}`, {
          method: 'POST',
          // A signed-in user's identity goes along: the service checks its hash here, on load.
          headers: { ...identity, 'content-type': 'application/json' },
          body: JSON.stringify(s.token ? { visitor_token: s.token } : {}),
          credentials: 'omit',
        });
        if (!res.ok) throw await httpError(res);
        const v = (await res.json()) as { visitor_token: string; expires_at: string };
        o.saved.set({ ...o.saved.get(), token: v.visitor_token, tokenExpires: String(Date.parse(v.expires_at)) });
        return v.visitor_token;
      } finally {
        minting = null;
      }
    })();
    return minting;
  }

  /**
   * A request of the widget's routes with the visitor's token (asked again once if the service
   * refuses it); `visitor: false` sends no header of its own, so that it needs no preflight.
   */
  async function call(path: string, init: RequestInit, signal?: AbortSignal, visitor = true): Promise<Response> {
    for (let stale: string | undefined, tries = 0; ; tries++) {
      const token = visitor ? await visitorToken(stale) : undefined;
      const res = await doFetch(`${base}${path}`, {
        ...init,
        signal,
        headers: { ...(token ? { ...identity, 'x-visitor-token': token } : {}), ...(init.headers as Record<string, string>) },
        credentials: 'omit',
      });
      if (res.ok) return res;
      if (res.status === 401 && token && tries === 0) {
        stale = token;
        continue;
      }
      throw await httpError(res);
    }
  }

  return {
    visitorToken,
    /** Whether the page names a signed-in user (whose hash the service checks). */
    identified: Boolean(o.userId || o.userHash),
    /** The agent's widget settings, without preflight: a page of an origin the key does not allow can read why it is refused. */
    async settings(language: string, signal?: AbortSignal): Promise<WidgetSettings> {
      return (await (await call(`?${q}&language=${encodeURIComponent(language)}`, {}, signal, false)).json()) as WidgetSettings;
    },
    async conversation(id: string, signal?: AbortSignal): Promise<WidgetConversation> {
      return (await (await call(`/conversations/${id}?${q}`, {}, signal)).json()) as WidgetConversation;
    },
    /** A message, answered as a stream: `delta` events as written, then `done` (or `error`, thrown). */
    async converse(body: Record<string, unknown>, signal: AbortSignal, onDelta: (text: string) => void): Promise<ConverseResponse> {
      const res = await call(
        `/converse?${q}`,
        { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body) },
        signal,
      );
      let done: ConverseResponse | null = null;
      let failed: Problem | null = null;
      await readEvents(res, (e) => {
        if (e.event === 'delta') onDelta((JSON.parse(e.data) as { text: string }).text);
        else if (e.event === 'done') done = JSON.parse(e.data) as ConverseResponse;
        else if (e.event === 'error') failed = JSON.parse(e.data) as Problem;
      });
      if (failed) throw new HttpError((failed as Problem).status ?? 500, failed, null);
      if (!done) throw new Error('the answer ended early');
      return done;
    },
    /** The conversation's event stream from `lastEventId` (or the live end), read until it ends. */
    async events(id: string, lastEventId: string | null, signal: AbortSignal, onEvent: (e: EventSourceMessage) => void): Promise<void> {
      const res = await call(
        `/conversations/${id}/events?${q}`,
        { headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) } },
        signal,
      );
      await readEvents(res, onEvent);
    },
  };
}

/** What the visitor reads for a failure, and whether (and when) to try again by itself: null never, -1 once back online. */
export function explain(err: unknown, online: boolean): { text: string; retryMs: number | null } {
  if (err instanceof HttpError) {
    if (err.status === 429) return { text: `Too many messages at once: sending again in ${err.retryAfter ?? 5} s.`, retryMs: (err.retryAfter ?? 5) * 1000 };
    if (err.status >= 500) return { text: 'The chat service is unavailable for a moment: trying again…', retryMs: (err.retryAfter ?? 3) * 1000 };
    if (err.status === 403) return { text: `This chat cannot run here: ${err.problem.detail ?? 'the site’s key does not allow this page'}.`, retryMs: null };
    if (err.status === 404) return { text: 'This chat is not available (the site’s key or agent is unknown).', retryMs: null };
    return { text: err.problem.detail ?? `The message was refused (${err.status}).`, retryMs: null };
  }
  if (!online) return { text: 'You are offline: your message is kept and sent when you are back.', retryMs: -1 };
  return { text: 'The chat service cannot be reached: trying again…', retryMs: 3000 };
}
