// Webhook delivery between tenants: a tenant's slow endpoints use only its own share of the
// delivery capacity; secrets are resolved per tenant; receivers must be http(s).
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { startBackend, type Backend } from '../helpers/servers.js';
import { waitUntil } from '../helpers/wait.js';

const closing = (urls: string[], secretName?: string) => ({
  name: 'Closer',
  capabilities: [{ name: 'bye', examples: ['goodbye'], phases: [{ id: 'end', say: 'Bye.', end: 'completed' as const }] }],
  webhooks: urls.map((url) => ({ url, events: ['conversation.completed'], ...(secretName ? { secret_name: secretName } : {}) })),
});

eachDatabase('webhooks between tenants on $name', (database) => {
  let app: App;
  let slow: Backend;
  let fast: Backend;

  beforeAll(async () => {
    slow = await startBackend((_q, res) => setTimeout(() => res.writeHead(204).end(), 800));
    fast = await startBackend((_q, res) => res.writeHead(204).end());
  });
  afterAll(async () => {
    await slow.close();
    await fast.close();
  });
  const f = appFixture(database, {
    config: () => ({
      actionAllowedHosts: { noisy: [`127.0.0.1:${slow.port}`], quiet: [`127.0.0.1:${fast.port}`] },
      secrets: { RAWKEY: { value: 'plain-text-signing-key', tenants: ['quiet'] } },
      webhookConcurrency: { total: 16, perTenant: 4 },
    }),
  });
  beforeAll(() => {
    app = f.app;
  });

  it("delivers a quiet tenant's event while a noisy tenant's slow endpoints are busy", { timeout: 20_000 }, async () => {
    await request(app.app)
      .put('/api/v1/agents/closer')
      .set('tenant-id', 'noisy')
      .send(closing(Array.from({ length: 20 }, (_, i) => `${slow.url}/h${i}`)))
      .expect(200);
    await request(app.app)
      .put('/api/v1/agents/closer')
      .set('tenant-id', 'quiet')
      .send(closing([`${fast.url}/hook`], 'RAWKEY'))
      .expect(200);
    await request(app.app).post('/api/v1/agents/closer/converse').set('tenant-id', 'noisy').send({ message: 'goodbye' }).expect(200);
    app.webhooks.start(20);
    // Let the noisy tenant's deliveries start first.
    await waitUntil("the noisy tenant's first delivery", () => slow.requests.length > 0);
    await request(app.app).post('/api/v1/agents/closer/converse').set('tenant-id', 'quiet').send({ message: 'goodbye' }).expect(200);
    await waitUntil("the quiet tenant's delivery", () => fast.requests.length > 0);
    // The quiet tenant got through while the noisy one had only its share (4) under way.
    expect(slow.requests.length).toBeLessThanOrEqual(4);
    await app.webhooks.runOnce();
    expect(slow.requests).toHaveLength(20);

    // Signed with the raw-text secret as its key bytes.
    const got = fast.requests[0];
    const at = new Date(Number(got.headers['webhook-timestamp']) * 1000);
    const expected = new Webhook(new TextEncoder().encode('plain-text-signing-key') as unknown as string, { format: 'raw' }).sign(
      String(got.headers['webhook-id']),
      at,
      got.body,
    );
    expect(got.headers['webhook-signature']).toBe(expected);
  });

  it('does not let a definition sign with a secret granted to another tenant', async () => {
    await request(app.app)
      .put('/api/v1/agents/thief')
      .set('tenant-id', 'noisy')
      .send(closing([`${slow.url}/steal`], 'RAWKEY'))
      .expect(200);
    await request(app.app).post('/api/v1/agents/thief/converse').set('tenant-id', 'noisy').send({ message: 'goodbye' }).expect(200);
    await app.webhooks.runOnce();
    const d = await request(app.app).get('/api/v1/agents/thief/webhook-deliveries').set('tenant-id', 'noisy');
    expect(d.body.data[0]).toMatchObject({ status: 'pending', attempts: 1, last_error: 'secret "RAWKEY" is not available to this tenant' });
    expect(slow.requests.filter((r) => r.url === '/steal')).toHaveLength(0);
  });

  it('refuses receivers that are not http or https at PUT', async () => {
    const r = await request(app.app)
      .put('/api/v1/agents/ftp')
      .set('tenant-id', 'quiet')
      .send(closing(['ftp://files.example.com/hook']));
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: { path: string }) => e.path)).toContain('webhooks[0].url');
  });
});
