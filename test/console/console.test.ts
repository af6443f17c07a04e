// The console (/console) in a real Chromium against a real server on SQLite: sign-in in both auth
// modes and with an OpenID provider, the agents, conversations with live updates, a conversation's routing bars, action call
// and verified audit chain, an operator answering an escalated conversation, the playground on a
// draft with a streamed model reply and "save as test", versions with their diff and activation,
// a replay, the tests page, analytics charts, keyboard use, phone width; axe-core on every page,
// and no console errors. CONSOLE_SCREENSHOTS=DIR writes the screenshots of docs/console.md.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { tmpdir } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { databases } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { freePort, ordersHandler, startBackend, listen, type Backend } from '../helpers/servers.js';
import { oidcSettings, startProvider, type TestProvider } from '../helpers/oidc.js';
import { supportAgent } from '../helpers/agents.js';
import { hasBrowser, launch, seriousViolations, warnIfBrowserSkipped } from '../helpers/browser.js';
import { slackHeaders } from '../helpers/fake-providers.js';

warnIfBrowserSkipped();

const sqlite = databases[0];
const SHOTS = process.env.CONSOLE_SCREENSHOTS;

const helperAgent = {
  name: 'Helper',
  llm: { model: 'helper-model' },
  capabilities: [
    {
      name: 'chat',
      examples: ['hello', 'hi there', 'can you help me', 'i have a question', 'good morning'],
      phases: [{ id: 'assist', generate: { instructions: 'Help the customer briefly.' } }],
    },
  ],
};

function buildConsole(): void {
  execFileSync(process.execPath, [join('node_modules', 'vite', 'bin', 'vite.js'), 'build', 'console', '--logLevel', 'warn'], { stdio: 'inherit' });
}

// The console as the sources say now (npm ci builds it too, but sources may have changed since).
beforeAll(() => {
  if (!hasBrowser) return;
  buildConsole();
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-widget.ts'], { stdio: 'ignore' });
}, 120_000);

describe.skipIf(!hasBrowser)('the console in Chromium', () => {
  let backend: Backend;
  let llm: FakeLlm;
  beforeAll(async () => {
    // The orders API, and a help page for a web knowledge source.
    backend = await startBackend((req, res) =>
      req.url === '/help/returns'
        ? void res
            .writeHead(200, { 'content-type': 'text/html', etag: '"r1"' })
            .end(
              '<html><head><title>Returns</title></head><body><article><h1>Returns</h1><p>Items can be returned within 30 days of delivery.</p></article></body></html>',
            )
        : ordersHandler(req, res),
    );
    llm = await startFakeLlm();
  });
  afterAll(async () => {
    await backend?.close();
    await llm?.close();
  });
  const f = appFixture(sqlite, {
    config: () => ({
      secretsKey: Buffer.alloc(32, 7),
      actionAllowedHosts: { acme: [`127.0.0.1:${backend.port}`] },
      llm: {
        url: llm.url,
        model: 'fake-model',
        models: ['helper-model'],
        timeoutMs: 2000,
        maxRetries: 0,
        maxTokensPerConversation: 5000,
        tenantDailyTokens: 0,
      },
    }),
    agents: () => ({ support: supportAgent(backend.url), helper: helperAgent }),
  });
  const server = clientFixture(f);

  let close: () => Promise<void>;
  let page: Page;
  let context: Awaited<ReturnType<typeof launch>>['context'];
  const problems: string[] = [];
  const ids: Record<string, string> = {};
  let savedTest = '';

  const watch = (p: Page) => {
    p.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  };
  const url = (path: string) => `${server.url}/console${path}`;
  const shot = async (name: string) => {
    if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
  };
  const accessible = async () => expect(await seriousViolations(page)).toEqual([]);
  const say = async (message: string, conversation_id?: string, slug = 'support') => {
    const r = await server.sb.api.converse({ params: { slug }, body: { message, ...(conversation_id ? { conversation_id } : {}) } });
    if (r.status !== 200) throw new Error(`converse answered ${r.status}`);
    return r.body;
  };

  beforeAll(async () => {
    ({ context, close } = await launch());
    // Shorter than a test's own limit, so that a missing element says which it was.
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    watch(page);
    const order = await say('where is my order');
    await say('100001', order.conversation_id);
    ids.completed = order.conversation_id;
    ids.escalated = (await say('talk to a human')).conversation_id;
    // The tenant masks e-mail addresses: the escalated conversation keeps one masked, and says so.
    expect((await server.sb.api.putPrivacyPolicy({ body: { mask: { email: 'redact' } } })).status).toBe(200);
    await say('my address is jane.doe@example.com', ids.escalated);
  }, 60_000);
  afterAll(async () => close?.());
  afterEach(async (ctx) => {
    if (ctx.task.result?.state !== 'fail') return;
    const file = join(tmpdir(), `console-failure-${ctx.task.name.replace(/\W+/g, '-').slice(0, 60)}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.error(`screenshot of the failure: ${file}`);
  });

  it('signs in with a tenant id, kept in the tab only, and lists the agents', async () => {
    await page.goto(url('/'));
    await page.getByLabel('Tenant', { exact: true }).fill('acme');
    await shot('sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Support' }).waitFor();
    expect(await page.getByRole('link', { name: 'Helper' }).count()).toBe(1);
    expect(await page.evaluate('[localStorage.length, Object.keys(sessionStorage)]')).toEqual([0, ['switchboard.console.session']]);
    await accessible();
  });

  it('shows the analytics as charts with their figures', async () => {
    await page.getByRole('link', { name: 'Support' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const started = page.locator('.tile', { hasText: 'Started' }).locator('dd');
    expect(Number(await started.textContent())).toBeGreaterThanOrEqual(2);
    expect(await page.locator('canvas[role="img"]').count()).toBe(3);
    expect(await page.locator('canvas[aria-label^="Conversations per day by status"]').getAttribute('aria-label')).toMatch(/1 completed, 1 escalated/);
    const byChannel = page.getByRole('region', { name: 'Conversations by channel' }).locator('tbody tr');
    expect((await byChannel.allTextContents()).map((t) => t.replace(/\d+.*$/, ''))).toEqual(['API', 'web chat widget']);
    expect(await byChannel.first().locator('td').nth(1).textContent()).toBe(await started.textContent());
    await shot('overview');
    await accessible();
  });

  it('lists conversations with their filters and shows new ones as they come', async () => {
    await page.getByRole('link', { name: 'Conversations' }).click();
    const rows = page.locator('table.conversations tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByLabel('Status', { exact: true }).selectOption('escalated');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('escalated');
    await page.getByLabel('Capability', { exact: true }).selectOption('vip');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No conversation matches these filters').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => rows.count()).toBe(2);
    // A conversation started elsewhere appears without a reload.
    ids.live = (await say('track my package')).conversation_id;
    await expect.poll(() => rows.count(), { timeout: 12_000 }).toBe(3);
    expect(await page.locator('tr.fresh').first().textContent()).toContain(ids.live.slice(0, 8));
    await shot('conversations');
    await accessible();
  });

  it("shows a conversation's routing bars, its action call and its verified audit chain", async () => {
    await page.goto(url(`/agents/support/conversations/${ids.completed}`));
    await page.getByRole('heading', { name: 'Audit timeline' }).waitFor();
    const routing = page.locator('.entry-routing_decision').first();
    const chosen = routing.locator('li[data-capability="order_status"]');
    expect(await chosen.getAttribute('class')).toContain('chosen');
    const width = await chosen.locator('.bar-fill').getAttribute('style');
    expect(parseFloat(/width: ([\d.]+)%/.exec(width ?? '')?.[1] ?? '0')).toBeGreaterThan(30);
    // vip requires the gold tier: scored, shown, and marked ineligible.
    const vip = routing.locator('li[data-capability="vip"]');
    expect(await vip.getAttribute('class')).toContain('ineligible');
    expect(await vip.textContent()).toContain('ineligible');
    expect(await routing.locator('.bar-threshold').count()).toBeGreaterThanOrEqual(2);
    expect(await routing.textContent()).toContain('threshold 0.300');
    const action = page.locator('.entry-action_call');
    expect(await action.textContent()).toMatch(/get_order.*GET.*\/orders\/100001.*200 ok/s);
    expect(await page.locator('.entry-turn_timing .timing-bar').count()).toBe(2);
    expect(await page.locator('.transcript').textContent()).toContain('shipped on 2026-11-20');
    await page.getByRole('button', { name: /Verify the audit chain/ }).click();
    await page.getByText(/Chain intact: \d+ entries/).waitFor();
    await shot('conversation');
    await accessible();
  });

  it('answers an escalated conversation as a person and closes it', async () => {
    await page.goto(url(`/agents/support/conversations/${ids.escalated}`));
    await page.getByRole('heading', { name: 'Answer as a person' }).waitFor();
    expect(await page.locator('.transcript').textContent()).toContain('my address is [EMAIL]');
    expect(await page.locator('.entry-turn_timing .masked').allTextContents()).toEqual(['Masked: email 1']);
    await page.getByLabel('Reply').fill('Hello, this is Dana from support. How can I help?');
    await page.getByLabel('Written by').fill('dana');
    await accessible();
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.locator('.turn.operator', { hasText: 'this is Dana' }).waitFor();
    await page.getByRole('button', { name: 'Close the conversation' }).click();
    await page.locator('.facts .badge', { hasText: 'completed' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Answer as a person' }).count()).toBe(0);
    const history = await server.sb.api.getHistory({ params: { slug: 'support', id: ids.escalated } });
    expect(history.status === 200 && history.body).toMatchObject({ status: 'completed', outcome: 'resolved' });
    expect(history.status === 200 && history.body.turns.at(-1)).toMatchObject({ role: 'agent', author: 'dana' });
  });

  it('plays a draft version in the playground, turn by turn, and saves the conversation as a test', async () => {
    const draft = supportAgent(backend.url);
    (draft.capabilities[0].phases![0] as { say: unknown }).say = 'Draft: which order number?';
    const put = await server.sb.api.putAgent({ params: { slug: 'support' }, query: { activate: 'false' }, body: draft as never });
    expect(put.status === 200 && put.body.stored_version).toBe(2);

    await page.goto(url('/agents/support/playground'));
    await page.getByLabel('Version').selectOption('2');
    const message = page.getByPlaceholder('Type a message');
    await message.fill('where is my order');
    await message.press('Enter');
    const facts = page.getByTestId('turn-facts');
    await facts.first().waitFor();
    expect(await page.locator('.chat .turn.agent .text').first().textContent()).toBe('Draft: which order number?');
    await expect.poll(() => facts.first().textContent()).toMatch(/capability order_status · phase ask_order · confidence 0\.\d\d · active/);
    await page.getByRole('button', { name: "I don't know it" }).waitFor();
    await message.fill('100001');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => facts.count()).toBe(2);
    await expect.poll(() => facts.nth(1).textContent()).toMatch(/phase shipped · confidence kept \(no routing this turn\) · completed/);
    await shot('playground');
    await accessible();

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Save as test' }).click()]);
    expect(download.suggestedFilename()).toBe('support.test.yaml');
    savedTest = readFileSync((await download.path())!, 'utf8');
    const file = parse(savedTest);
    expect(file.agent).toBe('support');
    expect(file.tests[0].actions.get_order).toMatchObject({ status: 200, body: { status: 'shipped' } });
    expect(file.tests[0].steps.map((s: any) => [s.user, s.expect.phase, s.expect.status])).toEqual([
      ['where is my order', 'ask_order', 'active'],
      ['100001', 'shipped', 'completed'],
    ]);
    const conversations = await server.sb.api.listConversations({ params: { slug: 'support' }, query: { limit: 1 } });
    const latest = conversations.status === 200 ? conversations.body.data[0].id : '';
    const detail = await server.sb.api.getConversation({ params: { slug: 'support', id: latest } });
    expect(detail.status === 200 && detail.body.agent_version).toBe(2);
  });

  it("streams a model's reply into the playground as it is written", async () => {
    const words = 'Of course. I can help with questions about your account, orders and deliveries, any time you like.';
    llm.script({ text: words, pieces: words.match(/\S+\s*/g)! });
    await page.goto(url('/agents/helper/playground'));
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    // Every text the reply shows on its way, as the page renders it.
    await page.evaluate(`
      window.seen = [];
      new MutationObserver(() => {
        const t = document.querySelector('.chat .turn.agent .text')?.textContent ?? '';
        if (t && t !== '…' && window.seen.at(-1) !== t) window.seen.push(t);
      }).observe(document.querySelector('.chat'), { subtree: true, childList: true, characterData: true });
    `);
    await page.getByPlaceholder('Type a message').fill('hello');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('turn-facts').waitFor();
    expect(await page.locator('.chat .turn.agent .text').textContent()).toBe(words);
    const seen = await page.evaluate<string[]>('window.seen');
    const partial = seen.filter((t) => t.length < words.length && words.startsWith(t));
    expect(partial.length).toBeGreaterThanOrEqual(2);
    expect(llm.calls.at(-1)!.body.stream).toBe(true);
  });

  it('compares two versions side by side and activates the draft', async () => {
    await page.goto(url('/agents/support/versions'));
    await page.getByRole('heading', { name: 'Compare definitions' }).waitFor();
    await page.locator('table.diff').waitFor();
    expect(await page.locator('table.diff td.ins', { hasText: 'Draft: which order number?' }).count()).toBe(1);
    expect(await page.locator('table.diff td.del', { hasText: 'What is your order number?' }).count()).toBe(1);
    await shot('versions');
    await accessible();
    await page.getByRole('button', { name: 'Activate v2' }).click();
    const dialog = page.getByRole('dialog', { name: 'Make v2 current?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Activate v2' }).click();
    await page.getByText('current version v2').waitFor();
    const agent = await server.sb.api.getAgent({ params: { slug: 'support' } });
    expect(agent.status === 200 && agent.body.version).toBe(2);
  });

  it('starts a replay, shows its progress and the first difference of each changed conversation', async () => {
    await page.goto(url('/agents/support/replays'));
    await page.getByLabel('Version').selectOption('2');
    await page.getByLabel('Conversations with status').selectOption('completed');
    await page.getByRole('button', { name: 'Start the replay' }).click();
    await page.getByText(/^Done: \d+ of \d+ conversations\.$/).waitFor({ timeout: 20_000 });
    expect(page.url()).toMatch(/\/console\/agents\/support\/replays\/[0-9a-f-]{36}$/);
    const changed = page.locator('.tile', { hasText: 'Changed' }).locator('dd');
    expect(Number(await changed.textContent())).toBeGreaterThanOrEqual(1);
    const row = page.getByRole('region', { name: 'Differences' }).locator('tbody tr', { hasText: ids.completed.slice(0, 8) });
    expect(await row.textContent()).toMatch(/changed.*reply.*What is your order number\?.*Draft: which order number\?/s);
    await shot('replay');
    await accessible();
    const id = page.url().split('/').at(-1)!;
    await page.getByRole('link', { name: '← Replays' }).click();
    const listed = page.getByRole('region', { name: 'Replays' }).locator('tbody tr');
    await expect.poll(() => listed.count()).toBe(1);
    const cells = await listed.locator('td').allTextContents();
    expect(cells.slice(1, 3)).toEqual(['v2', 'done']);
    expect(Number(cells[5])).toBeGreaterThanOrEqual(1);
    expect(await listed.locator('a').getAttribute('href')).toBe(`/console/agents/support/replays/${id}`);
  });

  it('runs the saved test file against the current version', async () => {
    await page.goto(url('/agents/support/tests'));
    await page.getByLabel('Test file').fill(savedTest);
    await page.getByRole('button', { name: 'Run the tests' }).click();
    await page.getByRole('heading', { name: '1 passed, 0 failed on v2' }).waitFor();
    // A failing expectation says what came back.
    await page.getByLabel('Test file').fill(savedTest.replace('Draft: which order number?', 'Something else entirely'));
    await page.getByRole('button', { name: 'Run the tests' }).click();
    await page.getByRole('heading', { name: '0 passed, 1 failed on v2' }).waitFor();
    expect(await page.locator('.results').textContent()).toContain('came back: order_status · ask_order · active');
    await shot('tests');
    await accessible();
  });

  it('installs the agent on a site: a publishable key for its origins, the snippet pinned by its SRI hash, and revocation', async () => {
    await page.goto(url('/agents/support/install'));
    await page.getByLabel('Allowed origins (one per line)').fill('https://shop.example.com\nhttps://www.shop.example.com');
    await page.getByRole('button', { name: 'Make a publishable key' }).click();
    const snippet = page.getByLabel('Snippet', { exact: true }).first();
    await snippet.waitFor();
    const text = await snippet.inputValue();
    const key = /data-key="(pk_[0-9a-f]{32})"/.exec(text)?.[1];
    expect(text).toBe(`<script src="${server.url}/widget/v1.js" data-agent="support" data-key="${key}" async></script>`);
    const pinned = await page
      .getByLabel(/Pinned to this release/)
      .first()
      .inputValue();
    const script = await fetch(`${server.url}/widget/v1.js`);
    expect(pinned).toContain(`?v=${script.headers.get('x-widget-version')}" integrity="${script.headers.get('x-widget-integrity')}" crossorigin="anonymous"`);
    const keys = await server.sb.api.listKeys();
    expect(keys.status === 200 && keys.body.data.find((k) => k.widget?.key === key)?.widget?.origins).toEqual([
      'https://shop.example.com',
      'https://www.shop.example.com',
    ]);
    await accessible();
    await shot('install');
    // A visitor's conversation through that key shows its channel in the list, filtered by it.
    const minted = await fetch(`${server.url}/widget/v1/agents/support/visitor?key=${key}`, {
      method: 'POST',
      headers: { origin: 'https://shop.example.com', 'content-type': 'application/json' },
      body: '{}',
    });
    const { visitor_token: token } = (await minted.json()) as { visitor_token: string };
    const visitor = await fetch(`${server.url}/widget/v1/agents/support/converse?key=${key}`, {
      method: 'POST',
      headers: { origin: 'https://shop.example.com', 'x-visitor-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'track my package', page_url: 'https://shop.example.com/orders' }),
    });
    expect(visitor.status).toBe(200);
    await page.goto(url('/agents/support/conversations'));
    await page.getByLabel('Channel').selectOption('web');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.locator('table.conversations tbody tr').count()).toBe(1);
    expect(await page.locator('table.conversations tbody tr td').nth(5).textContent()).toBe('web · https://shop.example.com');
    await page.goto(url('/agents/support/install'));
    await page.getByRole('button', { name: 'Revoke' }).first().click();
    await expect.poll(async () => page.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
  });

  it('connects a channel with credentials it never shows again, pauses it, and removes it after a confirmation', async () => {
    await page.goto(url('/agents/support/channels'));
    await page.getByText('No channels yet.').waitFor();
    await page.getByLabel('Channel', { exact: true }).selectOption('slack');
    await page.getByLabel('Bot token (xoxb-…)').fill('xoxb-1234-5678-consoletesttoken');
    await page.getByLabel('Signing secret').fill('8f742231b10e8888abcd99yyyzzz85a5');
    await page.getByRole('button', { name: 'Connect Slack' }).click();
    const status = page.getByRole('status');
    await status.waitFor();
    expect(await status.textContent()).toMatch(new RegExp(`Connected Slack\\. Paste ${server.url}/hooks/v1/ch_[A-Za-z0-9_-]{32} into the Slack app`));
    // The form is emptied and the page never shows the credentials again.
    expect(await page.getByLabel('Bot token (xoxb-…)').inputValue()).toBe('');
    expect(await page.content()).not.toContain('consoletesttoken');
    const row = page.getByRole('row', { name: /Slack active/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('bot_token, signing_secret');
    // An update Slack sends that is not a message to answer is listed with its reason.
    const hook = /\/hooks\/v1\/(ch_[A-Za-z0-9_-]{32})/.exec((await status.textContent()) ?? '')![1];
    const body = JSON.stringify({ type: 'event_callback', team_id: 'T1', event: { type: 'reaction_added' } });
    const sent = await fetch(`${server.url}/hooks/v1/${hook}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...slackHeaders(body, new Date(), '8f742231b10e8888abcd99yyyzzz85a5') },
      body,
    });
    expect(sent.status).toBe(200);
    await page.reload();
    await page
      .getByRole('region', { name: 'Ignored updates' })
      .getByText(/^Slack: event reaction_added \(/)
      .waitFor();
    await accessible();
    await shot('channels');
    await row.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('row', { name: /Slack paused/ }).waitFor();
    await page.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No channels yet.').waitFor();
    await page.getByText('No replies sent through channels yet.').waitFor();
  });

  it('erases a conversation after a confirmation', async () => {
    await page.goto(url(`/agents/support/conversations/${ids.live}`));
    await page.getByRole('button', { name: 'Erase this conversation…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Erase this conversation?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('.transcript').textContent()).toContain('track my package');
    await page.getByRole('button', { name: 'Erase this conversation…' }).click();
    await dialog.getByRole('button', { name: 'Erase' }).click();
    await page
      .getByText(/Personal data erased/)
      .first()
      .waitFor();
    expect(await page.locator('.transcript').textContent()).not.toContain('track my package');
  });

  it('is usable with the keyboard alone', async () => {
    await page.goto(url('/'));
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement?.id')).toBe('main');
    // Tab to the Support link and follow it, then to the Playground tab.
    for (let i = 0; i < 20 && (await page.evaluate('document.activeElement?.textContent')) !== 'Support'; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    for (let i = 0; i < 30 && (await page.evaluate('document.activeElement?.textContent')) !== 'Playground'; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/agents/support/playground');
  });

  it('uploads a document as a knowledge source, chosen or dropped on the page, and shows it read or why not', async () => {
    await page.goto(url('/knowledge'));
    await page.getByRole('heading', { name: 'Knowledge' }).waitFor();
    const upload = page.getByRole('form', { name: 'Upload to the knowledge sources' });
    await upload
      .getByLabel('Document', { exact: true })
      .setInputFiles({ name: 'Opening Hours.md', mimeType: 'text/markdown', buffer: Buffer.from('# Opening hours\n\nOur shops open at 9 am.\n') });
    expect(await upload.getByLabel('Name', { exact: true }).inputValue()).toBe('opening-hours');
    await upload.getByLabel('Tags, comma-separated (optional)', { exact: true }).fill('help');
    await page.getByRole('button', { name: 'Upload' }).click();
    const row = page.locator('tr[data-source="opening-hours"]');
    await row.waitFor();
    expect(await row.locator('.badge').textContent()).toBe('indexed');
    expect(await row.textContent()).toContain('markdown, 41 bytes, revision 1');
    // Dropped on the page: a file whose name says PDF but is text, refused with the reason.
    const dropped = await page.evaluateHandle(
      "(() => { const d = new DataTransfer(); d.items.add(new File(['not a pdf'], 'Price list.pdf', { type: 'application/pdf' })); return d; })()",
    );
    await page.locator('.drop').dispatchEvent('drop', { dataTransfer: dropped });
    expect(await upload.getByLabel('Name', { exact: true }).inputValue()).toBe('price-list');
    await page.getByRole('button', { name: 'Upload' }).click();
    const failed = page.locator('tr[data-source="price-list"]');
    await failed.waitFor();
    expect(await failed.locator('.badge').textContent()).toBe('failed');
    expect(await failed.textContent()).toContain('the file says it is a PDF but its content is plain text');
    const sources = await server.sb.api.listSources({ query: {} });
    expect(sources.status === 200 && sources.body.data.map((x) => [x.name, x.state, x.tags])).toEqual([
      ['opening-hours', 'indexed', ['help']],
      // The form keeps its tags for the next document.
      ['price-list', 'failed', ['help']],
    ]);
    await shot('knowledge');
    await accessible();

    // An agent answering from it: the transcript lists the source its answer cites.
    const faq = {
      name: 'FAQ',
      knowledge_sources: [{ tag: 'help' }],
      routing: { fallback: 'docs' },
      capabilities: [{ name: 'docs', phases: [{ id: 'answer', answer: { not_found: 'fallback' } }] }],
    };
    expect((await server.sb.api.putAgent({ params: { slug: 'faq' }, query: {}, body: faq as never })).status).toBeLessThan(300);
    const answered = await server.sb.api.converse({ params: { slug: 'faq' }, body: { message: 'when do your shops open?' } });
    if (answered.status !== 200) throw new Error(JSON.stringify(answered.body));
    expect(answered.body.response.citations?.map((c) => c.passage_id)).toEqual(['opening-hours#1']);
    await page.goto(url(`/agents/faq/conversations/${answered.body.conversation_id}`));
    const cited = page.getByRole('list', { name: 'Sources cited' });
    await cited.waitFor();
    expect(await cited.textContent()).toContain('Opening hours');
    expect(await cited.textContent()).toContain('opening-hours#1');
    // The agent's overview counts the answers citing the source.
    await page.goto(url('/agents/faq'));
    const bySource = page.getByRole('region', { name: 'Answers by knowledge source' }).locator('tbody tr');
    await bySource.first().waitFor();
    expect(await bySource.allTextContents()).toEqual(['opening-hours1', 'Not answered (in the review inbox)0']);

    // A model answering from it, checked against the passage it cites: the timeline shows the check.
    const grounded = {
      name: 'Grounded',
      knowledge_sources: [{ tag: 'help' }],
      capabilities: [
        {
          name: 'ask',
          examples: ['when do you open', 'opening hours'],
          phases: [{ id: 'model', generate: { instructions: 'Cite the passages.', knowledge: true } }],
        },
      ],
    };
    expect((await server.sb.api.putAgent({ params: { slug: 'grounded' }, query: {}, body: grounded as never })).status).toBeLessThan(300);
    llm.script({ text: 'Our shops open at 10 am [opening-hours#1].' });
    const refused = await server.sb.api.converse({ params: { slug: 'grounded' }, body: { message: 'when do you open?' } });
    if (refused.status !== 200) throw new Error(JSON.stringify(refused.body));
    expect(refused.body.state.status).toBe('escalated');
    await page.goto(url(`/agents/grounded/conversations/${refused.body.conversation_id}`));
    const claims = page.getByRole('list', { name: 'Claims checked' });
    await claims.waitFor();
    expect(await claims.textContent()).toBe('“Our shops open at 10 am.”: opening-hours#1 does not hold 10');
    expect(await page.getByText('Not said: a claim the passages it cites do not hold (cites opening-hours#1)').count()).toBe(1);
    await accessible();
  });

  it('adds a web page as a knowledge source, follows its sync, lists its pages and syncs it again', async () => {
    await page.goto(url('/knowledge'));
    const form = page.getByRole('form', { name: 'Add a web page or site' });
    await form.getByLabel('Page or sitemap URL').fill(`${backend.url}/help/returns`);
    expect(await form.getByLabel('Source name').inputValue()).toBe('127-0-0-1-help-returns');
    await form.getByLabel('Sync', { exact: true }).selectOption('weekly');
    await form.getByRole('button', { name: 'Add and sync' }).click();
    const row = page.locator('tr[data-source="127-0-0-1-help-returns"]');
    await row.waitFor();
    expect(await row.locator('.badge').first().textContent()).toBe('indexed');
    expect(await row.textContent()).toContain('one page, synced weekly');
    await row.getByText('1 pages').click();
    const pages = page.getByRole('region', { name: 'Pages of 127-0-0-1-help-returns' });
    await pages.waitFor();
    expect(await pages.textContent()).toContain(`Returns${backend.url}/help/returns`);
    expect(await pages.locator('.badge').textContent()).toBe('ok');
    await accessible();
    const before = await server.sb.api.getSource({ params: { source: '127-0-0-1-help-returns' } });
    await row.getByRole('button', { name: 'Sync now' }).click();
    await expect
      .poll(async () => {
        const s = await server.sb.api.getSource({ params: { source: '127-0-0-1-help-returns' } });
        return s.status === 200 && before.status === 200 && s.body.state === 'indexed' && s.body.fetched_at !== before.body.fetched_at;
      })
      .toBe(true);
    // The page answered 304 to its ETag: fetched again, not changed.
    const after = await server.sb.api.getSource({ params: { source: '127-0-0-1-help-returns' } });
    expect(after.status === 200 && before.status === 200 && after.body.changed_at === before.body.changed_at).toBe(true);
    expect(backend.requests.filter((r) => r.url === '/help/returns').at(-1)?.headers['if-none-match']).toBe('"r1"');
  });

  it('fits a phone-width screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/', `/agents/support/conversations/${ids.completed}`, '/agents/support/conversations', '/agents/support/playground', '/knowledge']) {
      await page.goto(url(path));
      await page.locator('main h1, main h2').first().waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      const [scroll, inner] = await page.evaluate<number[]>('[document.documentElement.scrollWidth, window.innerWidth]');
      expect(scroll, path).toBeLessThanOrEqual(inner);
    }
    await page.goto(url(`/agents/support/conversations/${ids.completed}`));
    await page.getByRole('heading', { name: 'Audit timeline' }).waitFor();
    await shot('phone');
    await accessible();
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("warns on an agent's page of a host its current version calls that this tenant may not reach", async () => {
    const outbound = {
      name: 'Outbound',
      capabilities: [
        {
          name: 'ping',
          examples: ['ping'],
          phases: [
            { id: 'p', call: 'ping', next: 'done' },
            { id: 'done', say: 'Done.' },
          ],
        },
      ],
      actions: { ping: { type: 'http' as const, method: 'GET' as const, url: 'http://127.0.0.1:1/ping' } },
    };
    const put = await server.sb.api.putAgent({ params: { slug: 'outbound' }, query: {}, body: outbound });
    expect(put.status).toBe(200);
    await page.goto(url('/agents/outbound'));
    const alert = page.getByRole('alert').filter({ hasText: 'calls hosts this tenant may not reach' });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('actions.ping.url 127.0.0.1:1 is not reachable for this tenant');
    await accessible();
    await page.goto(url('/agents/support'));
    await page.getByRole('heading', { name: 'Support' }).waitFor();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByText('calls hosts this tenant may not reach').count()).toBe(0);
  });

  it('says what to do for an address with nothing there', async () => {
    await page.goto(url('/nowhere'));
    await page.getByText('No such page').waitFor();
    expect(await page.getByRole('link', { name: 'Go to the agents' }).count()).toBe(1);
  });

  it('renders the API docs page under its content security policy, and the console and the docs link to each other', async () => {
    await page.goto(url('/'));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API docs' }).click();
    await page.waitForURL(/\/docs\/?$/);
    // Swagger UI lays out the whole document (65 operations) before it shows one: on a loaded
    // two-core machine that has taken over ten seconds.
    await page.getByText('/api/v1/agents/{slug}/converse').first().waitFor({ timeout: 40_000 });
    // A policy that refused one of the page's own scripts or styles shows in the console (checked below).
    expect(await page.locator('.opblock').count()).toBeGreaterThan(10);
    // Swagger UI opens the description's links in a new tab.
    expect(await page.getByRole('link', { name: '/console' }).getAttribute('href')).toBe('/console');
  }, 60_000);

  it('triages the review inbox with the keyboard: two messages added as examples, one as out of scope, with the diff', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const m of ['what is the weather like today', 'What is the weather like today?', 'where is the stuff I bought', 'I never got the things I paid for'])
      await say(m);
    await page.goto(url('/agents/support/review'));
    const list = page.getByRole('listbox', { name: 'Review items' });
    await list.waitFor();
    const option = (re: RegExp) => list.getByRole('option').filter({ hasText: re });
    expect(await option(/weather like today/).textContent()).toContain('×2');
    await accessible();
    // Highlight the two order messages with j/k, select them with x, choose order_status with 1 and add them with a.
    await list.focus();
    const texts = await list.getByRole('option').allTextContents();
    const at = (re: RegExp) => texts.findIndex((t) => re.test(t));
    const go = async (index: number) => {
      for (let i = 0; i < texts.length; i++) await page.keyboard.press('k');
      for (let i = 0; i < index; i++) await page.keyboard.press('j');
    };
    await go(at(/stuff I bought/));
    await page.keyboard.press('x');
    await go(at(/never got the things/));
    await page.keyboard.press('x');
    expect(await list.getByRole('option', { selected: true }).count()).toBe(2);
    await page.keyboard.press('1');
    expect(await page.getByLabel('Add to capability').inputValue()).toBe('order_status');
    await page.keyboard.press('a');
    const status = page.getByRole('status').filter({ hasText: /added to draft v\d+/ });
    await status.waitFor();
    expect(await status.textContent()).toMatch(/2 items added to draft v\d+/);
    expect(await page.getByLabel("The draft's diff").textContent()).toContain('+      - where is the stuff I bought');
    await expect.poll(() => option(/stuff I bought|never got the things/).count()).toBe(0);
    // The weather question, highlighted, out of scope with o.
    await list.focus();
    const now = await list.getByRole('option').allTextContents();
    for (let i = 0; i < now.length; i++) await page.keyboard.press('k');
    for (let i = 0; i < now.findIndex((t) => /weather like today/.test(t)); i++) await page.keyboard.press('j');
    await page.keyboard.press('o');
    await page
      .getByRole('status')
      .filter({ hasText: /1 item added to draft v\d+/ })
      .waitFor();
    expect(await page.getByLabel("The draft's diff").textContent()).toMatch(/\+ {2}out_of_scope:\n\+ {4}- What is the weather like today\?/);
    await expect.poll(() => option(/weather like today/).count()).toBe(0);
    await shot('review');
    await accessible();
  });

  it('evaluates the draft beside the current version, with confusion matrices people can read', async () => {
    await page.goto(url('/agents/support/evaluations'));
    await page.getByRole('heading', { name: 'Evaluations', exact: true }).waitFor();
    await page.getByLabel('Replay conversations').fill('20');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByText(/^Done, \d+ of \d+ steps\.$/).waitFor({ timeout: 30_000 });
    const side = page.getByRole('region', { name: 'Side by side' });
    const reviewed = await side
      .getByRole('row', { name: /Reviewed messages routed as said/ })
      .locator('td')
      .allTextContents();
    expect(reviewed[0]).toBe('3 of 3');
    const rows = page.getByRole('region', { name: 'Reviewed messages' }).locator('tbody tr');
    expect(await rows.count()).toBe(3);
    const matrix = page.getByRole('region', { name: /^Confusion matrix, v\d+$/ }).first();
    expect(await matrix.getByRole('columnheader', { name: 'order_status' }).count()).toBe(1);
    expect(await matrix.locator('td.diag').count()).toBeGreaterThan(1);
    expect(await page.getByRole('link', { name: 'Each difference' }).getAttribute('href')).toMatch(/^\/console\/agents\/support\/replays\/[0-9a-f-]{36}$/);
    await shot('evaluation');
    await accessible();
  });

  it('refuses a release on its gates, forces it with a reason, runs a split, promotes it, and shows the record verified', async () => {
    const gated = (say: string, description?: string) => ({
      name: 'Gated',
      ...(description ? { description } : {}),
      capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say }] }],
      release: { require: { tests: 'pass' } },
    });
    const put = (body: object, activate: 'true' | 'false') => server.sb.api.putAgent({ params: { slug: 'gated' }, query: { activate }, body: body as never });
    expect((await put(gated('Your order number?'), 'true')).status).toBe(200);
    const tests = [{ name: 'asks for the number', steps: [{ user: 'where is my order', expect: { reply: '/order number/' } }] }];
    expect((await server.sb.api.putTestSuite({ params: { slug: 'gated' }, body: { tests } })).status).toBe(200);
    expect((await put(gated('Which one?'), 'false')).status).toBe(200);
    await say('where is my order', undefined, 'gated');

    await page.goto(url('/agents/gated/versions'));
    await page.getByRole('button', { name: 'Activate v2' }).click();
    const dialog = page.getByRole('dialog', { name: 'Make v2 current?' });
    await dialog.getByRole('button', { name: 'Activate v2' }).click();
    const refusal = page.getByRole('region', { name: 'Releasing v2: refused by the release gates' });
    await refusal.waitFor({ timeout: 30_000 });
    expect(await refusal.getByRole('alert').textContent()).toBe('Version 2 fails 1 release gate: tests');
    // Chromium logs every 4xx response: this one is the refusal asked for, not a fault of the page.
    const logged = problems.findIndex((p) => p.includes('status of 409 (Conflict)'));
    expect(logged).toBeGreaterThanOrEqual(0);
    problems.splice(logged, 1);
    expect(await refusal.getByRole('row', { name: /tests/ }).textContent()).toContain('tests: 0 of 1 pass (all must); failing: asks for the number');
    await accessible();
    await refusal.getByLabel('Reason to release it all the same (recorded)').fill('Copy approved by support');
    await refusal.getByRole('button', { name: 'Release anyway' }).click();
    await page.getByText('v2 is current.').waitFor();

    // A good draft, half of new users on it.
    expect((await put(gated('Your order number?', 'Orders'), 'false')).status).toBe(200);
    await page.reload();
    const split = page.getByRole('region', { name: 'Traffic split' });
    await split.getByLabel('Candidate').selectOption('3');
    await split.getByLabel('Percent of new conversations').fill('50');
    await split.getByRole('button', { name: 'Start split' }).click();
    await split.getByText(/50% of new conversations start on v3, the rest on v2/).waitFor({ timeout: 30_000 });
    expect(await split.getByRole('region', { name: 'Gates of the last step' }).getByRole('row', { name: /tests/ }).textContent()).toContain('1 of 1 pass');
    await shot('releases');
    await accessible();
    for (let i = 0; i < 20; i++) {
      const r = await server.sb.api.converse({
        params: { slug: 'gated' },
        body: { message: 'where is my order', context: { version: 'v1', context: { identity: { user_id: `console-${i}` } } } },
      });
      expect(r.status).toBe(200);
    }
    await page.goto(url('/agents/gated'));
    const byVersion = page.getByRole('region', { name: 'Figures by version' });
    await byVersion.waitFor();
    expect(
      await byVersion
        .getByRole('row')
        .filter({ hasText: /^v3 \(split candidate, 50%\)/ })
        .count(),
    ).toBe(1);
    expect(
      await byVersion
        .getByRole('row')
        .filter({ hasText: /^v2 \(current\)/ })
        .count(),
    ).toBe(1);
    await accessible();

    await page.goto(url('/agents/gated/versions'));
    await split.getByRole('button', { name: 'Promote v3' }).click();
    await page.getByText('current version v3').waitFor({ timeout: 30_000 });
    const record = page.getByRole('region', { name: 'Release record' });
    await record.getByRole('button', { name: 'Verify the chain' }).click();
    await record.getByText('Consistent: 4 steps chained without an operator key, which proves consistency, not who wrote them.').waitFor();
    const rows = record.getByRole('region', { name: 'Steps of the release record' }).locator('tbody tr');
    expect(await rows.first().textContent()).toMatch(/promoted v3 \(from v2\)/);
    expect(await rows.filter({ hasText: 'forced' }).textContent()).toContain('Copy approved by support');
    await accessible();
  });

  it('wrote nothing to the browser console on any page', () => {
    expect(problems).toEqual([]);
  });
});

describe.skipIf(!hasBrowser)('the console in api_key mode', () => {
  const f = appFixture(sqlite, { config: { authMode: 'api_key' }, tenant: 'acme' });
  let server: Awaited<ReturnType<typeof listen>>;
  let browser: Awaited<ReturnType<typeof launch>>;
  beforeAll(async () => {
    server = await listen(f.app);
    browser = await launch();
    browser.context.setDefaultTimeout(10_000);
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state !== 'fail') return;
    for (const [i, p] of browser.context.pages().entries()) await p.screenshot({ path: join(tmpdir(), `console-failure-api-key-${i}.png`), fullPage: true });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('signs in with a pasted key kept for this tab only, and refuses a wrong one', async () => {
    const { key } = await f.app.keys.create('acme', ['admin', 'read', 'converse']);
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${server.url}/console/`);
    await page.getByLabel('API key (AUTH_MODE=api_key)').check();
    await page.getByLabel('API key', { exact: true }).fill(`${key.slice(0, -4)}AAAA`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('sign in with a valid API key');
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('This tenant has no agents yet').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await page.evaluate<string>("sessionStorage.getItem('switchboard.console.session')")).toContain(key);
    // Another tab does not share it.
    const other = await browser.context.newPage();
    await other.goto(`${server.url}/console/`);
    await other.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    expect(problems).toEqual([]);
  });
});

describe.skipIf(!hasBrowser)('the console signed in with an OpenID provider', () => {
  let provider: TestProvider;
  let port: number;
  let server: import('node:http').Server;
  let browser: Awaited<ReturnType<typeof launch>>;
  beforeAll(async () => {
    port = await freePort();
    provider = await startProvider(`http://127.0.0.1:${port}/auth/callback`, {
      rae: { email: 'rae@acme.example', name: 'Rae Reviewer', groups: ['reviewers'] },
    });
  });
  const f = appFixture(sqlite, {
    tenant: 'acme',
    config: () => ({
      authMode: 'api_key',
      publicUrl: `http://127.0.0.1:${port}`,
      oidc: oidcSettings(provider, { reviewers: [{ role: 'reviewer' }] }),
    }),
  });
  beforeAll(async () => {
    server = f.app.app.listen(port, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', () => r()));
    const { key } = await f.app.keys.create('acme', { roles: [{ role: 'owner' }] });
    const put = await fetch(`http://127.0.0.1:${port}/api/v1/agents/acme-support`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Support',
        capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say: 'Your order number?' }] }],
      }),
    });
    expect(put.status).toBe(200);
    const draft = await fetch(`http://127.0.0.1:${port}/api/v1/agents/acme-support?activate=false`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Support',
        capabilities: [{ name: 'orders', examples: ['where is my order', 'track my order', 'order status'], phases: [{ id: 'a', say: 'Which order?' }] }],
      }),
    });
    expect(draft.status).toBe(200);
    browser = await launch();
    browser.context.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await provider?.close();
  });

  it('signs a person in through the provider, keeps no secret in the page, works within their role, and signs out at the provider', async () => {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`http://127.0.0.1:${port}/console/`);
    await page.getByRole('link', { name: 'Sign in with your company account' }).click();
    // The provider signs Rae in and sends the browser back to the console, signed in.
    await page.getByText('rae@acme.example · acme').waitFor();
    await page.getByRole('link', { name: 'Support' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const cookies = await browser.context.cookies(`http://127.0.0.1:${port}`);
    const session = cookies.find((c) => c.name === 'sb_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    // The page holds the CSRF token, never the session itself.
    expect(await page.evaluate<string>("sessionStorage.getItem('switchboard.console.session')")).not.toContain(session.value);
    expect(await page.evaluate('document.cookie')).not.toContain(session.value);
    // A reviewer may not activate a version: the server says so, and why.
    const activate = await page.evaluate<{ status: number; body: { detail: string } }>(`(async () => {
      const c = JSON.parse(sessionStorage.getItem('switchboard.console.session'));
      const res = await fetch('/api/v1/agents/acme-support/versions/1/activate', { method: 'POST', headers: { 'x-csrf-token': c.csrf } });
      return { status: res.status, body: await res.json() };
    })()`);
    expect(activate).toMatchObject({ status: 403, body: { detail: expect.stringContaining('"releases.write" permission') } });
    // The console follows the roles: activating and splitting are off, and it says why.
    await page.goto(`http://127.0.0.1:${port}/console/agents/acme-support/versions`);
    const activateButton = page.getByRole('button', { name: 'Activate v2' });
    await activateButton.waitFor();
    expect(await activateButton.isDisabled()).toBe(true);
    expect(await activateButton.getAttribute('title')).toContain('“releases.write” permission (owner, releaser)');
    await page.getByText('Your roles do not allow this: it needs the “releases.write” permission (owner, releaser).').waitFor();
    expect(await page.getByRole('button', { name: 'Start split' }).isDisabled()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The provider's own sign-out page, and the session is gone here.
    await page.waitForURL((u) => u.href.startsWith(`${provider.issuer}/session/end`));
    const after = await fetch(`http://127.0.0.1:${port}/api/v1/me`, { headers: { cookie: `sb_session=${session.value}` } });
    expect(after.status).toBe(401);
    expect(problems).toEqual([]);
  });
});
