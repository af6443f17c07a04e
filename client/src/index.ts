// Typed Switchboard client, built on the contract: every call's inputs and responses are typed.
//
//   const sb = createSwitchboardClient({ baseUrl: 'http://127.0.0.1:3000', tenantId: 'demo' });
//   const r = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'hi' } });
//   if (r.status === 200) console.log(r.body.response.message);
//
//   for await (const e of sb.events('acme-support', conversationId)) console.log(e.type, e.data);
//
//   for await (const e of sb.converseStream('acme-support', { message: 'hi' })) {
//     if (e.type === 'delta') process.stdout.write(e.text);
//     else console.log('\n', e.response.state);
//   }
import { initClient, type ApiFetcher } from '@ts-rest/core';
import { createParser } from 'eventsource-parser';
import { contract, type ConverseRequest, type ConverseResponse, type Problem } from '@switchboard/contract';

export * from '@switchboard/contract';

export interface SwitchboardClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Sent as `tenant-id` on every call; may be left out with `apiKey`, which names its tenant. */
  tenantId?: string;
  /** Sent as `authorization: Bearer <key>` when the server runs with AUTH_MODE=api_key. */
  apiKey?: string;
  /** Sent as `user-id`, the fallback end-user id. */
  userId?: string;
  /** Extra headers for every call. */
  headers?: Record<string, string>;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof fetch;
}

/** One server-sent event of a conversation. */
export interface ConversationEvent {
  /** Resume after this event with `lastEventId`. */
  id: string;
  type: 'turn.created' | 'status.changed' | 'phase.changed';
  data: Record<string, unknown>;
}

export interface EventsOptions {
  /** Start after this event (else with the next one). */
  lastEventId?: string;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Reconnect (with the last event id) when the stream drops; true by default. */
  reconnect?: boolean;
}

/** A streamed converse call: the reply as it is written, then the whole response. */
export type ConverseStreamEvent = { type: 'delta'; text: string } | { type: 'done'; response: ConverseResponse };

export interface ConverseStreamOptions {
  idempotencyKey?: string;
  /** Sent as `user-id` for this call. */
  userId?: string;
  signal?: AbortSignal;
}

/**
 * The chunks of a response body. Read with a reader, not `for await` on the stream itself, which
 * some browsers (Safari) do not offer; leaving early cancels the body, closing the connection.
 */
async function* chunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}

/** A refused event stream or streamed call: the server's problem details. */
export class SwitchboardError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem>,
  ) {
    super(problem.detail ?? `HTTP ${status}`);
  }
}

// The event stream is not JSON: it is served by `events()` below, not by the typed JSON calls.
const { streamEvents: _stream, ...jsonApi } = contract.api;
// Of sign-in, what a page calls (the others are a browser's own navigations).
const { getSignInOptions, signOut } = contract.auth;
const clientContract = { api: jsonApi, ops: contract.ops, auth: { getSignInOptions, signOut } };

/**
 * What the calls are made with, written out: the declarations then name no optional property as
 * `| undefined`, which consumers checking with `exactOptionalPropertyTypes` would refuse.
 */
type ClientArgs = { baseUrl: string; baseHeaders: { 'tenant-id': string }; throwOnUnknownStatus: true; api?: ApiFetcher };

export function createSwitchboardClient(opts: SwitchboardClientOptions) {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const baseHeaders: Record<string, string> = { ...(opts.tenantId ? { 'tenant-id': opts.tenantId } : {}), ...(opts.headers ?? {}) };
  if (opts.apiKey) baseHeaders.authorization = `Bearer ${opts.apiKey}`;
  if (opts.userId) baseHeaders['user-id'] = opts.userId;
  const doFetch = opts.fetch ?? fetch;
  const custom = opts.fetch;
  const args: ClientArgs = {
    baseUrl,
    baseHeaders: baseHeaders as { 'tenant-id': string },
    throwOnUnknownStatus: true,
    ...(custom
      ? {
          api: (async (a) => {
            const res = await custom(a.path, { method: a.method, headers: a.headers, body: a.body ?? null });
            const text = await res.text();
            return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, headers: res.headers };
          }) satisfies ApiFetcher,
        }
      : {}),
  };
  const client = initClient(clientContract as typeof contract, args) as unknown as {
    api: Omit<ReturnType<typeof initClient<typeof contract, ClientArgs>>['api'], 'streamEvents'>;
    ops: ReturnType<typeof initClient<typeof contract, ClientArgs>>['ops'];
    auth: Pick<ReturnType<typeof initClient<typeof contract, ClientArgs>>['auth'], 'getSignInOptions' | 'signOut'>;
  };

  /**
   * A conversation's events as an async iterator: parsed, in order, resuming with Last-Event-ID
   * after a dropped connection. Ends when `signal` aborts or the loop breaks; a refused stream
   * (404, 401, 429…) throws a SwitchboardError.
   */
  async function* events(slug: string, conversationId: string, o: EventsOptions = {}): AsyncGenerator<ConversationEvent> {
    let last = o.lastEventId;
    let retryMs = 2000;
    const url = `${baseUrl}/api/v1/agents/${encodeURIComponent(slug)}/conversations/${encodeURIComponent(conversationId)}/events`;
    while (!o.signal?.aborted) {
      const controller = new AbortController();
      const stop = () => controller.abort();
      o.signal?.addEventListener('abort', stop, { once: true });
      try {
        const res = await doFetch(url, {
          headers: { ...baseHeaders, accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) },
          signal: controller.signal,
        });
        if (res.status !== 200 || !res.body) throw await refusal(res);
        const queue: ConversationEvent[] = [];
        const parser = createParser({
          onEvent: (e) => {
            if (!e.id || !e.event) return;
            queue.push({ id: e.id, type: e.event as ConversationEvent['type'], data: JSON.parse(e.data) as ConversationEvent['data'] });
          },
          onRetry: (ms) => (retryMs = ms),
        });
        const decoder = new TextDecoder();
        for await (const chunk of chunks(res.body)) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          while (queue.length) {
            const e = queue.shift()!;
            last = e.id;
            yield e;
          }
        }
      } catch (err) {
        if (err instanceof SwitchboardError) throw err;
        if (o.signal?.aborted) return;
        // A dropped connection: resume below.
      } finally {
        o.signal?.removeEventListener('abort', stop);
        controller.abort();
      }
      if (o.reconnect === false || o.signal?.aborted) return;
      await new Promise((r) => setTimeout(r, retryMs));
    }
  }

  /** Reads a refused call's problem document. */
  async function refusal(res: Response): Promise<SwitchboardError> {
    const text = await res.text().catch(() => '');
    try {
      return new SwitchboardError(res.status, JSON.parse(text) as Partial<Problem>);
    } catch {
      return new SwitchboardError(res.status, { detail: text || `HTTP ${res.status}` });
    }
  }

  /**
   * A converse call whose reply streams as it is written: `delta` events, then `done` with the
   * ConverseResponse. A failure (a refused request, or an `error` event) throws a SwitchboardError.
   */
  async function* converseStream(slug: string, body: ConverseRequest, o: ConverseStreamOptions = {}): AsyncGenerator<ConverseStreamEvent> {
    const res = await doFetch(`${baseUrl}/api/v1/agents/${encodeURIComponent(slug)}/converse`, {
      method: 'POST',
      headers: {
        ...baseHeaders,
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(o.idempotencyKey ? { 'idempotency-key': o.idempotencyKey } : {}),
        ...(o.userId ? { 'user-id': o.userId } : {}),
      },
      body: JSON.stringify(body),
      signal: o.signal,
    });
    if (res.status !== 200 || !res.body) throw await refusal(res);
    const queue: (ConverseStreamEvent | SwitchboardError)[] = [];
    const parser = createParser({
      onEvent: (e) => {
        const data = JSON.parse(e.data) as unknown;
        if (e.event === 'delta') queue.push({ type: 'delta', text: (data as { text: string }).text });
        else if (e.event === 'done') queue.push({ type: 'done', response: data as ConverseResponse });
        else if (e.event === 'error') queue.push(new SwitchboardError((data as Problem).status, data as Problem));
      },
    });
    const decoder = new TextDecoder();
    let done = false;
    for await (const chunk of chunks(res.body)) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      while (queue.length) {
        const e = queue.shift()!;
        if (e instanceof SwitchboardError) throw e;
        if (e.type === 'done') done = true;
        yield e;
      }
    }
    if (!done) throw new SwitchboardError(0, { detail: 'the stream ended before the reply was done' });
  }

  return { ...client, events, converseStream };
}

export type SwitchboardClient = ReturnType<typeof createSwitchboardClient>;
