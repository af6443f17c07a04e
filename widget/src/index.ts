// The Switchboard web chat widget: a launcher and a panel in a shadow root, talking to one agent
// through the service's widget routes (/widget/v1) with a publishable key. The conversation
// survives a reload and is shared by the site's tabs (localStorage); a person's replies arrive on
// the conversation's event stream. In parts: storage.ts (what is kept), transport.ts (the
// requests), chat.ts (the conversation's state, without the DOM) and view.ts (the elements).
import { Chat } from './chat.js';
import { savedState } from './storage.js';
import { transport } from './transport.js';
import { createView } from './view.js';

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

export function mount(o: WidgetOptions): WidgetHandle {
  const server = o.server.replace(/\/+$/, '');
  const language = o.language ?? navigator.language;
  const saved = savedState(`switchboard-widget:${server}:${o.agent}:${o.userId ?? ''}`);
  const life = new AbortController();
  const view = createView(
    { agent: o.agent, language, nonce: o.nonce, container: o.container },
    {
      choose: (opt) => void chat.say(opt.value, opt.label),
      submit: (text) => void chat.say(text),
      restart: () => chat.restart(),
      opened: () => void chat.start(),
    },
  );
  const chat = new Chat(transport({ server, agent: o.agent, key: o.key, userId: o.userId, userHash: o.userHash, saved }), saved, view, {
    language,
    pageUrl: () => location.href,
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    online: () => navigator.onLine,
    whenOnline: () => new Promise((r) => window.addEventListener('online', () => r(), { once: true, signal: life.signal })),
  });
  // Another tab of the site started or ended a conversation (or cleared the visitor): follow it.
  window.addEventListener(
    'storage',
    (e) => {
      if (e.key === null || e.key.startsWith('switchboard-widget:')) chat.storageChanged();
    },
    { signal: life.signal },
  );
  if (o.open) view.open();
  return {
    open: () => view.open(),
    close: () => view.close(),
    destroy() {
      life.abort();
      chat.destroy();
      view.host.remove();
    },
  };
}
