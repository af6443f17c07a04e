// The widget's elements in a shadow root: a launcher and a panel, drawn as chat.ts decides.
// Everything the agent or the visitor writes is shown as text (text nodes; links built as
// elements, http and https only), never parsed as HTML.
import type { Option, WidgetSettings } from '@switchboard/contract';
import type { Bubble, ChatView, Status } from './chat.js';
import { CSS } from './styles.js';

const RTL = new Set(['ar', 'he', 'fa', 'ur', 'ps', 'yi', 'dv', 'ku', 'sd', 'ug']);
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

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
  into.replaceChildren();
  let at = 0;
  for (const m of text.matchAll(URL_IN_TEXT)) {
    const start = m.index ?? 0;
    if (start > at) into.append(document.createTextNode(text.slice(at, start)));
    into.append(el('a', { href: m[0], target: '_blank', rel: 'noopener noreferrer nofollow ugc' }, m[0]));
    at = start + m[0].length;
  }
  if (at < text.length) into.append(document.createTextNode(text.slice(at)));
}

export interface ViewHandlers {
  /** The visitor chose a suggested reply. */
  choose(option: Option): void;
  /** The visitor sent what they typed. */
  submit(text: string): void;
  restart(): void;
  /** The panel opened (the first time: the chat starts). */
  opened(): void;
}

export interface WidgetView extends ChatView {
  host: HTMLElement;
  open(): void;
  close(): void;
}

export function createView(o: { agent: string; language: string; nonce?: string; container?: HTMLElement }, on: ViewHandlers): WidgetView {
  const host = el('div', { 'data-switchboard-widget': o.agent });
  const shadow = host.attachShadow({ mode: 'open' });
  if ('adoptedStyleSheets' in shadow && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    shadow.adoptedStyleSheets = [sheet];
  } else {
    shadow.append(el('style', o.nonce ? { nonce: o.nonce } : {}, CSS));
  }
  const root = el('div', { class: 'root' });
  root.dir = RTL.has(o.language.toLowerCase().split('-')[0]) ? 'rtl' : document.documentElement.dir === 'rtl' ? 'rtl' : 'ltr';
  root.lang = o.language;
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

  const typing = el('div', { class: 'typing', 'aria-hidden': 'true' }, '…');
  let options: HTMLElement | null = null;
  let notice: HTMLElement | null = null;
  let closed = false;
  let busy = false;
  const scroll = () => (log.scrollTop = log.scrollHeight);

  const view: WidgetView = {
    host,
    bubble(role, text, author): Bubble {
      const node = el('div', { class: `msg ${role}` });
      if (author) node.append(el('span', { class: 'author' }, author));
      const body = el('span');
      richText(body, text);
      node.append(body);
      log.append(node);
      scroll();
      return {
        setText(next) {
          richText(body, next);
          scroll();
        },
        cite(citations) {
          node.querySelector('.sources')?.remove();
          // Only web links become links; a citation without one is named.
          if (!citations.length) return;
          const list = el('ul', { class: 'sources', 'aria-label': 'Sources' });
          for (const c of citations) {
            const title = c.title ?? c.source;
            const where = c.page !== null ? `page ${c.page}` : c.heading !== title ? c.heading : null;
            const name = where ? `${title}, ${where}` : title;
            const item = el('li');
            item.append(/^https?:\/\//i.test(c.url ?? '') ? el('a', { href: c.url!, target: '_blank', rel: 'noopener noreferrer nofollow' }, name) : name);
            list.append(item);
          }
          node.append(list);
          scroll();
        },
        remove: () => node.remove(),
      };
    },
    typing(shown) {
      if (!shown) typing.remove();
      else {
        log.append(typing);
        scroll();
      }
    },
    options(list) {
      options?.remove();
      options = null;
      if (!list.length) return;
      options = el('div', { class: 'options', role: 'group', 'aria-label': 'Suggested replies' });
      for (const opt of list) {
        const b = el('button', { type: 'button' }, opt.label);
        b.addEventListener('click', () => on.choose(opt));
        options.append(b);
      }
      log.append(options);
      scroll();
    },
    status(next: Status | null) {
      notice?.remove();
      notice = null;
      closed = next === 'completed' || next === 'abandoned';
      input.disabled = closed;
      send.disabled = closed || busy;
      if (next === 'escalated') notice = el('div', { class: 'notice' }, 'A person will answer here.');
      if (closed) {
        notice = el('div', { class: 'notice' }, 'This conversation has ended.');
        const again = el('button', { type: 'button' }, 'Start again');
        again.addEventListener('click', () => {
          on.restart();
          input.focus();
        });
        notice.append(again);
      }
      if (notice) {
        log.append(notice);
        scroll();
      }
    },
    busy(b) {
      busy = b;
      send.disabled = closed || busy;
    },
    error(text) {
      error.textContent = text;
    },
    putBack(message) {
      if (!input.value) input.value = message;
    },
    clear() {
      log.replaceChildren();
      options = null;
      notice = null;
    },
    settings(s: WidgetSettings) {
      title.textContent = s.title;
      root.style.setProperty('--accent', s.accent);
      root.style.setProperty('--on-accent', onColour(s.accent));
    },
    unusable() {
      input.disabled = true;
      send.disabled = true;
    },
    open() {
      panel.hidden = false;
      launcher.setAttribute('aria-expanded', 'true');
      launcher.setAttribute('aria-label', 'Close chat');
      on.opened();
      input.focus();
    },
    close() {
      panel.hidden = true;
      launcher.setAttribute('aria-expanded', 'false');
      launcher.setAttribute('aria-label', 'Open chat');
      launcher.focus();
    },
  };

  launcher.addEventListener('click', () => (panel.hidden ? view.open() : view.close()));
  closeButton.addEventListener('click', () => view.close());
  panel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') view.close();
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
    on.submit(text);
  });
  return view;
}
