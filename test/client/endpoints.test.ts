// The endpoints beyond the seed, through the typed client against a listening server.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSwitchboardClient, type SwitchboardClient } from '../../client/src/index.js';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { testApp } from '../helpers/servers.js';

describe('typed client: lifecycle, audit and keys', () => {
  let app: App;
  let server: Server;
  let drop: () => Promise<void>;
  let sb: SwitchboardClient;

  beforeAll(async () => {
    const created = await databases[0].create();
    drop = created.drop;
    app = testApp(created.db);
    server = app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    sb = createSwitchboardClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tenantId: 'acme' });
    const put = await sb.api.putAgent({
      params: { slug: 'echo' },
      body: { ...echoAgent, webhooks: [{ url: 'http://127.0.0.1:9/hooks', events: ['conversation.completed'] }] } as never,
    });
    expect(put.status).toBe(200);
  });
  afterAll(async () => {
    await app.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await drop();
  });

  it('answers a PUT with routing warnings, and accepts the definition all the same', async () => {
    const put = await sb.api.putAgent({
      params: { slug: 'thin' },
      body: {
        name: 'Thin',
        capabilities: [
          { name: 'hours', examples: ['when are you open'], phases: [{ id: 'p', say: 'Nine to five.' }] },
          {
            name: 'where',
            examples: ['where is your store', 'where is the shop', 'your address', 'how do I find you', 'directions to the shop'],
            phases: [{ id: 'p', say: 'Main Street.' }],
          },
        ],
      },
    });
    if (put.status !== 200) throw new Error(`put ${put.status}`);
    expect(put.body.warnings).toEqual([
      { code: 'thin_capability', capability: 'hours', message: '"hours" has 1 example; 5 or more, in different words, route more reliably' },
    ]);
    const c = await sb.api.converse({ params: { slug: 'thin' }, body: { message: 'where is the shop' } });
    expect(c.status === 200 && c.body.state.capability).toBe('where');
  });

  it('operates a conversation: operator message, status, audit verification, deliveries, erasure', async () => {
    const c = await sb.api.converse({
      params: { slug: 'echo' },
      body: { message: 'echo this', context: { version: 'v1', context: { identity: { user_id: 'zoe' } } } },
    });
    if (c.status !== 200) throw new Error(`converse ${c.status}`);
    const id = c.body.conversation_id;
    const msg = await sb.api.postOperatorMessage({ params: { slug: 'echo', id }, body: { message: 'A person here.', author: 'kim' } });
    expect(msg.status).toBe(201);
    if (msg.status === 201) expect(msg.body.turn).toMatchObject({ role: 'agent', author: 'kim' });
    const done = await sb.api.setStatus({ params: { slug: 'echo', id }, body: { status: 'completed', outcome: 'resolved' } });
    expect(done.status).toBe(200);
    if (done.status === 200) expect(done.body.status).toBe('completed');
    const again = await sb.api.setStatus({ params: { slug: 'echo', id }, body: { status: 'active' } });
    expect(again.status).toBe(409);
    const verify = await sb.api.verifyAuditLogs({ params: { slug: 'echo', id } });
    expect(verify.status === 200 && verify.body.valid).toBe(true);
    const deliveries = await sb.api.listWebhookDeliveries({ params: { slug: 'echo' }, query: { conversation_id: id } });
    expect(deliveries.status === 200 && deliveries.body.data.map((d) => d.event)).toEqual(['conversation.completed']);
    expect((await sb.api.eraseConversation({ params: { slug: 'echo', id } })).status).toBe(204);
    const erasedUser = await sb.api.eraseUserConversations({ params: { user_id: 'zoe' } });
    expect(erasedUser.status === 200 && erasedUser.body).toEqual({ erased: 0 });
  });

  it('refuses a channel without SECRETS_KEY (409) and with credentials of another channel (400), storing nothing', async () => {
    const noKey = await sb.api.putChannel({
      params: { slug: 'echo', channel: 'sms' },
      body: { credentials: { account_sid: `AC${'0'.repeat(32)}`, auth_token: 'f'.repeat(32), from: '+15005550006' } },
    });
    expect(noKey.status).toBe(409);
    expect(noKey.status === 409 && noKey.body.code).toBe('secrets_not_configured');
    const wrong = await sb.api.putChannel({ params: { slug: 'echo', channel: 'sms' }, body: { credentials: { bot_token: 'xoxb-1-2-3' } } });
    expect(wrong.status).toBe(400);
    const list = await sb.api.listChannels({ params: { slug: 'echo' } });
    expect(list.status === 200 && list.body.data).toEqual([]);
    const deliveries = await sb.api.listChannelDeliveries({ params: { slug: 'echo' }, query: { channel: 'sms' } });
    expect(deliveries.status === 200 && deliveries.body).toEqual({ data: [], next_cursor: null });
    const missing = await sb.api.deleteChannel({ params: { slug: 'echo', channel: 'telegram' } });
    expect(missing.status === 404 && missing.body.code).toBe('channel_not_found');
  });

  it('manages API keys', async () => {
    const created = await sb.api.createKey({ body: { scopes: ['read'], name: 'reports' } });
    if (created.status !== 201) throw new Error(`createKey ${created.status}`);
    expect(created.body.key).toMatch(/^sbk_/);
    const list = await sb.api.listKeys();
    expect(list.status === 200 && list.body.data.some((k) => k.id === created.body.id)).toBe(true);
    expect((await sb.api.revokeKey({ params: { id: created.body.id } })).status).toBe(204);
  });
});
