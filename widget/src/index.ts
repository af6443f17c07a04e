// The Switchboard web chat widget: a launcher and a panel in a shadow root, talking to one agent
// through the service's widget routes (/widget/v1) with a publishable key. Everything the agent or
// the visitor writes is shown as text (text nodes; links built as elements, http and https only),
// never parsed as HTML. The conversation survives a reload and is shared by the site's tabs
// (localStorage); a person's replies arrive on the conversation's event stream.
import type { ConverseResponse, Option, WidgetConversation, WidgetSettings } from '@switchboard/contract';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { CSS } from './styles.js';

export interface WidgetOptions {
  /** The Switchboard service's base URL, such as https://switchboard.example.com. */
  server: string;
  /** The agent's slug. */
  agent: string;
  /** The publishable key (pk_…), made for this agent and this site's origin. */
  key: string;
  /** A signed-in user's id, with its HMAC-SHA-256 under the tenant's widget identity secret (computed by the site's server). */
  userId?: string;
  userHash?: string;
  /** The visitor's language; the browser's when absent. */
  language?: string;
  /** A CSP nonce for the widget's style element, where the browser lacks constructable style sheets. */
  nonce?: string;
  /** Where the widget's element goes (document.body when absent). */
  container?: HTMLElement;
  /** Open the panel at once. */
  open?: boolean;
}

export interface WidgetHandle {
  open(): void;
  close(): void;
  /** Removes the widget and ends its connections. */
  destroy(): void;
}

interface Problem {
  status?: number;
  code?: string;
  detail?: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
    readonly retryAfter: number | null,
  ) {
    super(problem.detail ?? `HTTP ${status}`);
  }
}

const RTL = new Set(['ar', 'he', 'fa', 'ur', 'ps', 'yi', 'dv', 'ku', 'sd', 'ug']);
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

/** Storage that outlives a reload when the browser allows it, and memory when it does not (a sandboxed frame). */
function store(name: string) {
  const memory = new Map<string, string>();
  return {
    get(): Record<string, string> {
      try {
        return JSON.parse(localStorage.getItem(name) ?? memory.get(name) ?? '{}') as Record<string, string>;
      } catch {
        return JSON.parse(memory.get(name) ?? '{}') as Record<string, string>;
      }
    },
    set(v: Record<string, string>) {
      memory.set(name, JSON.stringify(v));
      try {
        localStorage.setItem(name, JSON.stringify(v));
      } catch {
        /* storage refused: memory only */
      }
    },
  };
}

/** Black or white, whichever reads better on `hex` (WCAG relative luminance). */
function onColour(hex: string): string {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  const l = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? '#000' : '#fff';
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Text with its http(s) links as anchors; nothing in it is parsed as markup. */
function richText(into: HTMLElement, text: string): void {
  let at = 0;
  for (const m of text.matchAll(URL_IN_TEXT)) {
    const start = m.index ?? 0;
    if (start > at) into.append(document.createTextNode(text.slice(at, start)));
    const a = el('a', { href: m[0], target: '_blank', rel: 'noopener noreferrer nofollow ugc' }, m[0]);
    into.append(a);
    at = start + m[0].length;
  }
  if (at < text.length) into.append(document.createTextNode(text.slice(at)));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function mount(o: WidgetOptions): WidgetHandle {
  const server = o.server.replace(/\/+$/, '');
  const language = o.language ?? navigator.language;
  const saved = store(`switchboard-widget:${server}:${o.agent}:${o.userId ?? ''}`);
  const base = `${server}/widget/v1/agents/${encodeURIComponent(o.agent)}`;
  const q = `key=${encodeURIComponent(o.key)}`;
  const headers: Record<string, string> = {};
  if (o.userId) headers['x-user-id'] = o.userId;
  if (o.userHash) headers['x-user-hash'] = o.userHash;

  // ---- the elements ----
  const host = el('div', { 'data-switchboard-widget': o.agent });
  const shadow = host.attachShadow({ mode: 'open' });
  if ('adoptedStyleSheets' in shadow && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    shadow.adoptedStyleSheets = [sheet];
  } else {
    const style = el('style', o.nonce ? { nonce: o.nonce } : {}, CSS);
    shadow.append(style);
  }
  const root = el('div', { class: 'root' });
  const dir = RTL.has(language.toLowerCase().split('-')[0]) ? 'rtl' : document.documentElement.dir === 'rtl' ? 'rtl' : 'ltr';
  root.dir = dir;
  root.lang = language;
  const launcher = el('button', { class: 'launcher', type: 'button', 'aria-label': 'Open chat', 'aria-expanded': 'false', 'aria-controls': 'sb-panel' });
  const icon = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  icon.setAttribute('viewBox', '0 0 24 24');
  icon.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
  path.setAttribute('d', 'M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z');
  icon.append(path);
  launcher.append(icon);
  const panel = el('div', { class: 'panel', id: 'sb-panel', role: 'dialog', 'aria-labelledby': 'sb-title' });
  panel.hidden = true;
  const header = el('header');
  const title = el('h2', { id: 'sb-title' }, 'Chat');
  const closeButton = el('button', { type: 'button', 'aria-label': 'Close chat' }, '×');
  header.append(title, closeButton);
  const log = el('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-label': 'Conversation' });
  const error = el('div', { class: 'error', role: 'alert' });
  const form = el('form');
  const label = el('label', { class: 'sr-only', for: 'sb-input' }, 'Your message');
  const input = el('textarea', { id: 'sb-input', rows: '1', maxlength: '2000', placeholder: 'Type a message…' });
  const send = el('button', { type: 'submit' }, 'Send');
  form.append(label, input, send);
  panel.append(header, log, error, form);
  root.append(panel, launcher);
  shadow.append(root);
  (o.container ?? document.body).append(host);

  // ---- conversation state ----
  let settings: WidgetSettings | null = null;
  let conversationId: string | null = saved.get().conversation ?? null;
  let status: ConverseResponse['state']['status'] | null = null;
  const shown = new Map<number, HTMLElement | null>();
  let provisional: { role: 'user' | 'agent'; text: string; node: HTMLElement }[] = [];
  let options: HTMLElement | null = null;
  let notice: HTMLElement | null = null;
  let events: AbortController | null = null;
  let busy = false;
  const held: Parameters<typeof showTurn>[0][] = [];
  let started = false;
  const life = new AbortController();

  const scroll = () => (log.scrollTop = log.scrollHeight);
  const setError = (text: string) => (error.textContent = text);

  function bubble(role: 'user' | 'agent', text: string, author?: string): HTMLElement {
    const node = el('div', { class: `msg ${role}` });
    if (author) node.append(el('span', { class: 'author' }, author));
    const body = el('span');
    richText(body, text);
    node.append(body);
    log.append(node);
    scroll();
    return node;
  }

  function setOptions(list: Option[]): void {
    options?.remove();
    options = null;
    if (!list.length) return;
    options = el('div', { class: 'options', role: 'group', 'aria-label': 'Suggested replies' });
    for (const opt of list) {
      const b = el('button', { type: 'button' }, opt.label);
      b.addEventListener('click', () => void say(opt.value, opt.label));
      options.append(b);
    }
    log.append(options);
    scroll();
  }

  function setStatus(next: typeof status): void {
    status = next;
    notice?.remove();
    notice = null;
    const closed = next === 'completed' || next === 'abandoned';
    input.disabled = closed;
    send.disabled = closed || busy;
    if (next === 'escalated') notice = el('div', { class: 'notice' }, 'A person will answer here.');
    if (closed) {
      notice = el('div', { class: 'notice' }, 'This conversation has ended.');
      const again = el('button', { type: 'button' }, 'Start again');
      again.addEventListener('click', restart);
      notice.append(again);
    }
    if (notice) {
      log.append(notice);
      scroll();
    }
  }

  function remember(id: string | null): void {
    conversationId = id;
    const s = saved.get();
    if (id) s.conversation = id;
    else delete s.conversation;
    saved.set(s);
  }

  function restart(): void {
    events?.abort();
    remember(null);
    log.replaceChildren();
    shown.clear();
    provisional = [];
    options = null;
    setStatus(null);
    greet();
    input.focus();
  }

  function greet(): void {
    if (settings?.greeting) bubble('agent', settings.greeting);
  }

  /** One turn of the conversation's record or its event stream, shown once whichever brings it first. */
  function showTurn(t: { index: number; role: 'user' | 'agent'; message: string; author?: string }): void {
    if (shown.has(t.index)) return;
    // An empty reply (the agent is silent once a person has answered) shows nothing.
    if (t.role === 'agent' && !t.message) {
      shown.set(t.index, null);
      return;
    }
    // A turn of the message under way may come on the stream before its answer: it waits for it.
    if (busy) {
      held.push(t);
      return;
    }
    const mine = provisional.findIndex((p) => p.role === t.role && p.text === t.message);
    if (mine >= 0) {
      shown.set(t.index, provisional[mine].node);
      provisional.splice(mine, 1);
      return;
    }
    shown.set(t.index, bubble(t.role, t.message, t.author));
  }

  /**
   * The visitor's token as this browser keeps it, asked of the service on a first visit and
   * renewed (the same visitor) when less than an hour of it is left, or at once after the service
   * refused it (`stale`). One request at a time, whatever asks.
   */
  let minting: Promise<string> | null = null;
  function visitorToken(stale?: string): Promise<string> {
    const s = saved.get();
    if (s.token && s.token !== stale && Number(s.tokenExpires) - Date.now() > 3600_000) return Promise.resolve(s.token);
    minting ??= (async () => {
      try {
        const res = await fetch(`${base}/visitor?${q}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(s.token ? { visitor_token: s.token } : {}),
          credentials: 'omit',
        });
        if (!res.ok) throw await httpError(res);
        const v = (await res.json()) as { visitor_token: string; expires_at: string };
        saved.set({ ...saved.get(), token: v.visitor_token, tokenExpires: String(Date.parse(v.expires_at)) });
        return v.visitor_token;
      } finally {
        minting = null;
      }
    })();
    return minting;
  }

  async function httpError(res: Response): Promise<HttpError> {
    const problem = (await res.json().catch(() => ({}))) as Problem;
    const after = Number(res.headers.get('retry-after'));
    return new HttpError(res.status, problem, Number.isFinite(after) && after > 0 ? after : null);
  }

  /**
   * A request of the widget's routes with the visitor's token (asked again once if the service
   * refuses it); `visitor: false` sends no header of its own, so that it needs no preflight.
   */
  async function call(url: string, init: RequestInit, signal?: AbortSignal, visitor = true): Promise<Response> {
    for (let stale: string | undefined, tries = 0; ; tries++) {
      const token = visitor ? await visitorToken(stale) : undefined;
      const res = await fetch(url, {
        ...init,
        signal,
        headers: { ...(token ? { ...headers, 'x-visitor-token': token } : {}), ...(init.headers as Record<string, string>) },
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

  /** What the visitor reads for a failure, and whether (and when) to try again by itself. */
  function explain(err: unknown): { text: string; retryMs: number | null } {
    if (err instanceof HttpError) {
      if (err.status === 429) return { text: `Too many messages at once: sending again in ${err.retryAfter ?? 5} s.`, retryMs: (err.retryAfter ?? 5) * 1000 };
      if (err.status >= 500) return { text: 'The chat service is unavailable for a moment: trying again…', retryMs: (err.retryAfter ?? 3) * 1000 };
      if (err.status === 403) return { text: `This chat cannot run here: ${err.problem.detail ?? 'the site’s key does not allow this page'}.`, retryMs: null };
      if (err.status === 404) return { text: 'This chat is not available (the site’s key or agent is unknown).', retryMs: null };
      return { text: err.problem.detail ?? `The message was refused (${err.status}).`, retryMs: null };
    }
    if (!navigator.onLine) return { text: 'You are offline: your message is kept and sent when you are back.', retryMs: -1 };
    return { text: 'The chat service cannot be reached: trying again…', retryMs: 3000 };
  }

  async function settle(err: unknown, attempt: number): Promise<boolean> {
    const { text, retryMs } = explain(err);
    setError(text);
    if (retryMs === null || attempt >= 6 || life.signal.aborted) return false;
    if (retryMs < 0) await new Promise((r) => window.addEventListener('online', r, { once: true }));
    else await sleep(Math.min(30_000, retryMs * (attempt > 2 ? 2 : 1)));
    return !life.signal.aborted;
  }

  /** Sends one message (typed, or an option's value shown as its label), retrying where that makes sense. */
  async function say(message: string, shownAs = message): Promise<void> {
    if (busy || !message.trim()) return;
    busy = true;
    send.disabled = true;
    options?.remove();
    options = null;
    const mine = { role: 'user' as const, text: message, node: bubble('user', shownAs) };
    provisional.push(mine);
    const typing = el('div', { class: 'typing', 'aria-hidden': 'true' }, '…');
    let reply: { role: 'agent'; text: string; node: HTMLElement } | null = null;
    try {
      for (let attempt = 1; ; attempt++) {
        log.append(typing);
        scroll();
        try {
          const res = await call(
            `${base}/converse?${q}`,
            {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
              body: JSON.stringify({
                message,
                ...(conversationId ? { conversation_id: conversationId } : { language, page_url: location.href.slice(0, 2048) }),
              }),
            },
            life.signal,
          );
          const done = await readStream(res, (text) => {
            typing.remove();
            if (!reply) {
              reply = { role: 'agent', text: '', node: bubble('agent', '') };
              provisional.push(reply);
            }
            reply.text += text;
            const body = reply.node.lastElementChild as HTMLElement;
            body.replaceChildren();
            richText(body, reply.text);
            scroll();
          });
          typing.remove();
          setError('');
          const isNew = conversationId !== done.conversation_id;
          remember(done.conversation_id);
          if (!reply && done.response.message) {
            reply = { role: 'agent', text: done.response.message, node: bubble('agent', done.response.message) };
            provisional.push(reply);
          } else if (reply && reply.text !== done.response.message) {
            reply.text = done.response.message;
            const body = reply.node.lastElementChild as HTMLElement;
            body.replaceChildren();
            richText(body, reply.text);
          }
          setOptions(done.response.options);
          setStatus(done.state.status);
          if (isNew) follow(true);
          return;
        } catch (err) {
          typing.remove();
          if (err instanceof HttpError && err.status === 409) {
            // Closed elsewhere (a person, the sweeper): the message was not taken. It leaves the
            // log and goes back to the box, and the chat says it has ended.
            mine.node.remove();
            provisional.splice(provisional.indexOf(mine), 1);
            if (!input.value) input.value = message;
            setStatus('completed');
            return;
          }
          if (!(await settle(err, attempt))) {
            // Nothing the visitor typed is lost: the message goes back to the box.
            mine.node.remove();
            provisional.splice(provisional.indexOf(mine), 1);
            if (!input.value) input.value = message;
            return;
          }
        }
      }
    } finally {
      busy = false;
      send.disabled = status === 'completed' || status === 'abandoned';
      for (const t of held.splice(0)) showTurn(t);
    }
  }

  /** Reads a streamed converse answer: `delta` events as written, then `done` (or `error`, thrown). */
  async function readStream(res: Response, onDelta: (text: string) => void): Promise<ConverseResponse> {
    let done: ConverseResponse | null = null;
    let failed: Problem | null = null;
    const parser = createParser({
      onEvent: (e: EventSourceMessage) => {
        if (e.event === 'delta') onDelta((JSON.parse(e.data) as { text: string }).text);
        else if (e.event === 'done') done = JSON.parse(e.data) as ConverseResponse;
        else if (e.event === 'error') failed = JSON.parse(e.data) as Problem;
      },
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      parser.feed(value);
    }
    if (failed) throw new HttpError((failed as Problem).status ?? 500, failed, null);
    if (!done) throw new Error('the answer ended early');
    return done;
  }

  /**
   * Follows the conversation's events (a person's replies, status changes), resuming after a
   * dropped connection. A conversation just started is followed from its first event, so that a
   * reply written before the stream opened is not missed (turns already shown are not shown twice).
   */
  function follow(fromStart = false): void {
    events?.abort();
    const mine = (events = new AbortController());
    const id = conversationId;
    const resume: Record<string, string> = { accept: 'text/event-stream', ...(fromStart ? { 'last-event-id': '0-0' } : {}) };
    void (async () => {
      for (let attempt = 0; !mine.signal.aborted && id === conversationId; attempt++) {
        try {
          const res = await call(`${base}/conversations/${id}/events?${q}`, { headers: resume }, mine.signal);
          attempt = 0;
          const parser = createParser({
            onEvent: (e: EventSourceMessage) => {
              if (e.id) resume['last-event-id'] = e.id;
              const data = JSON.parse(e.data) as Record<string, unknown>;
              if (e.event === 'turn.created') {
                showTurn(data as { index: number; role: 'user' | 'agent'; message: string; author?: string });
                if (data.role === 'agent' && data.author) setOptions([]);
              } else if (e.event === 'status.changed') setStatus(data.to as typeof status);
            },
          });
          const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(value);
          }
        } catch (err) {
          if (mine.signal.aborted) return;
          if (err instanceof HttpError && err.status === 404) return;
        }
        await sleep(Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5)));
      }
    })();
  }

  /** The first opening: the agent's settings, then the stored conversation (its stream first, so nothing falls between). */
  async function start(): Promise<void> {
    if (started) return;
    started = true;
    for (let attempt = 1; ; attempt++) {
      try {
        // Without preflight: a page of an origin the key does not allow can read why it is refused.
        const res = await call(`${base}?${q}&language=${encodeURIComponent(language)}`, {}, life.signal, false);
        settings = (await res.json()) as WidgetSettings;
        break;
      } catch (err) {
        if (!(await settle(err, attempt))) {
          input.disabled = true;
          send.disabled = true;
          started = false;
          return;
        }
      }
    }
    setError('');
    title.textContent = settings.title;
    root.style.setProperty('--accent', settings.accent);
    root.style.setProperty('--on-accent', onColour(settings.accent));
    if (!conversationId) {
      greet();
      return;
    }
    follow();
    try {
      const res = await call(`${base}/conversations/${conversationId}?${q}`, {}, life.signal);
      const c = (await res.json()) as WidgetConversation;
      greet();
      for (const t of c.turns) showTurn(t);
      const lastTurn = c.turns.at(-1);
      if (lastTurn?.role === 'agent' && c.awaiting_input) setOptions(lastTurn.options ?? []);
      setStatus(c.status);
    } catch (err) {
      // A conversation that is gone (erased, another visitor's) starts afresh; it is forgotten
      // only if it is still the one kept (another tab may have started another since).
      if (err instanceof HttpError && err.status === 404) {
        events?.abort();
        if (saved.get().conversation === conversationId) remember(null);
        conversationId = null;
        greet();
      } else setError(explain(err).text);
    }
  }

  function open(): void {
    panel.hidden = false;
    launcher.setAttribute('aria-expanded', 'true');
    launcher.setAttribute('aria-label', 'Close chat');
    void start();
    input.focus();
  }

  function close(): void {
    panel.hidden = true;
    launcher.setAttribute('aria-expanded', 'false');
    launcher.setAttribute('aria-label', 'Open chat');
    launcher.focus();
  }

  launcher.addEventListener('click', () => (panel.hidden ? open() : close()));
  closeButton.addEventListener('click', close);
  panel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') close();
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || busy) return;
    input.value = '';
    void say(text);
  });
  // Another tab of the site started or ended a conversation: follow it here too.
  window.addEventListener(
    'storage',
    (e) => {
      if (e.key !== null && !e.key.startsWith('switchboard-widget:')) return;
      // The visitor may have changed too (storage cleared in another tab): the next call reads its token anew.
      const id = saved.get().conversation ?? null;
      if (id !== conversationId && started) {
        log.replaceChildren();
        shown.clear();
        provisional = [];
        conversationId = id;
        started = false;
        void start();
      }
    },
    { signal: life.signal },
  );
  if (o.open) open();

  return {
    open,
    close,
    destroy() {
      life.abort();
      events?.abort();
      host.remove();
    },
  };
}
