// `npm run agents -- tenant copy`: a tenant configured on the embedded SQLite file (agents with a
// release record, a test suite, a secret key, the widget's publishable key, the widget's identity
// secret, a Telegram channel) copied to each database; a server on the copy then answers with all
// of it: the same versions and a release record that verifies, the API key, the widget key with
// a signed user, and the Telegram webhook URL with the same secret token and bot token.
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../server/src/app.js';
import { readAgentFile } from '../server/src/agents-loader.js';
import { databases, eachDatabase } from './helpers/databases.js';
import { EXAMPLE_AGENT } from './helpers/example-agent.js';
import { CREDS, startFakeProviders, telegramMessage, type FakeProviders } from './helpers/fake-providers.js';
import { testConfig } from './helpers/servers.js';

const T = { 'tenant-id': 'acme' };
const SHOP = 'https://shop.example.com';
const IDENTITY = 'the-shop-identity-secret';

/** The command line, as a user runs it: its output and exit code. */
async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', ...args]);
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

eachDatabase('a tenant copied from SQLite to $name', (database) => {
  let providers: FakeProviders;
  let source: Awaited<ReturnType<(typeof databases)[0]['create']>>;
  let target: Awaited<ReturnType<(typeof databases)[0]['create']>>;
  let app: App;
  const config = () =>
    testConfig({
      secretsKey: Buffer.alloc(32, 7),
      auditChainKey: Buffer.alloc(32, 9),
      publicUrl: 'https://switchboard.test',
      channels: { ...testConfig().channels, intervalMs: 0, apiUrls: providers.apiUrls },
    });
  const made = { key: '', publishable: '', token: '', hook: '', versions: [] as unknown[], releases: [] as unknown[], suite: null as unknown };

  beforeAll(async () => {
    providers = await startFakeProviders();
    source = await databases[0].create();
    target = await database.create();
    const before = createApp(config(), { db: source.db, logger: pino({ level: 'silent' }) });
    const api = () => request(before.app);
    const { definition } = await readAgentFile(EXAMPLE_AGENT);
    delete definition.release;
    await api().put('/api/v1/agents/acme-support').set(T).send(definition).expect(200);
    await api()
      .put('/api/v1/agents/acme-support?note=second')
      .set(T)
      .send({ ...definition, description: 'Orders, billing and returns' })
      .expect(200);
    await api()
      .put('/api/v1/agents/acme-support?activate=false')
      .set(T)
      .send({ ...definition, description: 'A draft' })
      .expect(200);
    await api()
      .put('/api/v1/agents/acme-support/test-suite')
      .set(T)
      .send({ tests: [{ name: 'hello', steps: [{ user: 'hello', expect: { capability: 'greeting' } }] }] })
      .expect(200);
    made.key = (
      await api()
        .post('/api/v1/keys')
        .set(T)
        .send({ name: 'dashboards', scopes: ['read'] })
        .expect(201)
    ).body.key;
    made.publishable = (
      await api()
        .post('/api/v1/keys')
        .set(T)
        .send({ name: 'shop', widget: { agents: ['acme-support'], origins: [SHOP] } })
        .expect(201)
    ).body.key;
    made.token = (
      await request(before.app).post(`/widget/v1/agents/acme-support/visitor?key=${made.publishable}`).set('origin', SHOP).send({}).expect(200)
    ).body.visitor_token;
    await api().put('/api/v1/secrets/WIDGET_IDENTITY_SECRET').set(T).send({ value: IDENTITY }).expect(204);
    const channel = await api()
      .put('/api/v1/agents/acme-support/channels/telegram')
      .set(T)
      .send({ credentials: CREDS.telegram, set_webhook: false })
      .expect(200);
    made.hook = new URL(channel.body.webhook_url as string).pathname;
    made.versions = (await api().get('/api/v1/agents/acme-support/versions').set(T).expect(200)).body.data;
    made.releases = (await api().get('/api/v1/agents/acme-support/releases').set(T).expect(200)).body.data;
    made.suite = (await api().get('/api/v1/agents/acme-support/test-suite').set(T).expect(200)).body;
    await before.close();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await source?.drop();
    await target?.drop();
    await providers?.close();
  });

  it('copies every row of the tenant in one go, and says what it copied', async () => {
    const { code, out } = await cli('tenant', 'copy', 'acme', '--from', source.url, '--to', target.url);
    expect(out).toContain('copying tenant "acme" from sqlite://');
    expect(out).toMatch(/^ {2}agents +1$/m);
    expect(out).toMatch(/^ {2}agent_versions +3$/m);
    expect(out).toMatch(/^ {2}release_records +2$/m);
    expect(out).toMatch(/^ {2}api_keys +2$/m);
    expect(out).toMatch(/^ {2}tenant_secrets +1$/m);
    expect(out).toMatch(/^ {2}channels +1$/m);
    expect(out).toContain('copied 11 row(s) in one transaction');
    expect(code).toBe(0);
    app = createApp(config(), { db: target.db, logger: pino({ level: 'silent' }) });
  }, 60_000);

  it('serves the same versions, release record (which verifies) and test suite', async () => {
    const api = () => request(app.app);
    expect((await api().get('/api/v1/agents/acme-support/versions').set(T).expect(200)).body.data).toEqual(made.versions);
    expect((await api().get('/api/v1/agents/acme-support/releases').set(T).expect(200)).body.data).toEqual(made.releases);
    expect((await api().get('/api/v1/agents/acme-support/releases/verify').set(T).expect(200)).body).toMatchObject({ valid: true, entries: 2 });
    expect((await api().get('/api/v1/agents/acme-support/test-suite').set(T).expect(200)).body).toEqual(made.suite);
    const said = await api().post('/api/v1/agents/acme-support/converse').set(T).send({ message: 'hello' }).expect(200);
    expect(said.body.state.capability).toBe('greeting');
  });

  it('takes the same API key, the widget key on the shop page, and a user signed with the identity secret', async () => {
    expect(await app.keys.authenticate(made.key)).toMatchObject({ tenantId: 'acme', grants: [{ role: 'viewer' }] });
    const widget = (path: string) => request(app.app).post(`/widget/v1/agents/acme-support/${path}?key=${made.publishable}`).set('origin', SHOP);
    await request(app.app).get(`/widget/v1/agents/acme-support?key=${made.publishable}`).set('origin', SHOP).expect(200);
    const sign = (user: string) => createHmac('sha256', IDENTITY).update(user).digest('hex');
    expect((await widget('visitor').set('x-user-id', 'u-42').set('x-user-hash', sign('u-42')).send({})).status).toBe(200);
    expect((await widget('visitor').set('x-user-id', 'u-42').set('x-user-hash', sign('u-43')).send({})).status).toBe(403);
    // A visitor's token from the old database is refused once; the widget's renewal then makes a new visitor.
    expect((await widget('converse').set('x-visitor-token', made.token).send({ message: 'hello' })).status).toBe(401);
    expect((await widget('visitor').send({ visitor_token: made.token })).body).toMatchObject({ renewed: false });
  });

  it("answers Telegram at the same webhook URL, with the channel's secret token and bot token", async () => {
    const message = telegramMessage(7001, 301, 'hello');
    const update = JSON.stringify(message);
    const post = (token: string) =>
      request(app.app).post(made.hook).set('content-type', 'application/json').set('x-telegram-bot-api-secret-token', token).send(update);
    expect((await post('not-the-secret-token-000')).status).toBe(401);
    expect((await post(CREDS.telegram.secret_token)).status).toBe(200);
    // The reply goes out with the bot token the copy decrypted (the scripted Telegram answers only to it).
    const sent = () => providers.calls.find((c) => c.provider === 'telegram' && c.method === 'sendMessage');
    for (const deadline = Date.now() + 10_000; !sent() && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
    expect(sent()?.body).toMatchObject({ chat_id: message.message.chat.id });
  }, 20_000);

  it('refuses to copy into a database that already holds the tenant, and changes nothing', async () => {
    const { code, out } = await cli('tenant', 'copy', 'acme', '--from', source.url, '--to', target.url);
    expect(code).toBe(1);
    expect(out).toContain('the target database already holds tenant "acme" (1 agents, 3 agent_versions');
    const nothing = await cli('tenant', 'copy', 'nobody', '--from', source.url, '--to', target.url);
    expect(nothing).toMatchObject({ code: 1, out: expect.stringContaining('the source holds nothing of tenant "nobody"') });
  }, 60_000);
});
