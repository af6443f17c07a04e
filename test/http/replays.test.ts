// Replays on every database: recorded conversations against other versions, actions answered
// from their recordings; finds a changed reply, a changed capability and an unrecorded action,
// and nothing when the version is the same; stores and sends nothing.
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { ordersHandler, startBackend, type Backend } from '../helpers/servers.js';

warnIfPostgresSkipped();

function shop(base: string, o: { greeting?: string; greetingName?: string; path?: string; action?: string } = {}) {
  const action = o.action ?? 'get_order';
  return {
    name: 'Shop',
    capabilities: [
      {
        name: 'order_status',
        examples: ['where is my order', 'track my order', 'order status', 'has my parcel shipped'],
        phases: [
          { id: 'ask', say: 'Your order number?', collect: { slot: 'order_id', type: 'text', pattern: '^[0-9]{6}$' } },
          { id: 'lookup', call: action, on_error: 'sorry', next: 'found' },
          { id: 'found', say: `Order {{ slots.order_id }} is {{ actions.${action}.body.status }}.`, end: 'completed' },
          { id: 'sorry', say: 'The order system is down.', end: 'escalated' },
        ],
      },
      { name: o.greetingName ?? 'greeting', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: o.greeting ?? 'Hello!' }] },
    ],
    actions: { [action]: { type: 'http', method: 'GET', url: `${base}${o.path ?? '/orders'}/{{ slots.order_id }}` } },
  };
}

eachDatabase('replays on $name', (database) => {
  let orders: Backend;
  beforeAll(async () => {
    orders = await startBackend(ordersHandler);
  });
  afterAll(async () => orders?.close());
  const f = appFixture(database, {
    config: () => ({ actionAllowedHosts: { acme: [`127.0.0.1:${orders.port}`] } }),
    agents: () => ({ shop: shop(orders.url) }),
  });
  const api = () => request(f.app.app);
  const say = async (message: string, conversation_id?: string) =>
    (await api().post('/api/v1/agents/shop/converse').set('tenant-id', 'acme').send({ message, conversation_id }).expect(200)).body;
  const draft = async (def: object) =>
    (await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(def).expect(200)).body.stored_version as number;
  const replay = async (body: object, slug = 'shop') => {
    const started = await api().post(`/api/v1/agents/${slug}/replays`).set('tenant-id', 'acme').send(body).expect(202);
    expect(started.body.status).toBe('running');
    for (;;) {
      const r = await api().get(`/api/v1/agents/${slug}/replays/${started.body.id}`).set('tenant-id', 'acme').expect(200);
      if (r.body.status !== 'running') return r.body;
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  let order: string;
  let greeting: string;

  beforeAll(async () => {
    const a = await say('where is my order');
    await say('100001', a.conversation_id);
    order = a.conversation_id;
    greeting = (await say('hello')).conversation_id;
  });

  it('finds nothing changed against the same version, calls nothing and stores nothing', async () => {
    const calls = orders.requests.length;
    const conversations = (await api().get('/api/v1/agents/shop/conversations').set('tenant-id', 'acme').expect(200)).body.data.length;
    const r = await replay({ version: 1 });
    expect(r).toMatchObject({ status: 'done', progress: { done: 2, total: 2 }, summary: { conversations: 2, identical: 2, changed: 0, errors: 0 } });
    expect(orders.requests.length).toBe(calls);
    expect((await api().get('/api/v1/agents/shop/conversations').set('tenant-id', 'acme').expect(200)).body.data.length).toBe(conversations);
  });

  it('finds a changed reply and a changed capability, at the turn they change', async () => {
    const reply = await replay({ version: await draft(shop(orders.url, { greeting: 'Hi there!' })) });
    expect(reply.summary).toMatchObject({ identical: 1, changed: 1 });
    expect(reply.results.find((x: any) => x.conversation_id === greeting)).toMatchObject({
      verdict: 'changed',
      first_difference: {
        turn_index: 0,
        message: 'hello',
        field: 'reply',
        recorded: 'Hello!',
        replayed: 'Hi there!',
        changes: [{ field: 'reply', recorded: 'Hello!', replayed: 'Hi there!' }],
      },
    });
    const renamed = await replay({ version: await draft(shop(orders.url, { greetingName: 'welcome' })), conversations: [greeting] });
    expect(renamed.results[0].first_difference).toMatchObject({ field: 'capability', recorded: 'greeting', replayed: 'welcome' });
    // Every field that differed at that turn, not only the first.
    const both = await replay({ version: await draft(shop(orders.url, { greetingName: 'welcome', greeting: 'Hi there!' })), conversations: [greeting] });
    expect(both.results[0].first_difference).toMatchObject({
      message: 'hello',
      field: 'reply',
      changes: [
        { field: 'reply', recorded: 'Hello!', replayed: 'Hi there!' },
        { field: 'capability', recorded: 'greeting', replayed: 'welcome' },
      ],
    });
  });

  it('finds an action call that was never recorded', async () => {
    const r = await replay({ version: await draft(shop(orders.url, { action: 'fetch_order' })), conversations: [order] });
    expect(r.results[0]).toMatchObject({
      verdict: 'changed',
      first_difference: { turn_index: 2, field: 'unrecorded_action', recorded: null, replayed: `fetch_order GET ${orders.url}/orders/100001` },
    });
  });

  it('reports a recorded action whose URL or host changed, though the recording answers it', async () => {
    const calls = orders.requests.length;
    const path = await replay({ version: await draft(shop(orders.url, { path: '/v2/orders' })), conversations: [order] });
    expect(path.results[0]).toMatchObject({
      verdict: 'changed',
      first_difference: {
        turn_index: 2,
        field: 'action_request',
        recorded: `get_order GET ${orders.url}/orders/100001`,
        replayed: `get_order GET ${orders.url}/v2/orders/100001`,
      },
    });
    // Another host, one this tenant may not reach: the PUT and the version warn, the replay reports it.
    const put = await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(shop('http://127.0.0.1:1')).expect(200);
    expect(put.body.warnings).toContainEqual(
      expect.objectContaining({ code: 'unreachable_host', path: 'actions.get_order.url', message: expect.stringMatching(/^127\.0\.0\.1:1 is not reachable/) }),
    );
    const version = await api().get(`/api/v1/agents/shop/versions/${put.body.stored_version}`).set('tenant-id', 'acme').expect(200);
    expect(version.body.warnings.map((w: any) => w.path)).toEqual(['actions.get_order.url']);
    const host = await replay({ version: put.body.stored_version, conversations: [order] });
    expect(host.results[0].first_difference).toMatchObject({ field: 'action_request', replayed: 'get_order GET http://127.0.0.1:1/orders/100001' });
    expect(orders.requests.length).toBe(calls);
    // The version the conversations ran on calls a granted host: nothing to warn about.
    expect((await api().get('/api/v1/agents/shop/versions/1').set('tenant-id', 'acme').expect(200)).body.warnings).toEqual([]);
  });

  it('records the context a turn ran with when it changes, and replays each turn with its own', async () => {
    const ctx = (language: string) => ({ version: 'v1', context: { preferences: { language } } });
    const send = async (message: string, context: object, conversation_id?: string) =>
      (await api().post('/api/v1/agents/shop/converse').set('tenant-id', 'acme').send({ message, context, conversation_id }).expect(200)).body;
    const a = await send('where is my order', ctx('en'));
    await send('123456', ctx('en'), a.conversation_id);
    const entries = (
      await api().get(`/api/v1/agents/shop/conversations/${a.conversation_id}/audit-logs?type=context_changed`).set('tenant-id', 'acme').expect(200)
    ).body.data;
    // Recorded once: the second request carried the same context.
    expect(entries.map((e: any) => [e.turn_index, e.data.context.context.preferences.language])).toEqual([[0, 'en']]);
    // A greeting in the language of each turn's context: replayed right only with each turn's own.
    await api()
      .put('/api/v1/agents/lang')
      .set('tenant-id', 'acme')
      .send({
        name: 'Lang',
        capabilities: [{ name: 'greeting', examples: ['hello', 'hi', 'hallo'], phases: [{ id: 'hi', say: { en: 'Hello!', de: 'Hallo!' } }] }],
      })
      .expect(200);
    const greet = async (context: object, conversation_id?: string) =>
      (await api().post('/api/v1/agents/lang/converse').set('tenant-id', 'acme').send({ message: 'hello', context, conversation_id }).expect(200)).body;
    const b = await greet(ctx('en'));
    expect((await greet(ctx('de'), b.conversation_id)).response.message).toBe('Hallo!');
    const changed = (
      await api().get(`/api/v1/agents/lang/conversations/${b.conversation_id}/audit-logs?type=context_changed`).set('tenant-id', 'acme').expect(200)
    ).body.data;
    expect(changed.map((e: any) => [e.turn_index, e.data.context.context.preferences.language])).toEqual([
      [0, 'en'],
      [2, 'de'],
    ]);
    expect((await replay({ version: 1 }, 'lang')).summary).toMatchObject({ conversations: 1, identical: 1 });
    expect((await replay({ version: 1, conversations: [a.conversation_id] })).summary).toMatchObject({ identical: 1 });
  });

  it('filters what it replays, refuses what it cannot, and keeps tenants apart', async () => {
    const completed = await replay({ version: 1, status: 'completed' });
    expect(completed.results.map((x: any) => x.conversation_id)).toEqual([order]);
    const foreign = await replay({ version: 1, conversations: ['00000000-0000-4000-8000-000000000001'] });
    expect(foreign.results[0]).toMatchObject({ verdict: 'error', error: 'no such conversation of this agent' });
    expect((await api().post('/api/v1/agents/shop/replays').set('tenant-id', 'acme').send({ version: 99 }).expect(404)).body.code).toBe('version_not_found');
    await api().post('/api/v1/agents/shop/replays').set('tenant-id', 'acme').send({ version: 1, limit: 501 }).expect(400);
    const started = await api().post('/api/v1/agents/shop/replays').set('tenant-id', 'acme').send({ version: 1 }).expect(202);
    await api().get(`/api/v1/agents/shop/replays/${started.body.id}`).set('tenant-id', 'globex').expect(404);
  });

  it('erases what a replay recorded of a conversation when the conversation is erased, keeping the verdict', async () => {
    const c = await say('hello');
    const r = await replay({ version: await draft(shop(orders.url, { greeting: 'Good day!' })), conversations: [c.conversation_id] });
    expect(r.results[0].first_difference).toMatchObject({ recorded: 'Hello!', replayed: 'Good day!' });
    await api().delete(`/api/v1/agents/shop/conversations/${c.conversation_id}`).set('tenant-id', 'acme').expect(204);
    const after = (await api().get(`/api/v1/agents/shop/replays/${r.id}`).set('tenant-id', 'acme').expect(200)).body;
    expect(after.results[0]).toEqual({
      conversation_id: c.conversation_id,
      verdict: 'changed',
      first_difference: {
        turn_index: 0,
        message: '',
        field: 'reply',
        recorded: null,
        replayed: null,
        changes: [{ field: 'reply', recorded: null, replayed: null }],
      },
    });
    const row = await f.db.knex('replays').where({ id: r.id }).first();
    expect(row.results).not.toContain('Hello!');
    expect(row.results).not.toContain('Good day!');
    expect(row.results).not.toMatch(/"message":"hello"/);
  });

  it('lists the replays kept, newest first and without their results, a page at a time', async () => {
    const first = await replay({ version: 1, status: 'completed' });
    const second = await replay({ version: 1, limit: 1 });
    const list = async (query = '', tenant = 'acme') => api().get(`/api/v1/agents/shop/replays${query}`).set('tenant-id', tenant);
    const listed = await list('?limit=50');
    expect(listed.status).toBe(200);
    const all = listed.body;
    expect(all.data.slice(0, 2).map((r: any) => r.id)).toEqual([second.id, first.id]);
    expect(all.data[1]).toMatchObject({ version: 1, status: 'done', summary: { conversations: 1, identical: 1 }, progress: { done: 1, total: 1 } });
    expect(all.data[1]).not.toHaveProperty('results');
    const page1 = (await list('?limit=1')).body;
    expect(page1.data.map((r: any) => r.id)).toEqual([second.id]);
    const page2 = (await list(`?limit=1&cursor=${page1.next_cursor}`)).body;
    expect(page2.data.map((r: any) => r.id)).toEqual([first.id]);
    expect((await list('?cursor=bm9wZQ')).status).toBe(400);
    expect((await list('?limit=51')).status).toBe(400);
    expect((await list('', 'globex')).status).toBe(404);
  });
});
