// The shipped example agents and the agents command line, as a new user meets them.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandVariables, readAgentFile } from '../server/src/agents-loader.js';
import type { App } from '../server/src/app.js';
import { validateDefinition } from '../server/src/engine/compile.js';
import { useVectors } from '../server/src/service/agents/vectors.js';
import { startFakeLlm, type FakeLlm } from './helpers/fake-llm.js';
import { CREDS, startFakeProviders } from './helpers/fake-providers.js';
import { databases } from './helpers/databases.js';
import { listen, testApp } from './helpers/servers.js';
import { EXAMPLE_AGENT, exampleAgentApp } from './helpers/example-agent.js';

const run = promisify(execFile);
const EXAMPLE = EXAMPLE_AGENT;

describe('the example agent', () => {
  let app: App;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ app, close } = await exampleAgentApp());
  });
  afterAll(async () => {
    await close();
  });

  const say = (message: string, conversation_id?: string, context?: unknown) =>
    request(app.app)
      .post('/api/v1/agents/acme-support/converse')
      .set('tenant-id', 'demo')
      .send({ message, conversation_id, context })
      .expect(200)
      .then((r) => r.body);

  it('validates, and follows the backend wherever SWITCHBOARD_VAR_ORDERS_URL puts it', async () => {
    const { definition } = await readAgentFile(EXAMPLE);
    expect(validateDefinition(definition)).toEqual([]);
    expect(definition.actions!.get_order.url).toBe('http://127.0.0.1:3001/orders/{{ slots.order_id }}');
    const moved = await readAgentFile(EXAMPLE, { SWITCHBOARD_VAR_ORDERS_URL: 'http://127.0.0.1:4555' });
    expect(moved.definition.actions!.get_order.url).toBe('http://127.0.0.1:4555/orders/{{ slots.order_id }}');
  });

  it('is a model to copy: its PUT raises no routing warning, with word vectors or without', async () => {
    const { definition } = await readAgentFile(EXAMPLE);
    // The file's default backend address (127.0.0.1:3001) is granted by npm start, not here.
    const routing = (warnings: { code: string }[]) => warnings.filter((w) => w.code !== 'unreachable_host' && w.code !== 'host_not_checked');
    const put = await request(app.app).put('/api/v1/agents/acme-support-copy').set('tenant-id', 'demo').send(definition);
    expect(put.status).toBe(200);
    expect(routing(put.body.warnings)).toEqual([]);
    // Word vectors are the process's: the lexical app turns them off until the finally below.
    const created = await databases[0].create();
    const lexical = testApp(created.db, { routerVectors: { mode: 'off' } });
    try {
      expect(routing((await lexical.agents.put('demo', 'acme-support', definition)).warnings)).toEqual([]);
    } finally {
      useVectors({ mode: 'auto' });
      await lexical.close();
      await created.drop();
    }
  });

  it('tracks an order through the example backend', async () => {
    const a = await say('where is my order?');
    expect(a.state.capability).toBe('order_status');
    const b = await say('100001', a.conversation_id);
    expect(b.response.message).toBe('Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.');
    expect(b.state.status).toBe('completed');
  });

  it('hands over to a person when the order system fails', async () => {
    const a = await say('track my package');
    const b = await say('999999', a.conversation_id);
    expect(b.response.phase).toBe('sorry');
    expect(b.state.status).toBe('escalated');
  });

  it('answers an order number given with the question at once, and audits where it read it', async () => {
    const a = await say('where is order 100001?');
    expect(a.response.message).toBe('Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.');
    expect(a.state.status).toBe('completed');
    const audit = await request(app.app)
      .get(`/api/v1/agents/acme-support/conversations/${a.conversation_id}/audit-logs?type=slot_filled`)
      .set('tenant-id', 'demo')
      .expect(200);
    expect(audit.body.data.map((e: { data: unknown }) => e.data)).toEqual([
      { slot: 'order_id', phase: 'ask_order', source: '100001', capability: 'order_status' },
    ]);
    // Erasure keeps which slot was filled where, not the words it was read from.
    await request(app.app).delete(`/api/v1/agents/acme-support/conversations/${a.conversation_id}`).set('tenant-id', 'demo').expect(204);
    const erased = await request(app.app)
      .get(`/api/v1/agents/acme-support/conversations/${a.conversation_id}/audit-logs?type=slot_filled`)
      .set('tenant-id', 'demo')
      .expect(200);
    expect(erased.body.data[0].data).toEqual({ slot: 'order_id', phase: 'ask_order', source: '', capability: 'order_status', erased: true });
  });

  it('takes "I want a refund" straight past the billing menu', async () => {
    const a = await say('I want a refund');
    expect(a.response.phase).toBe('refund_email');
    expect(a.response.message).toBe('Which email address should we send the refund confirmation to?');
  });

  it('offers billing options, collects a choice, an email and a yes/no', async () => {
    const a = await say('billing question');
    expect(a.response.options.map((o: { value: string }) => o.value)).toEqual(['invoice', 'refund', 'payment']);
    const b = await say('Refund', a.conversation_id);
    expect(b.response.phase).toBe('refund_email');
    const c = await say('ana@example.com', a.conversation_id);
    expect(c.response.options).toEqual([
      { label: 'Yes', value: 'yes' },
      { label: 'No', value: 'no' },
    ]);
    const d = await say('yes', a.conversation_id);
    expect(d.response.message).toBe('Done: a refund request is open and a confirmation is on its way to the address you gave.');
    // The address was used in its turn, and is kept masked.
    expect(c.response.message).toContain('ana@example.com');
    const kept = (await request(app.app).get(`/api/v1/agents/acme-support/conversations/${a.conversation_id}`).set('tenant-id', 'demo').expect(200)).body;
    expect(kept.turns.map((t: { message: string }) => t.message)).toContain('[EMAIL]');
    expect(JSON.stringify(kept)).not.toContain('ana@example.com');
  });

  it("masks the card and phone number the README's example types, in what it keeps", async () => {
    const a = await say('I was charged twice on my card 4111 1111 1111 1111, call me on +44 20 7946 0958');
    const kept = (await request(app.app).get(`/api/v1/agents/acme-support/conversations/${a.conversation_id}`).set('tenant-id', 'demo').expect(200)).body;
    expect(kept.turns[0].message).toBe('I was charged twice on my card [CARD …1111], call me on [PHONE …0958]');
  });

  it('greets in Spanish by name', async () => {
    const a = await say('hola', undefined, { version: 'v1', context: { identity: { user_name: 'Lucía' }, preferences: { language: 'es' } } });
    expect(a.response.message).toMatch(/^¡Hola Lucía!/);
    expect(a.response.options[0]).toEqual({ label: 'Seguir un pedido', value: 'track my order' });
  });
});

describe('npm run agents', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-cli-'));
  const env = { ...process.env, DATABASE_URL: `sqlite://${join(dir, 'cli.db')}`, LOG_LEVEL: 'silent' };
  const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', ...args], { env });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('applies agent files and says what it did, then reports them unchanged', async () => {
    const first = await cli('apply', '--tenant', 'acme', EXAMPLE);
    expect(first.stdout).toContain('applied   acme/acme-support version 1');
    const again = await cli('apply', '--tenant', 'acme', EXAMPLE);
    expect(again.stdout).toContain('unchanged acme/acme-support version 1');
  });

  it('says what it filled ${NAME} with and from where, and warns of a host the tenant may not reach', async () => {
    const vars = { ...env, SWITCHBOARD_VAR_ORDERS_URL: '', ACTION_ALLOWED_HOSTS: '' };
    const withCli = (extra: Record<string, string>, ...args: string[]) =>
      run(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', ...args], { env: { ...vars, ...extra } });
    const fallback = await withCli({}, 'apply', '--tenant', 'hosts', EXAMPLE);
    expect(fallback.stdout).toContain('  ${ORDERS_URL} = "http://127.0.0.1:3001" (the file\'s default: SWITCHBOARD_VAR_ORDERS_URL is not set here)');
    expect(fallback.stdout).toMatch(/^ {2}warning: 127\.0\.0\.1:3001 is not reachable for this tenant .*ACTION_ALLOWED_HOSTS.*\(actions\.get_order\.url\)$/m);
    // The example agent's release policy forbids a host its current version does not call: stored as a draft.
    const granted = await withCli(
      { SWITCHBOARD_VAR_ORDERS_URL: 'http://127.0.0.1:4555', ACTION_ALLOWED_HOSTS: 'hosts=127.0.0.1:4555' },
      'apply',
      '--tenant',
      'hosts',
      '--activate',
      'false',
      EXAMPLE,
    );
    expect(granted.stdout).toContain('draft     hosts/acme-support version 2');
    expect(granted.stdout).toContain('  ${ORDERS_URL} = "http://127.0.0.1:4555" (from SWITCHBOARD_VAR_ORDERS_URL)');
    expect(granted.stdout).not.toContain('not reachable');
    const checked = await withCli({ SWITCHBOARD_VAR_ORDERS_URL: 'http://127.0.0.1:4555' }, 'validate', EXAMPLE);
    expect(checked.stdout).toContain('  ${ORDERS_URL} = "http://127.0.0.1:4555" (from SWITCHBOARD_VAR_ORDERS_URL)');
  });

  it('validates offline with the warnings a PUT would give: a slot read but never filled, a fallback of placeholders', async () => {
    const typo = join(dir, 'typo.yaml');
    writeFileSync(
      typo,
      'name: Typo\ncapabilities:\n  - name: a\n    examples: [one, two, three, four, five]\n    phases:\n      - { id: p, say: "Which class?", collect: { slot: class, type: text }, next: q }\n      - { id: q, say: "Class {{ slots.clas }} it is." }\n' +
        '  - name: fallback\n    examples: [something else, none of these]\n    phases: [{ id: s, say: "Sorry." }]\n',
    );
    const checked = await cli('validate', typo);
    expect(checked.stdout).toContain('ok      ');
    expect(checked.stdout).toContain('  warning: "slots.clas" is read here, but no phase collects it and no action saves it: it is always empty');
    expect(checked.stdout).toContain('  warning: the fallback "fallback" has placeholder examples ("something else", "none of these")');
  });

  it('refuses a broken file with its problems and a non-zero exit', async () => {
    const bad = join(dir, 'broken.yaml');
    writeFileSync(bad, 'name: Broken\ncapabilities:\n  - name: a\n    phases:\n      - id: p\n        next: nowhere\n');
    const err = await cli('validate', bad).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toContain('capabilities.a.phases.p.next: unknown phase "nowhere" (line 6, column 15)');
  });

  it('prints usage for --help on the command and every sub-command, and exits 2 on a usage error', async () => {
    const commands = [
      ['--help'],
      ['apply', '--help'],
      ['validate', '--help'],
      ['eval', '--help'],
      ['versions', '--help'],
      ['pull', '--help'],
      ['activate', '--help'],
      ['test', '--help'],
      ['chat', '--help'],
      ['replay', '--help'],
      ['route', '--help'],
      ['review', '--help'],
      ['review-act', '--help'],
      ['suite', '--help'],
      ['evaluate', '--help'],
      ['split', '--help'],
      ['promote', '--help'],
      ['releases', '--help'],
      ['channel', '--help'],
      ['channel', 'connect', '--help'],
      ['channel', 'deliveries', '--help'],
    ];
    // Three processes at a time: each spends its time starting (tsx), which overlaps.
    for (let i = 0; i < commands.length; i += 3) {
      const batch = commands.slice(i, i + 3);
      const outs = await Promise.all(batch.map((args) => cli(...args)));
      for (const [j, { stdout }] of outs.entries()) expect(stdout, batch[j].join(' ')).toMatch(/^Usage: npm run agents --/);
    }
    const err = await cli('apply', EXAMPLE).catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/required option '--tenant <tenant>' not specified/);
  }, 180_000);

  it('applies a draft to a running server, lists its versions, activates one, and says in one line what went wrong', async () => {
    const created = await databases[0].create();
    const app = testApp(created.db);
    const server = await listen(app);
    const url = server.url;
    try {
      const first = await cli('apply', '--url', url, '--tenant', 'acme', EXAMPLE);
      expect(first.stdout).toContain(`applied   acme-support version 1 (${EXAMPLE})`);
      // The first version: no policy before it, so nothing judged it, and the output says so.
      expect(first.stdout).toContain('  no release policy: released without gates (docs/releases.md)');
      // A conversation on version 1, to replay against the draft.
      const hello = await fetch(`${url}/api/v1/agents/acme-support/converse`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tenant-id': 'acme' },
        body: JSON.stringify({ message: 'hello' }),
      });
      const conversation = ((await hello.json()) as { conversation_id: string }).conversation_id;
      const changed = join(dir, 'acme-support.yaml');
      writeFileSync(
        changed,
        readFileSync(EXAMPLE, 'utf8')
          .replace('en: "Hello{% if user.name %}', 'en: "Hi{% if user.name %}')
          .replace('  - name: greeting\n', '  - name: welcome\n'),
      );
      const draft = await cli('apply', '--url', url, '--tenant', 'acme', '--activate', 'false', changed);
      expect(draft.stdout).toContain('draft     acme-support version 2 (current stays 1)');
      const versions = await cli('versions', 'acme-support', '--url', url, '--tenant', 'acme');
      expect(versions.stdout).toMatch(/^version +state +created +made by +capabilities +knowledge$/m);
      expect(versions.stdout).toMatch(new RegExp(`^2 +draft +\\S+ +agents apply ${changed.replace(/[/.]/g, '\\$&')} +welcome`, 'm'));
      expect(versions.stdout).toMatch(new RegExp(`^1 +current +\\S+ +agents apply ${EXAMPLE.replace(/[/.]/g, '\\$&')} +greeting`, 'm'));
      const replayed = await cli('replay', 'acme-support', '--version', '2', '--url', url, '--tenant', 'acme');
      expect(replayed.stdout).toMatch(/^replay \S+: done; 1 conversation\(s\): 0 identical, 1 changed, 0 error\(s\)$/m);
      expect(replayed.stdout).toContain(`${conversation}: turn 0, reply\n  user: "hello"\n  - recorded: "Hello! I can track an order`);
      expect(replayed.stdout).toContain('  + replayed: "Hi! I can track an order');
      expect(replayed.stdout).toContain('\n  capability: "greeting" -> "welcome"\n');
      expect(replayed.stderr).toContain('replaying acme-support against version 2 [##############################] 1/1');
      const activated = await cli('activate', 'acme-support', '2', '--url', url, '--tenant', 'acme');
      expect(activated.stdout).toContain('activated acme-support version 2 (was 1)');
      const missing = await cli('activate', 'acme-support', '9', '--url', url, '--tenant', 'acme').catch((e) => e);
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toBe(`${url} answered 404 version_not_found: Agent "acme-support" has no version 9 (check the slug and --tenant)`);
      const bad = await cli('activate', 'acme-support', 'two', '--url', url, '--tenant', 'acme').catch((e) => e);
      expect(bad.code).toBe(2);
    } finally {
      await server.close();
      await app.close();
      await created.drop();
    }
    // The port the server had is closed now.
    const down = await cli('versions', 'acme-support', '--url', url, '--tenant', 'acme').catch((e) => e);
    expect(down.code).toBe(1);
    expect(down.stderr.trim()).toBe(`cannot reach ${url} (ECONNREFUSED): is the server running there? (--url)`);
  }, 90_000);

  it('connects a channel on a running server, lists, pauses and removes it, with credentials from the environment and never printed', async () => {
    const providers = await startFakeProviders();
    const created = await databases[0].create();
    const app = testApp(created.db, {
      secretsKey: randomBytes(32),
      channels: { intervalMs: 0, concurrency: { total: 4, perTenant: 2 }, inboundPerMinute: 100, apiUrls: providers.apiUrls },
    });
    const server = await listen(app);
    const on = ['--url', server.url, '--tenant', 'acme'];
    const withToken = { ...env, TELEGRAM_TOKEN: CREDS.telegram.bot_token };
    const channelCli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', 'channel', ...args], { env: withToken });
    try {
      await cli('apply', ...on, EXAMPLE);
      const connected = await channelCli('connect', 'acme-support', 'telegram', '--set', 'bot_token=env:TELEGRAM_TOKEN', '--set-webhook', ...on);
      expect(connected.stdout).toMatch(
        new RegExp(`^connected acme-support to telegram\ntelegram  active  ${server.url}/hooks/v1/ch_[A-Za-z0-9_-]{32} \\(setWebhook done\\)`),
      );
      expect(connected.stdout).toContain('credentials set: bot_token, secret_token');
      expect(providers.calls.map((c) => c.method)).toEqual(['setWebhook']);
      expect((await channelCli('pause', 'acme-support', 'telegram', ...on)).stdout).toContain("acme-support's telegram channel is paused");
      expect((await channelCli('list', 'acme-support', ...on)).stdout).toMatch(/^telegram +paused /m);
      expect((await channelCli('deliveries', 'acme-support', ...on)).stdout).toContain('no deliveries');
      const wrong = await channelCli('connect', 'acme-support', 'telegram', '--set', 'bot_token=nope', ...on).catch((e) => e);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('400 validation_error');
      expect((await channelCli('remove', 'acme-support', 'telegram', ...on)).stdout).toContain('its credentials are forgotten');
      expect((await channelCli('list', 'acme-support', ...on)).stdout).toContain(
        `acme-support has no channels: npm run agents -- channel connect acme-support <slack|telegram|whatsapp|sms> --set … --url ${server.url} --tenant acme`,
      );
      const bad = await channelCli('pause', 'acme-support', 'fax', ...on).catch((e) => e);
      expect(bad.code).toBe(2);
      expect(JSON.stringify([connected, providers.violations])).not.toContain(CREDS.telegram.bot_token);
      expect(providers.violations).toEqual([]);
    } finally {
      await server.close();
      await app.close();
      await created.drop();
      await providers.close();
    }
  }, 90_000);

  it('closes the loop on a running server: the inbox, two examples and one out of scope into a draft, its evaluation', async () => {
    const created = await databases[0].create();
    const app = testApp(created.db);
    const server = await listen(app);
    const url = server.url;
    const on = ['--url', url, '--tenant', 'acme'];
    const say = async (message: string) =>
      fetch(`${url}/api/v1/agents/acme-support/converse`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tenant-id': 'acme' },
        body: JSON.stringify({ message }),
      });
    try {
      await cli('apply', ...on, EXAMPLE);
      for (const m of ['where is the stuff I bought', 'I never got the things I paid for', "what's the weather like", "What's the weather like?"]) await say(m);
      const inbox = await cli('review', 'acme-support', ...on);
      expect(inbox.stdout).toContain('acme-support: open items by reason: fallback 3 (4 messages)');
      const id = (re: RegExp) =>
        inbox.stdout
          .split('\n')
          .find((l) => re.test(l))!
          .split(' ')[0];
      expect(inbox.stdout).toMatch(/^\S+ {2}fallback {10}2 {2}fallback {10}"What's the weather like\?"$/m);
      const added = await cli('review-act', 'acme-support', id(/stuff I bought/), id(/never got the things/), '--add-example', 'order_status', ...on);
      expect(added.stdout).toContain('add_example: 2 item(s) left the inbox');
      expect(added.stdout).toContain('draft: version 2 (from version 1; not current)');
      expect(added.stdout).toContain('+      - where is the stuff I bought');
      // The printed next step reaches the same server: pasted as it is, it does not talk to another.
      expect(added.stdout).toContain(`evaluate it: npm run agents -- evaluate acme-support 2 --url ${url} --tenant acme`);
      const oos = await cli('review-act', 'acme-support', id(/weather/), '--out-of-scope', ...on);
      expect(oos.stdout).toContain('draft: version 3 (from version 2; not current)');
      expect(oos.stdout).toContain("+  out_of_scope:\n+    - What's the weather like?");
      expect((await cli('review', 'acme-support', ...on)).stdout).toContain('open items by reason: none');
      // The draft back into the team's file: only the reviewed lines change, and applied, the file is the draft.
      const file = join(dir, 'pulled', 'acme-support.yaml');
      mkdirSync(dirname(file), { recursive: true });
      copyFileSync(EXAMPLE, file);
      const pulled = await cli('pull', 'acme-support', '--file', file, ...on);
      expect(pulled.stdout).toContain(
        `merged    acme-support version 3 (draft; review: 1 message added as out of scope to version 2) into ${file}: 3 change(s)`,
      );
      expect(pulled.stdout).toContain('+      - where is the stuff I bought\n+      - I never got the things I paid for\n');
      expect(readFileSync(file, 'utf8')).toContain('url: "${ORDERS_URL:-http://127.0.0.1:3001}/orders/{{ slots.order_id }}"');
      expect((await cli('apply', '--activate', 'false', file, ...on)).stdout).toContain('draft     acme-support version 3 (current stays 1)');
      const suite = await cli('suite', 'acme-support', EXAMPLE.replace('.yaml', '.test.yaml'), ...on);
      expect(suite.stdout).toMatch(/^stored \d+ test conversation\(s\) of acme-support/);
      const evaluated = await cli('evaluate', 'acme-support', '3', '--replay', '10', '--folds', '3', ...on);
      expect(evaluated.stdout).toContain('version 3 beside version 1 (current when it started): done');
      expect(evaluated.stdout).toMatch(/reviewed messages routed as said +3\/3 +\d\/3/);
      expect(evaluated.stdout).toContain('reviewed messages: ');
      expect(evaluated.stdout).toMatch(/^ +\+ "where is the stuff I bought": order_status; v3 order_status, v1 fallback$/m);
      expect(evaluated.stdout).toMatch(/replay of 4 recorded conversation\(s\)/);
      // A capability with no examples (the example's fallback) has no precision or recall: said so.
      expect(evaluated.stdout).toMatch(/^ {4}fallback +no examples → no examples$/m);
      expect(evaluated.stderr).toContain('evaluating acme-support version 3');
      const none = await cli('review-act', 'acme-support', id(/weather/), '--dismiss', ...on).catch((e) => e);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('answered 409 review_item_closed');

      // Released through the example agent's gates, rolled back, split, promoted: each printed, each recorded.
      const released = await cli('activate', 'acme-support', '3', ...on);
      expect(released.stdout).toContain('activated acme-support version 3 (was 1)');
      expect(released.stdout).toMatch(/^ {2}pass {2}tests: 9 of 9 pass \(all must\)$/m);
      expect(released.stdout).toMatch(/^ {2}pass {2}labelled accuracy on reviewed messages: 100% of 3 \(at least 90%, not below the current \d+(\.\d+)?%\)$/m);
      const rolled = (await cli('activate', 'acme-support', '1', ...on)).stdout;
      expect(rolled).toContain('rolled back acme-support version 1 (was 3)');
      expect(rolled).toContain('  no gates: a rollback to a version released before is not gated');
      const split = await cli('split', 'acme-support', '3', '50', ...on);
      expect(split.stdout).toContain('50% of new conversations of acme-support start on version 3, the rest on version 1');
      expect((await cli('promote', 'acme-support', ...on)).stdout).toContain('promoted acme-support version 3 (was 1); the split has ended');
      // A file whose new version breaks a stored test: refused, with each gate and its figure, and kept as a draft.
      const broken = join(dir, 'acme-support.yaml');
      writeFileSync(broken, readFileSync(EXAMPLE, 'utf8').replace('shipped on {{', 'left us on {{'));
      const refused = await cli('apply', ...on, broken).catch((e) => e);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^ {2}FAIL {2}tests: 8 of 9 pass \(all must\); failing: shipped order$/m);
      // The file lacks the reviewed examples version 3 has: the reviewed messages regress too.
      expect(refused.stderr).toMatch(/^ {2}FAIL {2}labelled accuracy on reviewed messages: 33\.33% of 3 \(at least 90%, not below the current 100%\)$/m);
      expect(refused.stderr).toContain(
        'answered 409 release_gates_failed: Version 4 fails 2 release gates: tests, labelled_accuracy; the definition is stored as draft version 4',
      );
      const record = await cli('releases', 'acme-support', '--verify', ...on);
      expect(record.stdout).toMatch(/^ {3}5 {2}\S+ {2}promote {6}version 3 \(was 1\)$/m);
      expect(record.stdout).toMatch(/^ {3}1 {2}\S+ {2}activate {5}version 1$/m);
      expect(record.stdout).toContain('release record consistent: 5 steps chained without a key (AUDIT_CHAIN_KEY), which proves consistency only');
    } finally {
      await server.close();
      await app.close();
      await created.drop();
    }
  }, 120_000);

  it("runs the example agents' test files in memory, and reports a failing step readably, with a JUnit file", async () => {
    const ok = await cli('test', 'agents/', '--junit', join(dir, 'ok.xml'));
    expect(ok.stdout).toContain('✓ shipped order');
    expect(ok.stdout).toMatch(/^12 passed, 0 failed \(2 file\(s\)\)$/m);
    expect(readFileSync(join(dir, 'ok.xml'), 'utf8')).toContain('<testsuites tests="12" failures="0" errors="0"');
    const tests = join(dir, 'acme-support.test.yaml');
    writeFileSync(join(dir, 'acme-support.yaml'), readFileSync(EXAMPLE, 'utf8'));
    writeFileSync(
      tests,
      [
        'agent: acme-support',
        'tests:',
        '  - name: wrong expectations',
        '    steps:',
        '      - user: where is my order?',
        '        expect: { capability: billing, reply: "/^Hello/" }',
        '  - name: right ones',
        '    steps:',
        '      - user: hello',
        '        expect: { capability: greeting }',
      ].join('\n'),
    );
    const bad = await cli('test', tests, '--junit', join(dir, 'bad.xml')).catch((e) => e);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(
      '  ✗ wrong expectations\n      step 1 ("where is my order?"):\n        capability: expected "billing", got "order_status"\n        reply: expected /^Hello/, got "What is your order number?',
    );
    // A misrouted step shows what the router weighed, best first.
    expect(bad.stdout).toMatch(/\n {8}routed by classifier \(best match\): order_status 0\.\d{3}, \w+ 0\.\d{3}, \w+ 0\.\d{3}\n/);
    expect(bad.stdout).toContain('  ✓ right ones');
    expect(bad.stdout).toMatch(/^1 passed, 1 failed/m);
    const xml = readFileSync(join(dir, 'bad.xml'), 'utf8');
    expect(xml).toContain('<testsuite name="acme-support.test.yaml" tests="2" failures="1"');
    expect(xml).toContain('capability: expected &quot;billing&quot;, got &quot;order_status&quot;');
    writeFileSync(tests, 'agent: acme-support\ntests:\n  - name: no steps\n');
    const broken = await cli('test', tests).catch((e) => e);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`${tests}: tests.0.steps: Required`);
  });

  it('shows how one message routes, as the console would: the decision, its reason and every candidate', async () => {
    const weather = await cli('route', EXAMPLE, "what's the weather like?");
    expect(weather.stdout).toContain(`${EXAMPLE}: "what's the weather like?"\nfallback by fallback (background), score `);
    expect(weather.stdout).toMatch(/^ {2}order_status +0\.\d{3}/m);
    expect(weather.stdout).toMatch(/^reply: "Sorry, I can't help with that yet/m);
    const gated = await cli('route', EXAMPLE, 'please ring me on the phone');
    expect(gated.stdout).toMatch(/^ {2}priority_support +0\.\d{3} +#+ +not eligible \(not_entitled\)$/m);
    const entitled = await cli('route', EXAMPLE, 'please ring me on the phone', '--context', '{"entitlements":{"tier":"gold"}}');
    expect(entitled.stdout).toMatch(/^priority_support by classifier \(best match\), score 0\.\d{3}, threshold/m);
    // The example sets no routing.threshold: the printed one says it is calibrated, not the author's.
    expect(entitled.stdout).toMatch(/, threshold 0\.\d{3} \(calibrated on held-out examples: docs\/routing\.md\)/);
    const bad = await cli('route', EXAMPLE, 'hi', '--context', '[1]').catch((e) => e);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--context <json>' argument '[1]' is invalid. must be a JSON object");
  });

  it('reports how well an agent routes: cross-validated, or on labelled messages in CSV or YAML', async () => {
    const cv = await cli('eval', EXAMPLE);
    expect(cv.stdout).toMatch(/^5-fold cross-validation over the examples: \d+ messages, accuracy \d+\.\d%/);
    expect(cv.stdout).toMatch(/capability\s+messages\s+precision\s+recall/);
    expect(cv.stdout).toMatch(/order_status\s+\d+\s+/);
    expect(cv.stderr).toContain('cross-validation: fold 5 of 5 trained and routed');
    const csv = join(dir, 'labelled.csv');
    writeFileSync(csv, 'message,capability\n"where is my parcel, please",order_status\nI need a copy of my invoice,billing\nhi,greeting\n');
    const labelled = await cli('eval', EXAMPLE, '--data', csv);
    expect(labelled.stdout).toContain(`labelled messages from ${csv}: 3 messages, accuracy 100.0%`);
    expect(labelled.stdout).toContain('warnings:');
    const yaml = join(dir, 'labelled.yaml');
    writeFileSync(yaml, 'order_status: [where is my parcel]\nbilling: [what is the weather in paris]\n');
    const mixed = await cli('eval', EXAMPLE, '--data', yaml);
    expect(mixed.stdout).toContain(`labelled messages from ${yaml}: 2 messages, accuracy 50.0%`);
    expect(mixed.stdout).toContain('most confused (expected → routed to):\n  billing → fallback: 1\n      "what is the weather in paris"');
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, '- { message: hi, capability: nope }\n');
    const err = await cli('eval', EXAMPLE, '--data', unknown).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr).toContain(`${unknown}: no capability named "nope" in ${EXAMPLE}`);
  });

  it('says which files clash when two define one slug', async () => {
    const folder = mkdtempSync(join(dir, 'clash-'));
    writeFileSync(join(folder, 'x.yaml'), 'name: X\ncapabilities: [{ name: a, phases: [{ id: p }] }]\n');
    writeFileSync(join(folder, 'x.json'), '{"name":"X","capabilities":[{"name":"a","phases":[{"id":"p"}]}]}');
    const { agentFiles } = await import('../server/src/agents-loader.js');
    await expect(agentFiles(folder)).rejects.toThrow(`${join(folder, 'x.json')} and ${join(folder, 'x.yaml')} both define agent "x"`);
  });

  it('fills ${NAME} from SWITCHBOARD_VAR_NAME, with defaults, and names what is missing', async () => {
    expect(expandVariables('a ${X} b ${Y:-dflt} c', { SWITCHBOARD_VAR_X: '1' })).toEqual({
      text: 'a 1 b dflt c',
      substitutions: [
        { name: 'X', value: '1', from: 'environment' },
        { name: 'Y', value: 'dflt', from: 'default' },
      ],
    });
    expect(() => expandVariables('${MISSING}', {})).toThrow('set SWITCHBOARD_VAR_MISSING');
  });
});

describe('npm run keys', () => {
  it('prints usage for --help on the command and every sub-command', async () => {
    const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'server/src/cli/keys.ts', ...args]);
    for (const args of [['--help'], ['create', '--help'], ['list', '--help'], ['revoke', '--help']]) {
      const { stdout } = await cli(...args);
      expect(stdout, args.join(' ')).toMatch(/^Usage: npm run keys --/);
    }
  });

  it('makes a publishable key for the widget and prints its snippet; refuses a muddled one with exit 2', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-keys-'));
    const env = { ...process.env, DATABASE_URL: `sqlite://${join(dir, 'keys.db')}`, PUBLIC_URL: 'https://switchboard.example.com', LOG_LEVEL: 'silent' };
    const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'server/src/cli/keys.ts', ...args], { env });
    try {
      const { stdout } = await cli('create', '--tenant', 'acme', '--widget', '--agent', 'acme-support', '--origin', 'https://Shop.example.com');
      const key = /key \(public by design; list shows it again\): (pk_[0-9a-f]{32})/.exec(stdout)?.[1];
      expect(key).toBeDefined();
      expect(stdout).toContain(
        `snippet for acme-support: <script src="https://switchboard.example.com/widget/v1.js" data-agent="acme-support" data-key="${key}" async></script>`,
      );
      expect((await cli('list', '--tenant', 'acme')).stdout).toContain(`widget ${key} agents acme-support origins https://shop.example.com`);
      expect(stdout).toContain(`created publishable key `);
      expect(stdout).toContain(`for tenant acme in sqlite://${join(dir, 'keys.db')}: agents acme-support`);
      // Without PUBLIC_URL the snippet names the address the server prints: HOST and PORT.
      const { PUBLIC_URL: _public, ...local } = env;
      const onPort = await run(
        process.execPath,
        [
          '--import',
          'tsx',
          'server/src/cli/keys.ts',
          'create',
          '--tenant',
          'acme',
          '--widget',
          '--agent',
          'acme-support',
          '--origin',
          'https://shop.example.com',
        ],
        { env: { ...local, PORT: '4180' } },
      );
      expect(onPort.stdout).toContain('<script src="http://127.0.0.1:4180/widget/v1.js" data-agent="acme-support"');
      for (const args of [
        ['--widget', '--agent', 'acme-support'],
        ['--widget', '--agent', 'acme-support', '--origin', 'https://shop.example.com/path'],
        ['--widget', '--agent', 'acme-support', '--origin', 'https://shop.example.com', '--scopes', 'read'],
      ]) {
        const failed = await cli('create', '--tenant', 'acme', ...args).catch((e: { code: number; stderr: string }) => e);
        expect(failed, args.join(' ')).toMatchObject({ code: 2 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the example help agent (knowledge only)', () => {
  const HELP = 'agents/acme-help.yaml';
  let llm: FakeLlm;
  let created: Awaited<ReturnType<(typeof databases)[0]['create']>>;
  let withModel: App;
  let without: App;
  beforeAll(async () => {
    llm = await startFakeLlm();
    created = await databases[0].create();
    const { definition } = await readAgentFile(HELP);
    withModel = testApp(created.db, {
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 2000, maxRetries: 0, maxTokensPerConversation: 0, tenantDailyTokens: 0 },
    });
    without = testApp(created.db);
    await withModel.agents.put('demo', 'acme-help', definition);
  });
  afterAll(async () => {
    await withModel.close();
    await without.close();
    await llm.close();
    await created.drop();
  });
  const ask = (app: App, message: string) =>
    request(app.app)
      .post('/api/v1/agents/acme-help/converse')
      .set('tenant-id', 'demo')
      .send({ message })
      .expect(200)
      .then((r) => r.body);

  it('validates, and sends every message to its one capability with the passages that answer it', async () => {
    const { definition } = await readAgentFile(HELP);
    expect(validateDefinition(definition)).toEqual([]);
    llm.script({ text: 'Refunds reach your card within 5 working days [returns#2].' });
    const r = await ask(withModel, 'when do I get my money back after a return?');
    expect(r.state.capability).toBe('answer');
    expect(r.response.message).toBe('Refunds reach your card within 5 working days [returns#2].');
    const system = llm.calls[0].body.messages[0].content as string;
    expect(system).toContain('[returns#2] Refunds');
    expect(llm.calls[0].body.tools.map((t: any) => t.function.name)).toEqual(['finish', 'escalate']);
  });

  it('escalates a question its pages do not cover when the model says so', async () => {
    llm.script({ toolCalls: [{ name: 'escalate', arguments: { reason: 'not covered' } }] });
    const r = await ask(withModel, 'can I pay with bitcoin?');
    expect(r.state.status).toBe('escalated');
  });

  it('says that no model is configured, without pretending to answer, on a server without one', async () => {
    const r = await ask(without, 'what is your returns policy?');
    expect(r.response.message).toMatch(/no model is configured on this server/);
    expect(r.state.status).toBe('active');
  });
});
