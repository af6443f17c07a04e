// The web chat widget's routes as a hostile page or client meets them: publishable keys bound to
// agents and origins, exact CORS, conversations bound to the visitor who started them, identity
// verification, the widget's limits, and what operators see of the channel. On both databases.
import { createHmac } from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { identityVerified } from '../../server/src/service/widget.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { listen, testConfig } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

warnIfPostgresSkipped();

const SHOP = 'https://shop.example.com';
const IDENTITY = 'identity-secret-of-acme-0123456789';
const T = { 'tenant-id': 'acme' };

const helpDesk: AgentDefinitionInput = {
  name: 'Help desk',
  widget: { title: 'Acme help', greeting: { en: 'Hi! How can we help?', es: '¡Hola! ¿En qué podemos ayudar?' }, accent: '#0a7d4f', languages: ['en', 'es'] },
  capabilities: [
    {
      name: 'billing',
      examples: ['a question about my bill', 'billing problem', 'my invoice is wrong'],
      phases: [
        { id: 'which', say: 'Which invoice?', options: [{ label: 'The last one', value: 'last' }], collect: { slot: 'invoice', type: 'text' }, next: 'done' },
        { id: 'done', say: 'Invoice {{ slots.invoice }} is on its way.', end: 'completed' },
      ],
    },
    {
      name: 'human',
      examples: ['talk to a human', 'a real person please', 'operator'],
      phases: [{ id: 'handoff', say: 'A person will take over.', end: 'escalated' }],
    },
  ],
};

eachDatabase('the web chat widget ($name)', (database) => {
  const f = appFixture(database, {
    agents: { 'help-desk': helpDesk, other: { ...helpDesk, name: 'Other' } },
    config: () => ({
      secrets: { WIDGET_IDENTITY_SECRET: { value: IDENTITY, tenants: ['acme'] } },
      widget: {
        ...testConfig().widget,
        keyPerMinute: 1000,
        visitorPerMinute: 1000,
        addressPerMinute: 1000,
        newVisitorsPerAddressPerHour: 1000,
        newConversationsPerHour: 3,
        streamsPerVisitor: 1,
        maxMessageChars: 200,
      },
    }),
  });
  let key = '';
  let keyId = '';
  beforeAll(async () => {
    const made = await request(f.app.app)
      .post('/api/v1/keys')
      .set(T)
      .send({ name: 'shop', widget: { agents: ['help-desk'], origins: ['https://Shop.Example.com'] } });
    expect(made.status).toBe(201);
    ({ key, id: keyId } = made.body as { key: string; id: string });
    for (let n = 1; n <= 12; n++) {
      const minted = await request(f.app.app).post(`/widget/v1/agents/help-desk/visitor?key=${key}`).set('origin', SHOP).send({});
      expect(minted.status).toBe(200);
      tokens.set(n, (minted.body as { visitor_token: string }).visitor_token);
    }
  });
  /** Visitor n's token, as the service signed it for this key. */
  const tokens = new Map<number, string>();
  const visitor = (n: number) => tokens.get(n)!;

  const widget = (method: 'get' | 'post' | 'options', path: string, opts: { origin?: string | null; visitor?: number; k?: string } = {}) => {
    const r = request(f.app.app)[method](`/widget/v1/agents/${path}${path.includes('?') ? '&' : '?'}key=${opts.k ?? key}`);
    if (opts.origin !== null) r.set('origin', opts.origin ?? SHOP);
    if (opts.visitor !== undefined) r.set('x-visitor-token', visitor(opts.visitor));
    return r;
  };
  const say = (message: string, v: number, conversationId?: string, extra: object = {}) =>
    widget('post', 'help-desk/converse', { visitor: v }).send({ message, ...(conversationId ? { conversation_id: conversationId } : {}), ...extra });

  it('makes a publishable key bound to agents and origins, listed with the key itself, and refuses muddled requests', async () => {
    expect(key).toMatch(/^pk_[0-9a-f]{32}$/);
    const listed = await request(f.app.app).get('/api/v1/keys').set(T);
    expect(listed.body.data.find((k: { id: string }) => k.id === keyId)).toMatchObject({ scopes: [], widget: { agents: ['help-desk'], origins: [SHOP], key } });
    for (const body of [
      { widget: { agents: ['help-desk'], origins: ['https://shop.example.com/path'] } },
      { widget: { agents: ['help-desk'], origins: ['javascript:alert(1)'] } },
      { scopes: ['read'], widget: { agents: ['help-desk'], origins: [SHOP] } },
      {},
    ]) {
      const r = await request(f.app.app).post('/api/v1/keys').set(T).send(body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_error');
    }
  });

  it('answers CORS exactly: a preflight of an allowed origin is granted, any other gets no grant', async () => {
    const ok = await widget('options', 'help-desk/converse')
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type, x-visitor-token');
    expect(ok.status).toBe(204);
    expect(ok.headers['access-control-allow-origin']).toBe(SHOP);
    expect(ok.headers['access-control-allow-headers']).toContain('x-visitor-token');
    const other = await widget('options', 'help-desk/converse', { origin: 'https://evil.example' }).set('access-control-request-method', 'POST');
    expect(other.status).toBe(403);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const noKey = await widget('options', 'help-desk/converse', { k: 'pk_00000000000000000000000000000000' }).set('access-control-request-method', 'POST');
    expect(noKey.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('gives the agent’s presentation to an allowed page, and a readable refusal to any other', async () => {
    const ok = await widget('get', 'help-desk?language=es');
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(SHOP);
    expect(ok.body).toEqual({ agent: 'help-desk', title: 'Acme help', greeting: '¡Hola! ¿En qué podemos ayudar?', accent: '#0a7d4f', languages: ['en', 'es'] });
    const evil = await widget('get', 'help-desk', { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(evil.body.detail).toMatch(/does not allow pages of https:\/\/evil\.example/);
    // A client that sends no Origin (curl, a server) is no page of an allowed origin.
    expect((await widget('get', 'help-desk', { origin: null })).status).toBe(403);
    expect((await widget('get', 'other')).status).toBe(403);
    expect((await widget('get', 'help-desk', { k: 'pk_00000000000000000000000000000000' })).status).toBe(404);
    expect((await widget('get', 'help-desk', { k: 'sbk_not_a_publishable_key' })).status).toBe(400);
  });

  it('holds a conversation for its visitor only; the channel, page and language are recorded for operators', async () => {
    const first = await say('a question about my bill', 1, undefined, { language: 'es', page_url: `${SHOP}/account?tab=billing` });
    expect(first.status).toBe(200);
    expect(first.headers['access-control-allow-origin']).toBe(SHOP);
    expect(first.body.response).toMatchObject({ message: 'Which invoice?', options: [{ label: 'The last one', value: 'last' }] });
    const id = first.body.conversation_id;
    // Another visitor, even knowing the id, cannot continue, read or follow it.
    expect((await say('last', 2, id)).status).toBe(404);
    expect((await widget('get', `help-desk/conversations/${id}`, { visitor: 2 })).status).toBe(404);
    expect((await widget('get', `help-desk/conversations/${id}/events`, { visitor: 2 })).status).toBe(404);
    expect((await widget('get', `help-desk/conversations/${id}`)).status).toBe(400); // no visitor token at all

    const mine = await widget('get', `help-desk/conversations/${id}`, { visitor: 1 });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ conversation_id: id, status: 'active', awaiting_input: true });
    expect(mine.body.turns.map((t: { index: number; role: string }) => `${t.index}:${t.role}`)).toEqual(['0:user', '1:agent']);

    const detail = await request(f.app.app).get(`/api/v1/agents/help-desk/conversations/${id}`).set(T);
    expect(detail.body.channel).toEqual({ kind: 'web', origin: SHOP, page_url: `${SHOP}/account?tab=billing` });
    expect(detail.body.user_id).toMatch(/^anonymous:[0-9a-f]{32}$/);
    expect(detail.body.context.context.preferences).toEqual({ language: 'es' });
    const web = await request(f.app.app).get('/api/v1/agents/help-desk/conversations?channel=web').set(T);
    expect(web.body.data.map((c: { id: string }) => c.id)).toContain(id);
    const api = await request(f.app.app).post('/api/v1/agents/help-desk/converse').set(T).send({ message: 'billing problem' });
    const apiList = await request(f.app.app).get('/api/v1/agents/help-desk/conversations?channel=api').set(T);
    expect(apiList.body.data.map((c: { id: string }) => c.id)).toEqual([api.body.conversation_id]);
    // A conversation of the API is no visitor's, whatever the widget claims.
    expect((await say('last', 1, api.body.conversation_id)).status).toBe(404);

    const done = await say('last', 1, id);
    expect(done.body).toMatchObject({ response: { message: 'Invoice last is on its way.' }, state: { status: 'completed' } });
    expect((await say('hello again', 1, id)).status).toBe(409);
  });

  it('takes a signed user id only with its valid signature, and never lets the anonymous claim it', async () => {
    const sign = (id: string, secret = IDENTITY) => createHmac('sha256', secret).update(id).digest('hex');
    const as = (userId: string, hash?: string) => {
      const r = say('talk to a human', 3).set('x-user-id', userId);
      return hash ? r.set('x-user-hash', hash) : r;
    };
    expect((await as('u-42')).status).toBe(403);
    expect((await as('u-42', sign('u-43'))).status).toBe(403);
    expect((await as('u-42', sign('u-42', 'another-secret'))).status).toBe(403);
    expect((await say('talk to a human', 3).set('x-user-hash', sign('u-42'))).status).toBe(403);
    // The visitor token's request checks the hash too: the widget asks for it on load.
    const mint = (hash: string) => widget('post', 'help-desk/visitor').set('x-user-id', 'u-42').set('x-user-hash', hash).send({});
    const refused = await mint(sign('u-43'));
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toBe('x-user-hash is not the signature of x-user-id');
    expect((await mint(sign('u-42'))).status).toBe(200);
    const ok = await as('u-42', sign('u-42'));
    expect(ok.status).toBe(200);
    const c = await request(f.app.app).get(`/api/v1/agents/help-desk/conversations/${ok.body.conversation_id}`).set(T);
    expect(c.body.user_id).toBe('u-42');
    // The same browser without the signature is another visitor: the user's conversation is not its.
    expect((await widget('get', `help-desk/conversations/${ok.body.conversation_id}`, { visitor: 3 })).status).toBe(404);
    // The same user's conversation of the API is no web conversation: the widget can neither read nor continue it.
    const viaApi = await request(f.app.app)
      .post('/api/v1/agents/help-desk/converse')
      .set(T)
      .send({ message: 'billing problem', context: { version: 'v1', context: { identity: { user_id: 'u-42' } } } });
    expect(viaApi.status).toBe(200);
    expect(
      (await widget('get', `help-desk/conversations/${viaApi.body.conversation_id}`, { visitor: 3 }).set('x-user-id', 'u-42').set('x-user-hash', sign('u-42')))
        .status,
    ).toBe(404);
    const continued = await say('last', 3, viaApi.body.conversation_id).set('x-user-id', 'u-42').set('x-user-hash', sign('u-42'));
    expect(continued.status).toBe(404);
    const apiTurns = await request(f.app.app).get(`/api/v1/agents/help-desk/conversations/${viaApi.body.conversation_id}/history`).set(T);
    expect(apiTurns.body.turns).toHaveLength(2);
    expect(identityVerified(IDENTITY, 'u-42', sign('u-42'))).toBe(true);
    expect(identityVerified(undefined, 'u-42', sign('u-42'))).toBe(false);
    expect(identityVerified(IDENTITY, 'u-42', sign('u-42').toUpperCase())).toBe(false);
    expect(identityVerified(IDENTITY, 'u-42', undefined)).toBe(false);
  });

  it("streams a person's reply to the visitor, and bounds the visitor's open streams: the newest ends the oldest", async () => {
    const start = await say('talk to a human', 4);
    expect(start.body.state.status).toBe('escalated');
    const id = start.body.conversation_id;
    // On PostgreSQL, events reach a stream through LISTEN, which the app's background work starts.
    await f.app.startBackground();
    const server = await listen(f.app);
    let stream: Awaited<ReturnType<typeof openSse>> | undefined;
    try {
      const headers = { origin: SHOP, 'x-visitor-token': visitor(4), accept: 'text/event-stream' };
      const first = await openSse(`${server.url}/widget/v1/agents/help-desk/conversations/${id}/events?key=${key}`, headers);
      expect(first.status).toBe(200);
      // A second stream of the same visitor (a page reloaded before the server saw the old one go) ends the first.
      stream = await openSse(`${server.url}/widget/v1/agents/help-desk/conversations/${id}/events?key=${key}`, headers);
      expect(stream.status).toBe(200);
      expect(await first.next()).toEqual({}); // its `retry:` line
      expect(await first.next()).toBeNull();
      await request(f.app.app)
        .post(`/api/v1/agents/help-desk/conversations/${id}/messages`)
        .set(T)
        .send({ message: 'Hi, Sam here.', author: 'sam' })
        .expect(201);
      const [turn] = await stream.take(1);
      expect(turn.event).toBe('turn.created');
      expect(JSON.parse(turn.data!)).toMatchObject({ index: 2, role: 'agent', message: 'Hi, Sam here.', author: 'sam' });
      const history = await widget('get', `help-desk/conversations/${id}`, { visitor: 4 });
      expect(history.body.turns.at(-1)).toMatchObject({ role: 'agent', message: 'Hi, Sam here.', author: 'sam' });
    } finally {
      stream?.close();
      await server.close();
    }
  });

  it('bounds what one visitor may start and say, with 429 and retry-after', async () => {
    const long = await say('x'.repeat(201), 5);
    expect(long.status).toBe(400);
    for (let i = 0; i < 3; i++) expect((await say('billing problem', 5)).status).toBe(200);
    const fourth = await say('billing problem', 5);
    expect(fourth.status).toBe(429);
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(60);
    expect(fourth.body.detail).toMatch(/new conversations for this visitor/);
    // Another visitor is not held back by the first.
    expect((await say('billing problem', 6)).status).toBe(200);
  });

  it('counts conversations per channel in analytics, and audits where a widget conversation came from', async () => {
    const channels = async () => {
      const r = await request(f.app.app).get('/api/v1/agents/help-desk/analytics?interval=hour').set(T);
      expect(r.status).toBe(200);
      return Object.fromEntries((r.body.channels as { channel: string }[]).map(({ channel, ...counts }) => [channel, counts])) as Record<
        string,
        Record<string, number>
      >;
    };
    const before = await channels();
    const web = await say('billing problem', 9, undefined, { page_url: `${SHOP}/help` });
    expect((await say('last', 9, web.body.conversation_id)).body.state.status).toBe('completed');
    const api = await request(f.app.app).post('/api/v1/agents/help-desk/converse').set(T).send({ message: 'talk to a human' });
    expect(api.body.state.status).toBe('escalated');
    const after = await channels();
    const delta = (ch: string, k: string) => after[ch][k] - before[ch][k];
    expect([delta('web', 'started'), delta('web', 'completed'), delta('web', 'escalated')]).toEqual([1, 1, 0]);
    expect([delta('api', 'started'), delta('api', 'completed'), delta('api', 'escalated')]).toEqual([1, 0, 1]);

    const audit = await request(f.app.app).get(`/api/v1/agents/help-desk/conversations/${web.body.conversation_id}/audit-logs?type=context_changed`).set(T);
    expect(audit.body.data[0].data.channel).toEqual({ kind: 'web', origin: SHOP, page_url: `${SHOP}/help` });
    expect(audit.body.data.slice(1).every((e: { data: object }) => !('channel' in e.data))).toBe(true);
  });

  it('forgets the page a conversation came from when it is erased, and the visitor no longer finds it', async () => {
    const id = (await say('billing problem', 8, undefined, { page_url: `${SHOP}/account?email=ann@example.com` })).body.conversation_id;
    await request(f.app.app).delete(`/api/v1/agents/help-desk/conversations/${id}`).set(T).expect(204);
    const detail = await request(f.app.app).get(`/api/v1/agents/help-desk/conversations/${id}`).set(T);
    expect(detail.body.channel).toEqual({ kind: 'web', origin: SHOP, page_url: null });
    expect((await widget('get', `help-desk/conversations/${id}`, { visitor: 8 })).status).toBe(404);
  });

  it('ends at revocation: the key starts nothing more', async () => {
    await request(f.app.app).delete(`/api/v1/keys/${keyId}`).set(T).expect(204);
    expect((await widget('get', 'help-desk')).status).toBe(404);
    expect((await say('billing problem', 7)).status).toBe(404);
  });
});

describe('publishable keys and the API (AUTH_MODE=api_key)', () => {
  eachDatabase('($name)', (database) => {
    const f = appFixture(database, { config: { authMode: 'api_key' } });
    let admin = '';
    const adminKey = async () => {
      if (!admin) {
        const { KeyService } = await import('../../server/src/service/keys.js');
        const { systemClock } = await import('../../server/src/lib/clock.js');
        admin = (await new KeyService(f.db, systemClock).create('acme', ['admin'], 'admin')).key;
      }
      return admin;
    };
    it('opens no route of the API: lists, conversations and keys refuse it', async () => {
      const { KeyService } = await import('../../server/src/service/keys.js');
      const { systemClock } = await import('../../server/src/lib/clock.js');
      const keys = new KeyService(f.db, systemClock);
      const pk = (await keys.createPublishable('acme', { agents: ['help-desk'], origins: [SHOP] })).key;
      for (const path of ['/api/v1/agents', '/api/v1/keys', '/api/v1/agents/help-desk/conversations']) {
        const r = await request(f.app.app).get(path).set(T).set('authorization', `Bearer ${pk}`);
        expect(r.status).toBe(401);
      }
    });

    it("answers 401, never 500, to a bearer that names a publishable key's id, before and after its revocation", async () => {
      const made = await request(f.app.app)
        .post('/api/v1/keys')
        .set(T)
        .set('authorization', `Bearer ${await adminKey()}`)
        .send({ name: 'shop', widget: { agents: ['help-desk'], origins: [SHOP] } });
      expect(made.status).toBe(201);
      const bearer = `sbk_${(made.body as { id: string }).id.replaceAll('-', '')}_${'a'.repeat(43)}`;
      const ask = () => request(f.app.app).get('/api/v1/agents').set(T).set('authorization', `Bearer ${bearer}`);
      expect((await ask()).status).toBe(401);
      await request(f.app.app)
        .delete(`/api/v1/keys/${made.body.id}`)
        .set(T)
        .set('authorization', `Bearer ${await adminKey()}`)
        .expect(204);
      expect((await ask()).status).toBe(401);
    });
  });
});
