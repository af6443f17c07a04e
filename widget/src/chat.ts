// The widget's conversation as the visitor sees it, without the DOM: which turns are shown (once,
// whichever of the answer and the event stream brings them first), the message under way and its
// retries, a conversation closed elsewhere (409), the event stream and its reconnection, and what
// is kept for the next visit. The view (view.ts) draws what this decides; tests drive it in Node.
import type { Citation, ConverseResponse, Option, WidgetSettings } from '@switchboard/contract';
import type { Saved } from './storage.js';
import { explain, HttpError, type Transport } from './transport.js';

export type Status = ConverseResponse['state']['status'];

/** A message on screen, its text replaceable (a streamed reply grows). */
export interface Bubble {
  setText(text: string): void;
  /** The passages an answer cites, as links under it (none: nothing shown). */
  cite(citations: Citation[]): void;
  remove(): void;
}

export interface ChatView {
  bubble(role: 'user' | 'agent', text: string, author?: string): Bubble;
  typing(shown: boolean): void;
  /** The suggested replies; none clears them. */
  options(list: Option[]): void;
  /** The conversation's status: a notice (a person will answer, it has ended) and whether the box takes text. */
  status(status: Status | null): void;
  /** Whether a message is under way (the send button waits). */
  busy(busy: boolean): void;
  error(text: string): void;
  /** A message that was not sent goes back to the box (unless the visitor has typed another). */
  putBack(message: string): void;
  clear(): void;
  settings(s: WidgetSettings): void;
  /** The widget cannot run (its settings could not be read): nothing can be sent. */
  unusable(): void;
}

export interface ChatEnv {
  language: string;
  pageUrl(): string;
  sleep(ms: number): Promise<void>;
  online(): boolean;
  whenOnline(): Promise<void>;
}

interface Turn {
  index: number;
  role: 'user' | 'agent';
  message: string;
  author?: string;
  citations?: Citation[];
}

/** Tries of one message (or of reading the settings) before it is given back. */
const MAX_ATTEMPTS = 6;

export class Chat {
  settings: WidgetSettings | null = null;
  conversationId: string | null;
  status: Status | null = null;
  busy = false;
  private readonly shown = new Map<number, Bubble | null>();
  private provisional: { role: 'user' | 'agent'; text: string; node: Bubble }[] = [];
  private readonly held: Turn[] = [];
  private started = false;
  private events: AbortController | null = null;
  private readonly life = new AbortController();

  constructor(
    private readonly t: Transport,
    private readonly saved: Saved,
    private readonly view: ChatView,
    private readonly env: ChatEnv,
  ) {
    this.conversationId = saved.get().conversation ?? null;
  }

  /** The first opening: the agent's settings, then the stored conversation (its stream first, so nothing falls between). */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (let attempt = 1; ; attempt++) {
      try {
        this.settings = await this.t.settings(this.env.language, this.life.signal);
        break;
      } catch (err) {
        if (!(await this.settle(err, attempt))) {
          this.view.unusable();
          this.started = false;
          return;
        }
      }
    }
    this.view.error('');
    this.view.settings(this.settings);
    if (this.t.identified) {
      // A signed-in user: the token is asked for now, so that a wrong user hash is said on load.
      try {
        await this.t.visitorToken();
      } catch (err) {
        this.view.error(
          err instanceof HttpError && err.status === 403
            ? `This chat cannot sign you in: ${err.problem.detail ?? 'the user hash is refused'}.`
            : explain(err, this.env.online()).text,
        );
        this.view.unusable();
        this.started = false;
        return;
      }
    }
    const id = this.conversationId;
    if (!id) {
      this.greet();
      return;
    }
    this.follow();
    try {
      const c = await this.t.conversation(id, this.life.signal);
      this.greet();
      for (const turn of c.turns) this.showTurn(turn);
      const last = c.turns.at(-1);
      if (last?.role === 'agent' && c.awaiting_input) this.view.options(last.options ?? []);
      this.setStatus(c.status);
    } catch (err) {
      // A conversation that is gone (erased, another visitor's) starts afresh; it is forgotten
      // only if it is still the one kept (another tab may have started another since).
      if (err instanceof HttpError && err.status === 404) {
        this.events?.abort();
        if (this.saved.get().conversation === id) this.remember(null);
        this.conversationId = null;
        this.greet();
      } else this.view.error(explain(err, this.env.online()).text);
    }
  }

  /** Sends one message (typed, or an option's value shown as its label), retrying where that makes sense. */
  async say(message: string, shownAs = message): Promise<void> {
    if (this.busy || !message.trim()) return;
    this.setBusy(true);
    this.view.options([]);
    const mine = { role: 'user' as const, text: message, node: this.view.bubble('user', shownAs) };
    this.provisional.push(mine);
    let reply: { role: 'agent'; text: string; node: Bubble } | null = null;
    const giveBack = () => {
      mine.node.remove();
      this.provisional.splice(this.provisional.indexOf(mine), 1);
      this.view.putBack(message);
    };
    try {
      for (let attempt = 1; ; attempt++) {
        this.view.typing(true);
        try {
          const body = this.conversationId
            ? { message, conversation_id: this.conversationId }
            : { message, language: this.env.language, page_url: this.env.pageUrl().slice(0, 2048) };
          const done = await this.t.converse(body, this.life.signal, (text) => {
            this.view.typing(false);
            if (!reply) {
              reply = { role: 'agent', text: '', node: this.view.bubble('agent', '') };
              this.provisional.push(reply);
            }
            reply.text += text;
            reply.node.setText(reply.text);
          });
          this.view.typing(false);
          this.view.error('');
          const isNew = this.conversationId !== done.conversation_id;
          this.remember(done.conversation_id);
          if (!reply && done.response.message) {
            reply = { role: 'agent', text: done.response.message, node: this.view.bubble('agent', done.response.message) };
            this.provisional.push(reply);
          } else if (reply && reply.text !== done.response.message) {
            reply.text = done.response.message;
            reply.node.setText(reply.text);
          }
          if (reply && done.response.citations?.length) reply.node.cite(done.response.citations);
          this.view.options(done.response.options);
          this.setStatus(done.state.status);
          if (isNew) this.follow(true);
          return;
        } catch (err) {
          this.view.typing(false);
          if (err instanceof HttpError && err.status === 409) {
            // Closed elsewhere (a person, the sweeper): the message was not taken. It leaves the
            // log and goes back to the box, and the chat says it has ended.
            giveBack();
            this.setStatus('completed');
            return;
          }
          // Nothing the visitor typed is lost: a message that is not retried goes back to the box.
          if (!(await this.settle(err, attempt))) {
            giveBack();
            return;
          }
        }
      }
    } finally {
      this.setBusy(false);
      for (const turn of this.held.splice(0)) this.showTurn(turn);
    }
  }

  /** A new conversation: the old one is forgotten here (and in the site's other tabs). */
  restart(): void {
    this.events?.abort();
    this.remember(null);
    this.reset();
    this.setStatus(null);
    this.greet();
  }

  /** Another tab of the site started or ended a conversation: follow it here too. */
  storageChanged(): void {
    const id = this.saved.get().conversation ?? null;
    if (id === this.conversationId || !this.started) return;
    this.events?.abort();
    this.reset();
    this.conversationId = id;
    this.started = false;
    void this.start();
  }

  destroy(): void {
    this.life.abort();
    this.events?.abort();
  }

  private reset(): void {
    this.view.clear();
    this.shown.clear();
    this.provisional = [];
  }

  private setBusy(busy: boolean): void {
    this.busy = busy;
    this.view.busy(busy);
  }

  private setStatus(next: Status | null): void {
    this.status = next;
    this.view.status(next);
  }

  private greet(): void {
    if (this.settings?.greeting) this.view.bubble('agent', this.settings.greeting);
  }

  private remember(id: string | null): void {
    this.conversationId = id;
    const s = this.saved.get();
    if (id) s.conversation = id;
    else delete s.conversation;
    this.saved.set(s);
  }

  /** One turn of the conversation's record or its event stream, shown once whichever brings it first. */
  private showTurn(t: Turn): void {
    if (this.shown.has(t.index)) return;
    // An empty reply (the agent is silent once a person has answered) shows nothing.
    if (t.role === 'agent' && !t.message) {
      this.shown.set(t.index, null);
      return;
    }
    // A turn of the message under way may come on the stream before its answer: it waits for it.
    if (this.busy) {
      this.held.push(t);
      return;
    }
    const mine = this.provisional.findIndex((p) => p.role === t.role && p.text === t.message);
    if (mine >= 0) {
      this.shown.set(t.index, this.provisional[mine].node);
      this.provisional.splice(mine, 1);
      return;
    }
    const node = this.view.bubble(t.role, t.message, t.author);
    if (t.citations?.length) node.cite(t.citations);
    this.shown.set(t.index, node);
  }

  /** Says what failed and waits to try again; false when it is not tried again. */
  private async settle(err: unknown, attempt: number): Promise<boolean> {
    const { text, retryMs } = explain(err, this.env.online());
    this.view.error(text);
    if (retryMs === null || attempt >= MAX_ATTEMPTS || this.life.signal.aborted) return false;
    if (retryMs < 0) await this.env.whenOnline();
    else await this.env.sleep(Math.min(30_000, retryMs * (attempt > 2 ? 2 : 1)));
    return !this.life.signal.aborted;
  }

  /**
   * Follows the conversation's events (a person's replies, status changes), resuming after a
   * dropped connection from the last event seen, with a growing pause (1 s, 2 s, … 30 s) while it
   * cannot connect; it stops for a conversation that is gone (404) or no longer this one. A
   * conversation just started is followed from its first event, so that a reply written before
   * the stream opened is not missed (turns already shown are not shown twice).
   */
  private follow(fromStart = false): void {
    this.events?.abort();
    const mine = (this.events = new AbortController());
    const id = this.conversationId;
    if (!id) return;
    let lastEventId: string | null = fromStart ? '0-0' : null;
    void (async () => {
      for (let attempt = 0; !mine.signal.aborted && id === this.conversationId; attempt++) {
        try {
          await this.t.events(id, lastEventId, mine.signal, (e) => {
            attempt = 0;
            if (e.id) lastEventId = e.id;
            const data = JSON.parse(e.data) as Record<string, unknown>;
            if (e.event === 'turn.created') {
              this.showTurn(data as unknown as Turn);
              if (data.role === 'agent' && data.author) this.view.options([]);
            } else if (e.event === 'status.changed') this.setStatus(data.to as Status);
          });
        } catch (err) {
          if (mine.signal.aborted) return;
          if (err instanceof HttpError && err.status === 404) return;
        }
        await this.env.sleep(Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5)));
      }
    })();
  }
}
