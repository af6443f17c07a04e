// The web chat widget in a real Chromium: a shop's page on another origin than the service, under a
// strict content security policy, loads the snippet as a site owner pastes it. Through the browser:
// the panel opens, the README conversation is held to completion, an option is clicked, a reload
// shows the history, an escalated conversation receives a person's reply sent through the API, a
// generative reply streams from the scripted model server, a page of an origin the key does not
// allow says so, hostile text stays text, axe reports nothing, and phone width does not scroll.
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { supportAgent } from '../helpers/agents.js';
import { hasBrowser, launch, seriousViolations, warnIfBrowserSkipped } from '../helpers/browser.js';
import { databases } from '../helpers/databases.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { ordersHandler, startBackend, type Backend } from '../helpers/servers.js';

warnIfBrowserSkipped();

// What the functions given to page.evaluate read: the page's globals (the tests' own program has no DOM types).
declare const document: any, window: any, localStorage: any, MutationObserver: any, getComputedStyle: any, navigator: any;

const T = { 'tenant-id': 'acme' };

// The widget as the sources say now (npm ci and npm test build it too).
beforeAll(() => {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-widget.ts'], { stdio: 'ignore' });
});

/** A site's page with the snippet, under a content security policy that allows the service's script and calls only. */
async function shopSite(
  body: (service: string, agent: string, open: boolean) => string,
): Promise<{ origin: string; close(): Promise<void>; service: { url: string } }> {
  const holder = { url: '' };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/') {
      res.writeHead(404).end();
      return;
    }
    const agent = url.searchParams.get('agent') ?? 'support';
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `default-src 'none'; script-src ${holder.url}; connect-src ${holder.url}; style-src 'none'; img-src 'none'; base-uri 'none'`,
    });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Acme shop</title></head>
<body><main><h1>Acme shop</h1><p>Our products.</p></main>${body(holder.url, agent, url.searchParams.has('open'))}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, 'localhost', r));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://localhost:${port}`, service: holder, close: () => new Promise((r) => server.close(() => r())) };
}

describe.skipIf(!hasBrowser)('the web chat widget in Chromium', () => {
  let backend: Backend;
  let llm: FakeLlm;
  let shop: Awaited<ReturnType<typeof shopSite>>;
  let elsewhere: Awaited<ReturnType<typeof shopSite>>;
  let key = '';
  beforeAll(async () => {
    backend = await startBackend(ordersHandler);
    llm = await startFakeLlm();
  });
  afterAll(async () => {
    await backend?.close();
    await llm?.close();
  });
  const f = appFixture(databases[0], {
    config: () => ({
      actionAllowedHosts: { acme: [`127.0.0.1:${backend.port}`] },
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 2000, maxRetries: 0, maxTokensPerConversation: 5000, tenantDailyTokens: 0 },
    }),
    agents: () => ({
      support: {
        ...supportAgent(backend.url),
        widget: { title: 'Acme support', greeting: 'Hi! Ask about an order, or talk to a person.', accent: '#0a5c36' },
      },
      helper: {
        name: 'Helper',
        capabilities: [
          { name: 'chat', examples: ['hello', 'hi there', 'can you help me'], phases: [{ id: 'assist', generate: { instructions: 'Help briefly.' } }] },
        ],
      },
      faq: {
        name: 'FAQ',
        knowledge_sources: [{ tag: 'help' }],
        routing: { fallback: 'docs' },
        capabilities: [{ name: 'docs', phases: [{ id: 'answer', answer: { not_found: 'fallback' } }] }],
      },
      hostile: {
        name: 'Hostile',
        routing: { fallback: 'trap' },
        capabilities: [
          {
            name: 'trap',
            examples: ['anything at all', 'hello', 'hi'],
            phases: [
              {
                id: 'p',
                say: '<img src=x onerror="window.pwned=1"> see https://example.com/help?a=1 and <b>bold</b>',
                options: [{ label: '<i>x</i>', value: 'x' }],
              },
            ],
          },
        ],
      },
    }),
  });
  const service = clientFixture(f);
  let close: () => Promise<void>;
  let context: Awaited<ReturnType<typeof launch>>['context'];
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    const snippet = (url: string, agent: string, open: boolean) =>
      `<script src="${url}/widget/v1.js" data-agent="${agent}" data-key="${key}"${open ? ' data-open="true"' : ''} async></script>`;
    shop = await shopSite(snippet);
    elsewhere = await shopSite(snippet);
    shop.service.url = service.url;
    elsewhere.service.url = service.url;
    const made = await request(f.app.app)
      .post('/api/v1/keys')
      .set(T)
      .send({ name: 'shop', widget: { agents: ['support', 'helper', 'hostile', 'faq'], origins: [shop.origin] } });
    key = made.body.key;
    await f.app.startBackground();
    ({ context, close } = await launch());
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  }, 60_000);
  afterAll(async () => {
    await close?.();
    await shop?.close();
    await elsewhere?.close();
  });

  const widget = (p = page) => p.locator('[data-switchboard-widget]');
  const messages = (p = page) => widget(p).locator('.msg');
  const send = async (text: string, p = page) => {
    await widget(p).getByLabel('Your message').fill(text);
    await widget(p).getByLabel('Your message').press('Enter');
  };

  it('opens from the launcher with the agent’s title and greeting, and holds the README conversation to completion', async () => {
    await page.goto(shop.origin);
    await widget().getByRole('button', { name: 'Open chat' }).click();
    await expect.poll(() => widget().getByRole('heading').textContent()).toBe('Acme support');
    await expect.poll(() => messages().allTextContents()).toEqual(['Hi! Ask about an order, or talk to a person.']);
    await send('where is my order?');
    await expect.poll(() => messages().count()).toBe(3);
    expect(await messages().nth(2).textContent()).toBe('What is your order number?');
    await send('100001');
    await expect.poll(() => messages().nth(4).textContent()).toMatch(/^Order 100001 shipped/);
    await expect.poll(() => widget().getByText('This conversation has ended.').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    // Its styles are its own: the page's CSP (style-src 'none') does not stop them, and they reach nothing outside.
    expect(
      await widget()
        .getByRole('button', { name: 'Close chat' })
        .first()
        .evaluate((b) => getComputedStyle(b).position),
    ).toBe('static');
    expect(await page.locator('h1').evaluate((h) => getComputedStyle(h).fontFamily)).not.toMatch(/system-ui/);
    const c = await request(f.app.app).get('/api/v1/agents/support/conversations?channel=web').set(T);
    expect(c.body.data[0]).toMatchObject({ status: 'completed', channel: { kind: 'web', origin: shop.origin, page_url: `${shop.origin}/` } });
  });

  it('sends an option’s value with a click, and shows the history again after a reload', async () => {
    await widget().getByRole('button', { name: 'Start again' }).click();
    await send('where is my order?');
    await widget().getByRole('button', { name: "I don't know it" }).click();
    await expect.poll(() => messages().count()).toBe(5);
    const before = await messages().allTextContents();
    await page.reload();
    await widget().getByRole('button', { name: 'Open chat' }).click();
    await expect.poll(() => messages().allTextContents()).toEqual([before[0], ...before.slice(1).map((t) => (t === "I don't know it" ? 'unknown' : t))]);
  });

  it("tells the visitor a person will answer, and shows the person's reply sent through the API", async () => {
    await page.goto(shop.origin);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await widget().getByRole('button', { name: 'Open chat' }).click();
    await send('talk to a human');
    await expect.poll(() => widget().getByText('A person will answer here.').count()).toBe(1);
    const list = await request(f.app.app).get('/api/v1/agents/support/conversations?channel=web&status=escalated').set(T);
    const id = list.body.data[0].id;
    await request(f.app.app).post(`/api/v1/agents/support/conversations/${id}/messages`).set(T).send({ message: 'Hi, Sam here.', author: 'Sam' }).expect(201);
    await expect.poll(() => messages().last().textContent(), { timeout: 10_000 }).toBe('SamHi, Sam here.');
    // The agent is silent once the person has answered: the visitor's next message gets no automatic bubble.
    await send('my parcel is late');
    await expect.poll(() => messages().last().textContent()).toBe('my parcel is late');
    await expect
      .poll(async () => (await request(f.app.app).get(`/api/v1/agents/support/conversations/${id}/history`).set(T)).body.turns.at(-1))
      .toMatchObject({ role: 'agent', message: '' });
    await expect.poll(() => widget().getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
    expect(await messages().last().textContent()).toBe('my parcel is late');
    expect(await widget().locator('.msg.agent').last().textContent()).toBe('SamHi, Sam here.');
  });

  it('streams a generative reply as the model writes it', async () => {
    llm.script({ text: 'Sure, I can help with that today.', pieces: ['Sure, ', 'I can ', 'help with ', 'that today.'], delayMs: 50 });
    const helperPage = await context.newPage();
    // Every event of the page's event-stream responses, as the service sent it: the widget reads a
    // copy of the body, and this reads the other.
    await helperPage.addInitScript(() => {
      const original = window.fetch;
      window.sseEvents = [];
      window.fetch = async (...args: unknown[]) => {
        const res = await original(...args);
        if (!String(res.headers.get('content-type') ?? '').startsWith('text/event-stream') || !res.body) return res;
        const [mine, theirs] = res.body.tee();
        void (async () => {
          const reader = theirs.getReader();
          const decoder = new TextDecoder();
          let buffer = '';
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            buffer += decoder.decode(value, { stream: true });
            for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
              window.sseEvents.push(buffer.slice(0, i));
              buffer = buffer.slice(i + 2);
            }
          }
        })();
        return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
      };
    });
    await helperPage.goto(`${shop.origin}/?agent=helper`);
    await widget(helperPage).getByRole('button', { name: 'Open chat' }).click();
    await expect.poll(() => messages(helperPage).count()).toBe(0);
    // Every text the agent's bubble shows, as it changes.
    await helperPage.evaluate(() => {
      const root = document.querySelector('[data-switchboard-widget]')!.shadowRoot!;
      const seen: string[] = [];
      window.seen = seen;
      new MutationObserver(() => {
        const last = [...root.querySelectorAll('.msg.agent')].at(-1)?.textContent;
        if (last !== undefined && seen.at(-1) !== last) seen.push(last);
      }).observe(root, { subtree: true, childList: true, characterData: true });
    });
    await send('hello', helperPage);
    await expect.poll(() => messages(helperPage).last().textContent()).toBe('Sure, I can help with that today.');
    // The service sent the reply in the model's four pieces, each its own delta event, before the end.
    const events = await helperPage.evaluate(() => window.sseEvents as string[]);
    const deltas = events.filter((e) => e.startsWith('event: delta')).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)).text as string);
    expect(deltas).toEqual(['Sure, ', 'I can ', 'help with ', 'that today.']);
    // And the widget showed the reply growing: a part of it before the whole.
    const seen = await helperPage.evaluate(() => window.seen as string[]);
    expect(seen.at(-1)).toBe('Sure, I can help with that today.');
    expect(seen.some((t) => t && t !== 'Sure, I can help with that today.' && 'Sure, I can help with that today.'.startsWith(t))).toBe(true);
    await helperPage.close();
  });

  it('shows hostile agent and visitor text as text, links only as safe links', async () => {
    const p = await context.newPage();
    await p.goto(`${shop.origin}/?agent=hostile&open`);
    await send('<script>window.pwned2=1</script><img src=x onerror="window.pwned3=1">', p);
    await expect.poll(() => messages(p).count()).toBe(2);
    expect(await messages(p).first().textContent()).toBe('<script>window.pwned2=1</script><img src=x onerror="window.pwned3=1">');
    expect(await messages(p).last().textContent()).toContain('<img src=x onerror="window.pwned=1">');
    expect(await widget(p).locator('.msg img, .msg b, .msg script').count()).toBe(0);
    expect(
      await widget(p)
        .locator('.msg a')
        .evaluate((a) => [a.getAttribute('href'), a.getAttribute('rel')]),
    ).toEqual(['https://example.com/help?a=1', 'noopener noreferrer nofollow ugc']);
    expect(await widget(p).getByRole('button', { name: '<i>x</i>' }).count()).toBe(1);
    expect(await p.evaluate(() => [window.pwned, window.pwned2, window.pwned3])).toEqual([undefined, undefined, undefined]);
    await p.close();
  });

  it("lists an answer's sources under it as links to the documents", async () => {
    await request(f.app.app)
      .put('/api/v1/knowledge/sources/hours')
      .set(T)
      .field('url', 'https://shop.example/hours')
      .field('tags', 'help')
      .attach('file', Buffer.from('# Opening hours\n\nOur shops open at 9 am and close at 6 pm.\n'), 'hours.md')
      .expect(202);
    await f.app.knowledge.idle();
    const p = await context.newPage();
    await p.goto(`${shop.origin}/?agent=faq&open`);
    await send('when do your shops open?', p);
    const sources = widget(p).getByRole('list', { name: 'Sources' });
    await sources.waitFor();
    expect(await sources.getByRole('link').evaluate((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('target')])).toEqual([
      'Opening hours',
      'https://shop.example/hours',
      '_blank',
    ]);
    await p.close();
  });

  it('says what happened when it is rate limited or offline, and sends the message by itself afterwards', async () => {
    const p = await context.newPage();
    await p.goto(shop.origin);
    await p.evaluate(() => localStorage.clear());
    await p.reload();
    let refused = 0;
    await p.route(/\/widget\/v1\/agents\/support\/converse/, async (route) => {
      if (route.request().method() === 'POST' && refused++ === 0) {
        await route.fulfill({
          status: 429,
          headers: {
            'content-type': 'application/problem+json',
            'retry-after': '1',
            'access-control-allow-origin': shop.origin,
            'access-control-expose-headers': 'retry-after',
          },
          body: JSON.stringify({ status: 429, code: 'rate_limited', detail: 'Too many requests for this visitor; retry later' }),
        });
      } else await route.continue();
    });
    await widget(p).getByRole('button', { name: 'Open chat' }).click();
    await send('where is my order?', p);
    await expect.poll(() => widget(p).getByRole('alert').textContent()).toBe('Too many messages at once: sending again in 1 s.');
    await expect.poll(() => messages(p).last().textContent(), { timeout: 10_000 }).toBe('What is your order number?');
    expect(refused).toBe(2);
    // The alert is emptied (and so hidden) once the message went.
    expect(await widget(p).locator('.error').textContent()).toBe('');
    await context.setOffline(true);
    await send('100001', p);
    await expect.poll(() => widget(p).getByRole('alert').textContent()).toBe('You are offline: your message is kept and sent when you are back.');
    await context.setOffline(false);
    await expect.poll(() => messages(p).last().textContent()).toMatch(/^Order 100001 shipped/);
    await p.close();
  });

  it('asks the service for a visitor token, keeps it, and asks again for one the service refuses', async () => {
    const p = await context.newPage();
    await p.goto(shop.origin);
    await p.evaluate(() => localStorage.clear());
    await p.reload();
    const minted: string[] = [];
    p.on('request', (r) => {
      if (r.method() === 'POST' && /\/visitor\?/.test(r.url())) minted.push(r.postData() ?? '');
    });
    await widget(p).getByRole('button', { name: 'Open chat' }).click();
    await send('where is my order?', p);
    await expect.poll(() => messages(p).last().textContent()).toBe('What is your order number?');
    expect(minted).toEqual(['{}']);
    const kept = (await p.evaluate(() => Object.entries(localStorage).map(([, v]) => JSON.parse(v as string) as Record<string, string>)))[0];
    expect(kept.token).toMatch(/^v1\./);
    // A token the service no longer takes (a forged one, kept far from expiry): refused once, then renewed, and the message goes.
    await p.evaluate(() => {
      for (const [k, v] of Object.entries(localStorage)) {
        const s = JSON.parse(v as string);
        localStorage.setItem(
          k,
          JSON.stringify({ ...s, token: `v1.${'A'.repeat(22)}.9999999999.${'B'.repeat(43)}`, tokenExpires: '99999999999999', conversation: undefined }),
        );
      }
    });
    await p.reload();
    await widget(p).getByRole('button', { name: 'Open chat' }).click();
    await send('where is my order?', p);
    await expect.poll(() => messages(p).last().textContent()).toBe('What is your order number?');
    expect(minted).toHaveLength(2);
    expect(JSON.parse(minted[1])).toEqual({ visitor_token: `v1.${'A'.repeat(22)}.9999999999.${'B'.repeat(43)}` });
    // The test before takes the whole browser offline for a moment: the first page's requests in that moment fail with
    // ERR_INTERNET_DISCONNECTED, and Chromium may report them after that test has ended.
    expect(problems.filter((m) => !/net::ERR_INTERNET_DISCONNECTED/.test(m))).toEqual([]);
    await p.close();
  });

  it('follows the visitor’s dark mode and a right-to-left language, and another tab’s conversation', async () => {
    const p = await context.newPage();
    await p.emulateMedia({ colorScheme: 'dark' });
    await p.goto(shop.origin);
    await p.evaluate(() => localStorage.clear());
    await p.reload();
    await widget(p).getByRole('button', { name: 'Open chat' }).click();
    const background = await widget(p)
      .getByRole('dialog')
      .evaluate((d) => getComputedStyle(d).backgroundColor);
    expect(background).toBe('rgb(22, 25, 29)');
    await send('where is my order?', p);
    await expect.poll(() => messages(p).count()).toBe(3);
    // Another tab of the site shows the same conversation.
    const other = await context.newPage();
    await other.goto(shop.origin);
    await widget(other).getByRole('button', { name: 'Open chat' }).click();
    await expect.poll(() => messages(other).allTextContents()).toEqual(await messages(p).allTextContents());
    await other.close();
    await p.close();
    const arabic = await context.newPage();
    await arabic.addInitScript(() => Object.defineProperty(navigator, 'language', { get: () => 'ar-EG' }));
    await arabic.goto(shop.origin);
    expect(
      await widget(arabic)
        .locator('.root')
        .evaluate((r) => [r.dir, r.lang]),
    ).toEqual(['rtl', 'ar-EG']);
    await arabic.close();
  });

  it('says clearly that it cannot run on a page of an origin the key does not allow, and starts nothing', async () => {
    const p = await context.newPage();
    await p.goto(elsewhere.origin);
    await widget(p).getByRole('button', { name: 'Open chat' }).click();
    await expect
      .poll(() => widget(p).getByRole('alert').textContent())
      .toMatch(/^This chat cannot run here: This key does not allow pages of http:\/\/localhost:\d+/);
    expect(await widget(p).getByLabel('Your message').isDisabled()).toBe(true);
    await p.close();
  });

  it('fits a phone’s width without scrolling sideways, and is used with the keyboard alone', async () => {
    const p = await context.newPage();
    await p.setViewportSize({ width: 360, height: 740 });
    await p.goto(shop.origin);
    await p.keyboard.press('Tab');
    await p.keyboard.press('Enter');
    await expect.poll(() => widget(p).getByRole('dialog').isVisible()).toBe(true);
    expect(await p.evaluate(() => document.activeElement?.shadowRoot?.activeElement?.id)).toBe('sb-input');
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    const box = await widget(p).getByRole('dialog').boundingBox();
    expect(box!.width).toBeLessThanOrEqual(360);
    expect(await seriousViolations(p)).toEqual([]);
    await p.keyboard.press('Escape');
    await expect.poll(() => widget(p).getByRole('dialog').isVisible()).toBe(false);
    await p.close();
    expect(problems.filter((m) => !/status of 403|Failed to load resource/.test(m))).toEqual([]);
  });

  it('puts a message back in the box when the conversation was closed elsewhere, and says it has ended', async () => {
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await widget().getByRole('button', { name: 'Open chat' }).click();
    await send('where is my order?');
    await expect.poll(() => messages().count()).toBe(3);
    await expect.poll(() => widget().getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
    const before = await messages().allTextContents();
    // The service's answer when a person or the sweeper closed the conversation a moment before.
    await page.route('**/widget/v1/agents/support/converse**', (route) =>
      route.fulfill({
        status: 409,
        headers: { 'access-control-allow-origin': shop.origin, 'content-type': 'application/problem+json' },
        body: JSON.stringify({ type: 'about:blank', title: 'Conflict', status: 409, code: 'conversation_closed', detail: 'The conversation is completed' }),
      }),
    );
    try {
      await send('100001');
      await expect.poll(() => widget().getByText('This conversation has ended.').count()).toBe(1);
      expect(await messages().allTextContents()).toEqual(before);
      expect(await widget().getByLabel('Your message').inputValue()).toBe('100001');
    } finally {
      await page.unroute('**/widget/v1/agents/support/converse**');
    }
  });
});
