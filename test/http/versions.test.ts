// Versions: drafts (PUT ?activate=false), listing, reading, activation and rollback, with running
// conversations staying on their version; on every database, through supertest and the typed client.
import request from 'supertest';
import { expect, it } from 'vitest';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const agent = (greeting: string) => ({
  name: 'Shop',
  capabilities: [
    {
      name: 'order',
      examples: ['i want to order', 'place an order', 'buy something', 'order a pizza'],
      phases: [
        { id: 'ask', say: `${greeting} What size?`, collect: { slot: 'size', type: 'choice', choices: ['small', 'large'] } },
        { id: 'done', say: `${greeting} A {{ slots.size }} one it is.`, end: 'completed' },
      ],
    },
  ],
});

eachDatabase('agent versions on $name', (database) => {
  const f = appFixture(database, { agents: { shop: agent('v1:') } });
  const client = clientFixture(f);
  const api = () => request(f.app.app);
  const say = async (message: string, conversation_id?: string) =>
    (await api().post('/api/v1/agents/shop/converse').set('tenant-id', 'acme').send({ message, conversation_id }).expect(200)).body;

  it('stores a draft without making it current, and lists and reads versions', async () => {
    const draft = await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(agent('v2:')).expect(200);
    expect(draft.body).toMatchObject({ version: 1, stored_version: 2 });
    expect(draft.body.definition.capabilities[0].phases[0].say).toBe('v1: What size?');
    // The same draft again is no new version.
    const again = await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(agent('v2:')).expect(200);
    expect(again.body.stored_version).toBe(2);
    const list = await client.sb.api.listVersions({ params: { slug: 'shop' }, query: {} });
    expect(list.status).toBe(200);
    if (list.status !== 200) return;
    expect(list.body.data.map((v) => [v.version, v.current, v.state, v.note, v.capabilities])).toEqual([
      [2, false, 'draft', 'PUT', ['order']],
      [1, true, 'current', 'PUT', ['order']],
    ]);
    const v2 = await client.sb.api.getVersion({ params: { slug: 'shop', version: 2 } });
    expect(v2.status === 200 && v2.body.definition.capabilities[0].phases[0].say).toBe('v2: What size?');
    expect((await say('i want to order')).response.message).toBe('v1: What size?');
  });

  it('activates a version for new conversations while running ones stay on theirs, and rolls back', async () => {
    const running = await say('i want to order');
    expect(running.response.message).toBe('v1: What size?');
    const activated = await client.sb.api.activateVersion({ params: { slug: 'shop', version: 2 } });
    expect(activated.status === 200 && activated.body.version).toBe(2);
    expect((await say('i want to order')).response.message).toBe('v2: What size?');
    // The conversation begun on version 1 finishes on it.
    expect((await say('large', running.conversation_id)).response.message).toBe('v1: A large one it is.');
    const detail = await api().get(`/api/v1/agents/shop/conversations/${running.conversation_id}`).set('tenant-id', 'acme').expect(200);
    expect(detail.body.agent_version).toBe(1);
    // Roll back.
    await api().post('/api/v1/agents/shop/versions/1/activate').set('tenant-id', 'acme').expect(200);
    expect((await say('i want to order')).response.message).toBe('v1: What size?');
    expect((await api().get('/api/v1/agents/shop').set('tenant-id', 'acme').expect(200)).body.version).toBe(1);
    // Putting version 2's definition again makes it current without a third version.
    const back = await api().put('/api/v1/agents/shop').set('tenant-id', 'acme').send(agent('v2:')).expect(200);
    expect(back.body).toMatchObject({ version: 2, stored_version: 2 });
  });

  it('pages versions newest first, and answers 404 for a version that does not exist', async () => {
    await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(agent('v3:')).expect(200);
    const first = await api().get('/api/v1/agents/shop/versions?limit=2').set('tenant-id', 'acme').expect(200);
    expect(first.body.data.map((v: any) => v.version)).toEqual([3, 2]);
    const second = await api().get(`/api/v1/agents/shop/versions?limit=2&cursor=${first.body.next_cursor}`).set('tenant-id', 'acme').expect(200);
    expect(second.body).toMatchObject({ data: [{ version: 1 }], next_cursor: null });
    const missing = await api().post('/api/v1/agents/shop/versions/99/activate').set('tenant-id', 'acme').expect(404);
    expect(missing.body.code).toBe('version_not_found');
    await api().get('/api/v1/agents/shop/versions/99').set('tenant-id', 'acme').expect(404);
    await api().get('/api/v1/agents/shop/versions/1').set('tenant-id', 'globex').expect(404);
    const bad = await api().put('/api/v1/agents/shop?activate=maybe').set('tenant-id', 'acme').send(agent('v4:')).expect(400);
    expect(bad.body.errors[0].path).toBe('query.activate');
  });

  it('says of each version its state and what made it', async () => {
    const states = async () =>
      Object.fromEntries(
        ((await api().get('/api/v1/agents/shop/versions').set('tenant-id', 'acme').expect(200)).body.data as { version: number; state: string }[]).map((v) => [
          v.version,
          v.state,
        ]),
      );
    // From the tests above: 3 a draft, 2 current, 1 released before (and rolled back to).
    expect(await states()).toEqual({ 3: 'draft', 2: 'current', 1: 'released_before' });
    await api().put('/api/v1/agents/shop?activate=false&note=from%20the%20console').set('tenant-id', 'acme').send(agent('v4:')).expect(200);
    await api().put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(agent('v5:')).expect(200);
    // Only the newest unreleased version is the draft; those it superseded were never released.
    expect(await states()).toEqual({ 5: 'draft', 4: 'never_released', 3: 'never_released', 2: 'current', 1: 'released_before' });
    await api().put('/api/v1/agents/shop/split').set('tenant-id', 'acme').send({ version: 4, percent: 10 }).expect(200);
    expect(await states()).toMatchObject({ 5: 'draft', 4: 'split_candidate' });
    await api().delete('/api/v1/agents/shop/split').set('tenant-id', 'acme').expect(200);
    const v4 = await api().get('/api/v1/agents/shop/versions/4').set('tenant-id', 'acme').expect(200);
    expect(v4.body).toMatchObject({ version: 4, state: 'never_released', note: 'from the console' });
    const tooLong = await api()
      .put(`/api/v1/agents/shop?note=${'x'.repeat(301)}`)
      .set('tenant-id', 'acme')
      .send(agent('v6:'))
      .expect(400);
    expect(tooLong.body.errors[0].path).toBe('query.note');
    expect(Object.keys(await states())).toHaveLength(5);
  });

  it('starts a conversation on a chosen version, a draft included, which it keeps to its end', async () => {
    const converse = (body: object) => api().post('/api/v1/agents/shop/converse').set('tenant-id', 'acme').send(body);
    const started = await converse({ message: 'i want to order', version: 3 }).expect(200);
    expect(started.body.response.message).toBe('v3: What size?');
    const id = started.body.conversation_id;
    expect((await converse({ message: 'small', conversation_id: id }).expect(200)).body.response.message).toBe('v3: A small one it is.');
    expect((await api().get(`/api/v1/agents/shop/conversations/${id}`).set('tenant-id', 'acme').expect(200)).body.agent_version).toBe(3);
    // The current version is unchanged, and a plain start uses it.
    expect((await say('i want to order')).response.message).toBe('v2: What size?');

    const before = (await api().get('/api/v1/agents/shop/conversations?limit=100').set('tenant-id', 'acme').expect(200)).body.data.length;
    const running = await converse({ message: 'large', conversation_id: id, version: 1 }).expect(400);
    expect(running.body.errors[0].path).toBe('version');
    expect((await converse({ message: 'i want to order', version: 99 }).expect(404)).body.code).toBe('version_not_found');
    expect((await converse({ message: 'i want to order', version: 0 }).expect(400)).body.errors[0].path).toBe('version');
    await api().post('/api/v1/agents/shop/converse').set('tenant-id', 'globex').send({ message: 'i want to order', version: 3 }).expect(404);
    const after = (await api().get('/api/v1/agents/shop/conversations?limit=100').set('tenant-id', 'acme').expect(200)).body.data.length;
    expect(after).toBe(before);
  });
});

eachDatabase('test conversations on the server, on $name', (database) => {
  const f = appFixture(database, { agents: { shop: agent('v1:') } });
  const post = (body: object, slug = 'shop', tenant = 'acme') => request(f.app.app).post(`/api/v1/agents/${slug}/tests`).set('tenant-id', tenant).send(body);
  const order = (greeting: string) => ({
    name: 'orders a large one',
    steps: [
      { user: 'i want to order', expect: { capability: 'order', phase: 'ask', reply: `${greeting} What size?` } },
      { user: 'large', expect: { status: 'completed', slots: { size: 'large' }, reply: '/A LARGE ONE/i' } },
    ],
  });

  it('runs tests against the current version or a draft, stores nothing, and says what failed', async () => {
    await request(f.app.app).put('/api/v1/agents/shop?activate=false').set('tenant-id', 'acme').send(agent('v2:')).expect(200);
    const current = await post({ tests: [order('v1:'), order('v2:')] }).expect(200);
    expect(current.body).toMatchObject({ version: 1, passed: 1, failed: 1 });
    expect(current.body.results[1].steps[0].failures).toEqual(['reply: expected v2: What size?, got "v1: What size?"']);
    expect(current.body.results[1].steps[0].actual).toMatchObject({ capability: 'order', phase: 'ask', awaiting_input: true, status: 'active' });
    const draft = await post({ version: 2, tests: [order('v2:')] }).expect(200);
    expect(draft.body).toMatchObject({ version: 2, passed: 1, failed: 0 });
    const list = await request(f.app.app).get('/api/v1/agents/shop/conversations').set('tenant-id', 'acme').expect(200);
    expect(list.body.data).toEqual([]);
  });

  it('refuses what it cannot run, and takes no pattern that could backtrack', async () => {
    expect((await post({ version: 9, tests: [order('v1:')] }).expect(404)).body.code).toBe('version_not_found');
    await post({ tests: [order('v1:')] }, 'shop', 'globex').expect(404);
    expect((await post({ tests: [{ name: 'x', steps: [] }] }).expect(400)).body.errors[0].path).toBe('tests[0].steps');
    const slow = await post({ tests: [{ name: 'redos', steps: [{ user: 'a'.repeat(3000) + '!', expect: { reply: '/^(a+)+$/' } }] }] }).expect(200);
    expect(slow.body.failed).toBe(1);
    const invalid = await post({ tests: [{ name: 'bad', steps: [{ user: 'hi', expect: { reply: '/(?<=a)b/' } }] }] }).expect(200);
    expect(invalid.body.results[0].steps[0].failures[0]).toMatch(/^reply: \/\(\?<=a\)b\/ is not a valid pattern/);
  });
});
