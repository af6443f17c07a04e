// The widget's logic without a browser: its transport (visitor tokens, streamed answers, problems)
// against a fake fetch, its conversation state (chat.ts) against a recording view, and what it
// keeps (storage.ts) when the browser refuses storage. The browser suite (widget.test.ts) shows
// the same flows end to end in Chromium.
import { describe, expect, it } from 'vitest';
import { Chat, type Bubble, type ChatView, type Status } from '../../widget/src/chat.js';
import { savedState, type Saved } from '../../widget/src/storage.js';
import { transport } from '../../widget/src/transport.js';

const NOW = Date.parse('2026-11-28T10:00:00Z');

/** A Server-Sent Events body of these events. */
function sse(events: { event: string; data: unknown; id?: string }[]): Response {
  const text = events.map((e) => `${e.id ? `id: ${e.id}\n` : ''}event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`).join('');
  return new Response(text, { headers: { 'content-type': 'text/event-stream' } });
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const problem = (status: number, code: string, headers: Record<string, string> = {}) => json(status, { status, code, detail: `a ${code}` }, headers);

const done = (id: string, message: string, status: Status = 'active', options: { label: string; value: string }[] = []) => ({
  event: 'done',
  data: { conversation_id: id, response: { message, options }, state: { status } },
});

type Route = (url: URL, init: RequestInit) => Response | Promise<Response>;

/** A fake service: each path answers from its queue (the last answer repeats), every request recorded. */
function service(routes: Record<string, Route[]>) {
  const requests: { path: string; init: RequestInit }[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    const path = url.pathname.replace('/widget/v1/agents/shop', '') || '/';
    requests.push({ path, init });
    const queue = routes[path];
    if (!queue?.length) return problem(404, 'not_found');
    const route = queue.length > 1 ? queue.shift()! : queue[0];
    return route(url, init);
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

const visitor: Route[] = [() => json(200, { visitor_token: 'vt_1', expires_at: new Date(NOW + 24 * 3600_000).toISOString() })];
const settings: Route[] = [() => json(200, { title: 'Shop', greeting: 'Hello!', accent: '#2255aa' })];

/** A view that records what it was asked to draw. */
class RecordingView implements ChatView {
  log: { role: string; text: string; removed: boolean }[] = [];
  errors: string[] = [];
  statuses: (Status | null)[] = [];
  box = '';
  offered: unknown[][] = [];
  setTexts = 0;
  bubble(role: 'user' | 'agent', text: string): Bubble {
    const entry = { role, text, removed: false };
    this.log.push(entry);
    return {
      setText: (t) => {
        this.setTexts++;
        entry.text = t;
      },
      cite: (citations) => (entry.text += ` [${citations.map((c) => c.passage_id).join(', ')}]`),
      remove: () => (entry.removed = true),
    };
  }
  shown(): string[] {
    return this.log.filter((e) => !e.removed).map((e) => `${e.role}: ${e.text}`);
  }
  typing(): void {}
  busy(): void {}
  status(s: Status | null): void {
    this.statuses.push(s);
  }
  error(text: string): void {
    this.errors.push(text);
  }
  putBack(message: string): void {
    if (!this.box) this.box = message;
  }
  clear(): void {
    this.log = [];
  }
  settings(): void {}
  unusable(): void {}
  options(list: unknown[]): void {
    this.offered.push(list);
  }
}

function memorySaved(): Saved {
  let v: Record<string, string> = {};
  return { get: () => ({ ...v }), set: (next) => (v = { ...next }) };
}

/** A chat over a fake service; `kept`: what the browser kept from an earlier visit; `user`: a signed-in user's id and hash. */
function harness(
  routes: Record<string, Route[]>,
  o: { online?: () => boolean; saved?: Saved; kept?: Record<string, string>; user?: { userId: string; userHash: string } } = {},
) {
  const svc = service({ '/visitor': visitor, '/': settings, ...routes });
  const saved = o.saved ?? memorySaved();
  if (o.kept) saved.set(o.kept);
  const view = new RecordingView();
  const sleeps: number[] = [];
  let wentOnline = 0;
  const t = transport({ server: 'https://sb.example', agent: 'shop', key: 'pk_test', ...o.user, saved, fetch: svc.fetch, now: () => NOW });
  const chat = new Chat(t, saved, view, {
    language: 'en',
    pageUrl: () => 'https://shop.example/cart',
    sleep: async (ms) => void sleeps.push(ms),
    online: o.online ?? (() => true),
    whenOnline: async () => void wentOnline++,
  });
  return { chat, view, svc, saved, sleeps, wentOnline: () => wentOnline };
}

describe('the widget without a browser', () => {
  it('puts the message back in the box and says the conversation ended when it was closed elsewhere (409), and sends nothing again', async () => {
    const h = harness({ '/converse': [() => problem(409, 'conversation_closed')] }, { kept: { conversation: 'c-1' } });
    const chat = h.chat;
    await chat.say('where is my order?');
    expect(h.view.shown()).toEqual([]);
    expect(h.view.box).toBe('where is my order?');
    expect(h.view.statuses.at(-1)).toBe('completed');
    expect(h.svc.requests.filter((r) => r.path === '/converse')).toHaveLength(1);
    expect(chat.busy).toBe(false);
  });

  it('waits as a 429 asks, says so, and sends the same message once accepted: shown once, the new conversation kept', async () => {
    const h = harness({
      '/converse': [() => problem(429, 'rate_limited', { 'retry-after': '7' }), () => sse([done('c-9', 'Which order?')])],
    });
    await h.chat.say('hello');
    expect(h.sleeps).toEqual([7000]);
    expect(h.view.errors[0]).toMatch(/sending again in 7 s/);
    expect(h.view.shown()).toEqual(['user: hello', 'agent: Which order?']);
    expect(h.saved.get().conversation).toBe('c-9');
    const bodies = h.svc.requests.filter((r) => r.path === '/converse').map((r) => JSON.parse(String(r.init.body)) as Record<string, unknown>);
    expect(bodies).toEqual([
      { message: 'hello', language: 'en', page_url: 'https://shop.example/cart' },
      { message: 'hello', language: 'en', page_url: 'https://shop.example/cart' },
    ]);
  });

  it('gives up after six tries of a failing service, backing off, and gives the message back', async () => {
    const h = harness({ '/converse': [() => problem(503, 'unavailable', { 'retry-after': '2' })] });
    await h.chat.say('hello');
    expect(h.svc.requests.filter((r) => r.path === '/converse')).toHaveLength(6);
    expect(h.sleeps).toEqual([2000, 2000, 4000, 4000, 4000]);
    expect(h.view.box).toBe('hello');
    expect(h.view.shown()).toEqual([]);
  });

  it('keeps an offline message until the browser is back online, then sends it', async () => {
    let calls = 0;
    const h = harness(
      {
        '/converse': [
          () => {
            calls++;
            throw new TypeError('Failed to fetch');
          },
          () => sse([done('c-2', 'Back again')]),
        ],
      },
      { online: () => calls === 0 },
    );
    await h.chat.say('are you there?');
    expect(h.view.errors[0]).toMatch(/offline/);
    expect(h.wentOnline()).toBe(1);
    expect(h.view.shown()).toEqual(['user: are you there?', 'agent: Back again']);
  });

  it('draws a streamed reply once per delta event, ending with the answer as stored', async () => {
    const deltas = ['Your ', 'order ', 'ships ', 'today.'];
    const h = harness({ '/converse': [() => sse([...deltas.map((text) => ({ event: 'delta', data: { text } })), done('c-3', 'Your order ships today.')])] });
    await h.chat.say('status?');
    expect(h.view.setTexts).toBe(deltas.length);
    expect(h.view.shown()).toEqual(['user: status?', 'agent: Your order ships today.']);
  });

  it('throws an error event of the stream as the problem it carries', async () => {
    const h = harness({ '/converse': [() => sse([{ event: 'error', data: { status: 422, code: 'limit_exceeded', detail: 'too long' } }])] });
    await h.chat.say('x'.repeat(10));
    expect(h.view.errors.at(-1)).toBe('too long');
    expect(h.view.box).toBe('x'.repeat(10));
  });

  it('shows a turn the event stream brings while a message is under way only once, after the answer', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const h = harness({
      '/converse': [
        async () => {
          await gate;
          return sse([done('c-4', 'Noted.')]);
        },
      ],
      '/conversations/c-4/events': [
        () =>
          sse([
            { id: '1-0', event: 'turn.created', data: { index: 0, role: 'user', message: 'hi' } },
            { id: '2-0', event: 'turn.created', data: { index: 1, role: 'agent', message: 'Noted.' } },
            { id: '3-0', event: 'turn.created', data: { index: 2, role: 'agent', message: 'A person here.', author: 'Sam' } },
          ]),
        () => new Promise<Response>(() => undefined),
      ],
    });
    const saying = h.chat.say('hi');
    release();
    await saying;
    await new Promise((r) => setTimeout(r, 20));
    expect(h.view.shown()).toEqual(['user: hi', 'agent: Noted.', 'agent: A person here.']);
    h.chat.destroy();
  });

  it('follows the event stream again after it drops, from the last event seen, and stops for a conversation that is gone', async () => {
    const h = harness(
      {
        '/conversations/c-5': [() => json(200, { turns: [], status: 'active', awaiting_input: true })],
        '/conversations/c-5/events': [
          () => sse([{ id: '5-0', event: 'status.changed', data: { to: 'escalated' } }]),
          () => sse([{ id: '6-0', event: 'turn.created', data: { index: 3, role: 'agent', message: 'Hello, Sam here.', author: 'Sam' } }]),
          () => problem(404, 'conversation_not_found'),
        ],
      },
      { kept: { conversation: 'c-5' } },
    );
    const chat = h.chat;
    await chat.start();
    await new Promise((r) => setTimeout(r, 30));
    const streams = h.svc.requests.filter((r) => r.path === '/conversations/c-5/events');
    expect(streams.map((r) => (r.init.headers as Record<string, string>)['last-event-id'] ?? null)).toEqual([null, '5-0', '6-0']);
    expect(h.view.statuses).toContain('escalated');
    expect(h.view.shown()).toEqual(['agent: Hello!', 'agent: Hello, Sam here.']);
  });

  it('asks for a visitor token once, keeps it, and asks again once for one the service refuses', async () => {
    let refused = false;
    const h = harness({
      '/visitor': [
        () => json(200, { visitor_token: 'vt_old', expires_at: new Date(NOW + 24 * 3600_000).toISOString() }),
        () => json(200, { visitor_token: 'vt_new', expires_at: new Date(NOW + 24 * 3600_000).toISOString() }),
      ],
      '/converse': [
        (_u, init) => {
          const token = (init.headers as Record<string, string>)['x-visitor-token'];
          if (token === 'vt_old' && refused) return problem(401, 'unauthorized');
          return sse([done('c-6', `token ${token}`)]);
        },
      ],
    });
    await h.chat.say('one');
    refused = true;
    await h.chat.say('two');
    expect(h.view.shown()).toEqual(['user: one', 'agent: token vt_old', 'user: two', 'agent: token vt_new']);
    const minted = h.svc.requests.filter((r) => r.path === '/visitor').map((r) => JSON.parse(String(r.init.body)) as unknown);
    expect(minted).toEqual([{}, { visitor_token: 'vt_old' }]);
    expect(h.saved.get().token).toBe('vt_new');
  });

  it("lists an answer's citations under it, from the answer and from the conversation read again", async () => {
    const cite = {
      source: 'help-centre',
      title: 'Help',
      url: 'https://shop.example/help.pdf',
      page: 3,
      heading: 'Warranty',
      passage_id: 'help-centre#4',
      snippet: 'Two years.',
    };
    const answer = {
      event: 'done',
      data: { conversation_id: 'c-3', response: { message: 'Two years.', options: [], citations: [cite] }, state: { status: 'active' } },
    };
    const h = harness({ '/converse': [() => sse([answer])] });
    await h.chat.say('how long is the warranty?');
    expect(h.view.shown()).toEqual(['user: how long is the warranty?', 'agent: Two years. [help-centre#4]']);
    h.chat.destroy();
    const again = harness(
      {
        '/conversations/c-3': [
          () =>
            json(200, {
              conversation_id: 'c-3',
              status: 'active',
              awaiting_input: false,
              turns: [
                { index: 0, role: 'user', message: 'how long is the warranty?', timestamp: new Date(NOW).toISOString() },
                { index: 1, role: 'agent', message: 'Two years.', timestamp: new Date(NOW).toISOString(), options: [], citations: [cite] },
              ],
            }),
        ],
      },
      { kept: { conversation: 'c-3' } },
    );
    await again.chat.start();
    expect(again.view.shown()).toEqual(['agent: Hello!', 'user: how long is the warranty?', 'agent: Two years. [help-centre#4]']);
    again.chat.destroy();
  });

  it('starts afresh when the kept conversation is gone (404), forgetting it', async () => {
    const h = harness({ '/conversations/c-7': [() => problem(404, 'conversation_not_found')] }, { kept: { conversation: 'c-7' } });
    const chat = h.chat;
    await chat.start();
    expect(chat.conversationId).toBeNull();
    expect(h.saved.get().conversation).toBeUndefined();
    expect(h.view.shown()).toEqual(['agent: Hello!']);
    chat.destroy();
  });
});

describe('the widget with a signed-in user', () => {
  it('asks for its token on load with the user id and hash, and says at once when the service refuses the hash', async () => {
    const { chat, svc, view } = harness(
      { '/visitor': [() => json(403, { status: 403, code: 'forbidden', detail: 'x-user-hash is not the signature of x-user-id' })] },
      { user: { userId: 'u-42', userHash: 'ab'.repeat(32) } },
    );
    await chat.start();
    const minted = svc.requests.find((r) => r.path === '/visitor')!;
    expect(minted.init.headers).toMatchObject({ 'x-user-id': 'u-42', 'x-user-hash': 'ab'.repeat(32) });
    expect(view.errors.at(-1)).toBe('This chat cannot sign you in: x-user-hash is not the signature of x-user-id.');
    expect(svc.requests.filter((r) => r.path === '/converse')).toEqual([]);
  });
});

describe("the widget's storage", () => {
  it('keeps what it is given in memory when the browser refuses storage, and reads nonsense stored as nothing', () => {
    const refusing = {
      getItem: () => {
        throw new Error('SecurityError');
      },
      setItem: () => {
        throw new Error('QuotaExceededError');
      },
    };
    const s = savedState('k', () => refusing);
    s.set({ token: 'vt', conversation: 'c' });
    expect(s.get()).toEqual({ token: 'vt', conversation: 'c' });
    const junk = savedState('k', () => ({ getItem: () => '[1,2', setItem: () => undefined }));
    expect(junk.get()).toEqual({});
  });
});
