// What new users tripped over: each defect with the test that would have caught it.
import request from 'supertest';
import { expect, it } from 'vitest';
import { supportAgent } from '../helpers/agents.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { waitUntil } from '../helpers/wait.js';

const T = { 'tenant-id': 'acme' };

eachDatabase('first-run defects on $name', (database) => {
  const f = appFixture(database, { agents: { support: supportAgent('http://127.0.0.1:9') } });
  const say = (message: string, id?: string) =>
    request(f.app.app)
      .post('/api/v1/agents/support/converse')
      .set(T)
      .send(id ? { message, conversation_id: id } : { message });
  const get = (id: string) =>
    request(f.app.app)
      .get(`/api/v1/agents/support/conversations/${id}`)
      .set(T)
      .then((r) => r.body);

  it('keeps an escalated conversation escalated, with its outcome, phase and slots, when the user writes again', async () => {
    const id = (await say('where is my order')).body.conversation_id;
    for (const m of ['no', 'still no', 'nope']) await say(m, id).expect(200);
    const escalated = await get(id);
    expect(escalated).toMatchObject({ status: 'escalated', outcome: 'escalated' });
    const r = await say('hello? anyone?', id).expect(200);
    expect(r.body.state.status).toBe('escalated');
    const after = await get(id);
    expect(after).toMatchObject({
      status: 'escalated',
      outcome: 'escalated',
      phase: escalated.phase,
      capability: escalated.capability,
      slots: escalated.slots,
    });
    expect(after.turns).toHaveLength(escalated.turns.length + 2);
  });
});

eachDatabase('agent definitions as YAML on $name', (database) => {
  const f = appFixture(database);
  const putYaml = (slug: string, text: string, type = 'application/yaml') =>
    request(f.app.app)
      .put(`/api/v1/agents/${slug}`)
      .set({ ...T, 'content-type': type })
      .send(text);

  it('accepts application/yaml with the same validation, and answers the same agent as JSON would', async () => {
    const text = 'name: From YAML\ncapabilities:\n  - name: hi\n    examples: [hello]\n    phases:\n      - id: greet\n        say: "Hello!"\n';
    const r = await putYaml('yaml-bot', text).expect(200);
    expect(r.body).toMatchObject({ slug: 'yaml-bot', version: 1, name: 'From YAML' });
    const again = await request(f.app.app).put('/api/v1/agents/yaml-bot').set(T).send(r.body.definition).expect(200);
    expect(again.body.version).toBe(1);
    await putYaml('yaml-bot-2', text, 'text/yaml').expect(200);
  });

  it('says where a problem is: YAML line and column for syntax and for the definition', async () => {
    const syntax = await putYaml('bad-yaml', 'name: X\ncapabilities:\n  - name: a\n   phases: [\n');
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0]).toMatchObject({ line: expect.any(Number), column: expect.any(Number) });
    const invalid = await putYaml('bad-def', 'name: X\ncapabilities:\n  - name: a\n    phases:\n      - id: p\n        next: nowhere\n');
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors).toContainEqual({ path: 'capabilities.a.phases.p.next', message: 'unknown phase "nowhere"', line: 6, column: 15 });
    const schema = await putYaml('bad-schema', 'name: X\ncapabilities:\n  - name: Not An Identifier\n    phases: [{ id: p }]\n');
    expect(schema.body.errors[0]).toMatchObject({ path: 'capabilities[0].name', line: 3, column: 11 });
  });

  it('names every problem of a definition in one answer, and what each field expected', async () => {
    // Unknown keys, a wrongly typed field and broken references: before, the first answer named
    // the keys and the type ("Invalid input"), an option's unknown key not at all, and only a
    // second PUT named the references.
    const text = [
      'name: X',
      'colour: blue',
      'capabilities:',
      '  - name: a',
      '    examples: [hello there]',
      '    phases:',
      '      - id: p',
      '        say: 42',
      '        next: nowhere',
      '      - id: q',
      '        say: fine',
      "        options: [{ label: 'yes', value: y, next: p }]",
      '        on_error: missing',
      '',
    ].join('\n');
    const r = await putYaml('three-problems', text);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_error');
    expect(r.body.errors).toEqual([
      { path: 'capabilities[0].phases[0].say', message: 'expected text, or a map of language → text; got a number (42)', line: 8, column: 14 },
      { path: 'capabilities[0].phases[1].options[0].next', message: 'unknown key "next"', line: 12, column: 51 },
      { path: 'colour', message: 'unknown key "colour"', line: 2, column: 9 },
      { path: 'capabilities.a.phases.p.next', message: 'unknown phase "nowhere"', line: 9, column: 15 },
      { path: 'capabilities.a.phases.q.on_error', message: 'on_error needs a call or generate in the same phase', line: 13, column: 19 },
    ]);
    // Nothing was stored.
    await request(f.app.app).get('/api/v1/agents/three-problems').set(T).expect(404);
    // JSON says the same, without positions; a query problem comes with them.
    const json = await request(f.app.app)
      .put('/api/v1/agents/three-problems?activate=perhaps')
      .set(T)
      .send({ name: 'X', capabilities: [{ name: 'a', examples: ['hello there'], phases: [{ id: 'p', say: 'hi', next: 'nowhere', end: 7 }] }] });
    expect(json.status).toBe(400);
    expect(json.body.errors.map((e: { path: string }) => e.path)).toEqual(['query.activate', 'capabilities[0].phases[0].end', 'capabilities.a.phases.p.next']);
    expect(json.body.errors[1].message).toBe('expected one of "completed", "escalated", "paused"; got a number (7)');
  });

  it('refuses alias bombs and deep nesting, and other types still get 415', async () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      ...Array.from(
        { length: 9 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
      ),
    ].join('\n');
    expect((await putYaml('bomb', bomb)).status).toBe(400);
    expect((await putYaml('deep', `name: ${'['.repeat(100)}${']'.repeat(100)}`)).status).toBe(400);
    expect(
      (
        await request(f.app.app)
          .put('/api/v1/agents/xml')
          .set({ ...T, 'content-type': 'application/xml' })
          .send('<a/>')
      ).status,
    ).toBe(415);
    expect(
      (
        await request(f.app.app)
          .post('/api/v1/agents/x/converse')
          .set({ ...T, 'content-type': 'application/yaml' })
          .send('message: hi')
      ).status,
    ).toBe(415);
  });
});

eachDatabase('API keys name their tenant on $name', (database) => {
  it('takes the tenant from the key when tenant-id is left out, and still refuses another tenant', async () => {
    const { db, drop } = await database.create();
    const { testApp } = await import('../helpers/servers.js');
    const app = testApp(db, { authMode: 'api_key' });
    try {
      const key = (await app.keys.create('acme', ['admin', 'read', 'converse'])).key;
      const auth = { authorization: `Bearer ${key}` };
      await request(app.app)
        .put('/api/v1/agents/echo')
        .set(auth)
        .send({ name: 'E', capabilities: [{ name: 'e', examples: ['hi'], phases: [{ id: 'p', say: 'hi' }] }] })
        .expect(200);
      expect((await request(app.app).get('/api/v1/agents').set(auth)).body.data.map((a: { slug: string }) => a.slug)).toEqual(['echo']);
      expect(
        (
          await request(app.app)
            .get('/api/v1/agents')
            .set({ ...auth, 'tenant-id': 'other' })
        ).status,
      ).toBe(403);
      const none = await request(app.app).get('/api/v1/agents');
      expect(none.status).toBe(401);
      expect(none.body.code).toBe('unauthorized');
      expect((await request(app.app).get('/api/v1/agents').set({ authorization: 'Bearer sbk_nope' })).status).toBe(401);
    } finally {
      await app.close();
      await drop();
    }
  });
});

eachDatabase('the typed client event stream on $name', (database) => {
  it("iterates a conversation's events, resumes after Last-Event-ID, and throws the problem of a refused stream", async () => {
    const { db, drop } = await database.create();
    const { testApp } = await import('../helpers/servers.js');
    const { createSwitchboardClient, SwitchboardError } = await import('../../client/src/index.js');
    const app = testApp(db);
    await app.startBackground();
    const server = app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const controller = new AbortController();
    try {
      const sb = createSwitchboardClient({ baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`, tenantId: 'acme' });
      expect('streamEvents' in sb.api).toBe(false);
      await sb.api.putAgent({
        params: { slug: 'echo' },
        body: {
          name: 'E',
          capabilities: [
            {
              name: 'e',
              examples: ['echo this'],
              phases: [
                { id: 'l', say: 'Go.', collect: { slot: 's' } },
                { id: 'r', say: 'You said: {{ slots.s }}' },
              ],
            },
          ],
        },
      });
      const first = await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'echo this' } });
      if (first.status !== 200) throw new Error('converse failed');
      const id = first.body.conversation_id;
      const stream = sb.events('echo', id, { signal: controller.signal });
      const next = stream.next();
      // Once the stream is open on the server, the next commit reaches it.
      await waitUntil('the stream to open', () => app.streams.size > 0);
      await sb.api.converse({ params: { slug: 'echo' }, body: { message: 'hello', conversation_id: id } });
      const e1 = (await next).value!;
      expect(e1).toMatchObject({ type: 'turn.created', data: { role: 'user', message: 'hello' } });
      const e2 = (await stream.next()).value!;
      expect(e2).toMatchObject({ type: 'turn.created', data: { role: 'agent' } });
      await stream.return(undefined);
      // From the first event on: everything after it, at once.
      const resumed = sb.events('echo', id, { lastEventId: e1.id, signal: controller.signal });
      expect((await resumed.next()).value).toEqual(e2);
      await resumed.return(undefined);
      await expect(sb.events('echo', '00000000-0000-4000-8000-000000000000').next()).rejects.toBeInstanceOf(SwitchboardError);
    } finally {
      controller.abort();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await app.close();
      await drop();
    }
  });
});
