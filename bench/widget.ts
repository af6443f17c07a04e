// `npm run bench:widget`: the web chat widget's targets, measured in this machine's Chromium.
//   - size: the script tag's build, gzip (target ≤ 30 KB);
//   - interactive: from the click on the launcher to a panel with the agent's greeting and an
//     enabled message box (target ≤ 300 ms, median of BENCH_ROUNDS fresh pages);
//   - first reply: from pressing Enter to the agent's reply shown, beside the same converse call
//     made by this process over the API (the ratio is what to judge, not the milliseconds).
// The server is the production build on a fresh SQLite file; the page is served from another
// origin, under a strict content security policy, as a customer's site would be.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { startShopPage } from '../examples/shop-page.js';
import { pct, startServer } from './server.js';

// What the function given to page.waitForFunction reads: the page's document (this program has no DOM types).
declare const document: any, window: any, MutationObserver: any;

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TARGET = { gzipKb: 30, interactiveMs: 300 };

execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-widget.ts'], { stdio: 'inherit' });
const gzipKb = gzipSync(readFileSync('widget/dist/v1.js')).length / 1024;

const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-widget-'));
const server = await startServer(`sqlite://${join(dir, 'bench.db')}`);
const shop = await startShopPage(0);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
try {
  const h = { 'tenant-id': 'bench', 'content-type': 'application/json' };
  const agent = {
    name: 'Bench',
    widget: { title: 'Bench', greeting: 'Hello! Ask me anything.' },
    capabilities: [
      { name: 'hello', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'p', say: 'Hi! How can I help?' }] },
      { name: 'orders', examples: ['where is my order', 'track my package'], phases: [{ id: 'q', say: 'Which order?' }] },
    ],
  };
  const put = await fetch(`${server.base}/api/v1/agents/bench`, { method: 'PUT', headers: h, body: JSON.stringify(agent) });
  if (!put.ok) throw new Error(`PUT answered ${put.status}`);
  const made = (await (
    await fetch(`${server.base}/api/v1/keys`, { method: 'POST', headers: h, body: JSON.stringify({ widget: { agents: ['bench'], origins: [shop.origin] } }) })
  ).json()) as { key: string };
  shop.show({ service: server.base, agent: 'bench', key: made.key });

  const interactive: number[] = [];
  const reply: number[] = [];
  const next: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(shop.origin);
    const widget = page.locator('[data-switchboard-widget]');
    const launcher = widget.getByRole('button', { name: 'Open chat' });
    await launcher.waitFor();
    // Measured in the page: the click, then the first frame with the greeting and an enabled box.
    const started = await page.evaluate(() => performance.now());
    await launcher.click();
    await widget.locator('.msg.agent').first().waitFor();
    await page.waitForFunction(() => {
      const root = document.querySelector('[data-switchboard-widget]')?.shadowRoot;
      const box = root?.querySelector('textarea');
      return !!box && !box.disabled && !!root?.querySelector('.msg.agent');
    });
    interactive.push((await page.evaluate(() => performance.now())) - started);
    // Measured in the page: the Enter that sends, then the frame with the agent's n-th reply in it.
    await page.evaluate(() => {
      const root = document.querySelector('[data-switchboard-widget]').shadowRoot;
      const w = window as any;
      w.times = [];
      root.addEventListener('keydown', (e: { key: string }) => e.key === 'Enter' && w.times.push({ sent: performance.now() }), { capture: true });
      new MutationObserver(() => {
        const last = w.times.at(-1);
        const agents = root.querySelectorAll('.msg.agent');
        if (last && last.replied === undefined && agents.length > w.times.length && agents[w.times.length].textContent) last.replied = performance.now();
      }).observe(root, { subtree: true, childList: true, characterData: true });
    });
    for (const [n, message] of ['hello', 'where is my order'].entries()) {
      await widget.getByLabel('Your message').fill(message);
      await widget.getByLabel('Your message').press('Enter');
      await page.waitForFunction((k: number) => (window as any).times[k]?.replied !== undefined, n);
    }
    const times = (await page.evaluate(() => (window as any).times)) as { sent: number; replied: number }[];
    reply.push(times[0].replied - times[0].sent);
    next.push(times[1].replied - times[1].sent);
    await context.close();
  }

  const api: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const r = await fetch(`${server.base}/api/v1/agents/bench/converse`, { method: 'POST', headers: h, body: JSON.stringify({ message: 'hello' }) });
    await r.json();
    api.push(performance.now() - t);
  }
  // The widget's own route, streamed, from this process: what the server adds, apart from the browser.
  const streamed: number[] = [];
  const minted = await fetch(`${server.base}/widget/v1/agents/bench/visitor?key=${made.key}`, {
    method: 'POST',
    headers: { origin: shop.origin, 'content-type': 'application/json' },
    body: '{}',
  });
  const { visitor_token: token } = (await minted.json()) as { visitor_token: string };
  const wh = { origin: shop.origin, 'x-visitor-token': token, 'content-type': 'application/json', accept: 'text/event-stream' };
  let conversation: string | undefined;
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const r = await fetch(`${server.base}/widget/v1/agents/bench/converse?key=${made.key}`, {
      method: 'POST',
      headers: wh,
      body: JSON.stringify({ message: 'hello', ...(conversation ? { conversation_id: conversation } : {}) }),
    });
    const text = await r.text();
    streamed.push(performance.now() - t);
    conversation ??= /"conversation_id":"([^"]+)"/.exec(text)?.[1];
  }
  const median = (xs: number[]) => pct(xs, 50);
  const line = (what: string, value: string, ok: boolean | null) =>
    console.log(`${what.padEnd(44)} ${value.padStart(12)}${ok === null ? '' : ok ? '   ok' : '   OVER TARGET'}`);
  console.log(`\nweb chat widget, ${ROUNDS} fresh pages in Chromium (${CHROMIUM})`);
  line(`script, gzip (target ≤ ${TARGET.gzipKb} KB)`, `${gzipKb.toFixed(1)} KB`, gzipKb <= TARGET.gzipKb);
  line(
    `panel interactive after the click, median (≤ ${TARGET.interactiveMs} ms)`,
    `${median(interactive).toFixed(0)} ms`,
    median(interactive) <= TARGET.interactiveMs,
  );
  line('panel interactive after the click, p90', `${pct(interactive, 90).toFixed(0)} ms`, null);
  line('first reply in the widget, median (with preflight)', `${median(reply).toFixed(0)} ms`, null);
  line('second reply in the widget, median', `${median(next).toFixed(0)} ms`, null);
  line('the same converse over the API from node, median', `${median(api).toFixed(0)} ms`, null);
  line("the widget's route, streamed, from node, median", `${median(streamed).toFixed(0)} ms`, null);
  line('widget second reply / API reply', `${(median(next) / median(api)).toFixed(2)}×`, null);
} finally {
  await browser.close();
  shop.server.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
