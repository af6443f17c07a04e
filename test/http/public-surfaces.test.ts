// The public surfaces as a stranger or one busy tenant meets them: two tenants, a proxy's
// X-Forwarded-For, made-up keys, minted visitors, and the budgets that keep one tenant's widget
// from hurting another tenant or the tenant's own console. On both databases.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import type { Config } from '../../server/src/config.js';
import { FakeClock } from '../helpers/clock.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, type Fixture } from '../helpers/fixture.js';
import { randomBytes } from 'node:crypto';
import type { App } from '../../server/src/app.js';
import { listen, testApp, testConfig } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

warnIfPostgresSkipped();
const REDIS_URL = process.env.TEST_REDIS_URL;

const SHOP = 'https://shop.example.com';
const BETA = 'https://beta.example.org';

const helpDesk: AgentDefinitionInput = {
  name: 'Help desk',
  capabilities: [
    {
      name: 'billing',
      examples: ['a question about my bill', 'billing problem', 'my invoice is wrong'],
      phases: [
        { id: 'which', say: 'Which invoice?', collect: { slot: 'invoice', type: 'text' }, next: 'done' },
        { id: 'done', say: 'Invoice {{ slots.invoice }} is on its way.', end: 'completed' },
      ],
    },
    { name: 'human', examples: ['talk to a human', 'a real person please'], phases: [{ id: 'handoff', say: 'A person will take over.', end: 'escalated' }] },
  ],
};

const widgetLimits = (over: Partial<Config['widget']>): Config['widget'] => ({
  ...testConfig().widget,
  keyPerMinute: 1000,
  visitorPerMinute: 1000,
  addressPerMinute: 1000,
  newVisitorsPerAddressPerHour: 1000,
  keyNewVisitorsPerMinute: 1000,
  ...over,
});

/** A publishable key of `tenant` for help-desk on `origin`. */
async function publishable(f: Fixture, tenant: string, origin: string): Promise<string> {
  const made = await request(f.app.app)
    .post('/api/v1/keys')
    .set('tenant-id', tenant)
    .send({ widget: { agents: ['help-desk'], origins: [origin] } });
  expect(made.status).toBe(201);
  return (made.body as { key: string }).key;
}

/** A page's request of the widget's routes, from client address `from` (as the proxy names it). */
function page(f: Fixture, method: 'get' | 'post', path: string, o: { key: string; origin: string; from?: string; token?: string }) {
  const url = `/widget/v1/agents/help-desk${path}${path.includes('?') ? '&' : '?'}key=${o.key}`;
  const agent = request(f.app.app);
  const r = (method === 'get' ? agent.get(url) : agent.post(url)).set('origin', o.origin);
  if (o.from) r.set('x-forwarded-for', o.from);
  if (o.token) r.set('x-visitor-token', o.token);
  return r;
}

async function mint(f: Fixture, o: { key: string; origin: string; from?: string; held?: string }) {
  return page(f, 'post', '/visitor', o).send(o.held ? { visitor_token: o.held } : {});
}

eachDatabase('public surfaces under hostile load ($name)', (database) => {
  describe('behind one trusted proxy (TRUST_PROXY=1)', () => {
    const f = appFixture(database, {
      agents: { 'help-desk': helpDesk },
      config: { trustProxy: 1, widget: widgetLimits({ addressPerMinute: 6, unknownKeyPerMinute: 3 }) },
    });
    const beta = appFixtureAgents(f, 'beta');
    let acme = '';
    let betaKey = '';
    beforeAll(async () => {
      acme = await publishable(f, 'acme', SHOP);
      await beta();
      betaKey = await publishable(f, 'beta', BETA);
    });

    it("counts each client's own address, and made-up keys spend only their sender's budget", async () => {
      // A script from one address with a made-up key: refused, then refused before any lookup.
      const fake = 'pk_00000000000000000000000000000000';
      const statuses: number[] = [];
      for (let i = 0; i < 125; i++) statuses.push((await page(f, 'get', '', { key: fake, origin: SHOP, from: '203.0.113.9' })).status);
      expect(statuses.slice(0, 3)).toEqual([404, 404, 404]);
      expect(new Set(statuses.slice(3))).toEqual(new Set([429]));
      // Another tenant's visitor behind the same proxy is untouched: presentation, token, conversation.
      const at = { key: betaKey, origin: BETA, from: '198.51.100.7' };
      expect((await page(f, 'get', '', at)).status).toBe(200);
      const token = (await mint(f, at)).body.visitor_token as string;
      const said = await page(f, 'post', '/converse', { ...at, token }).send({ message: 'billing problem' });
      expect(said.status).toBe(200);
      // The script's own address stays refused for the minute, before any lookup, whatever key it names.
      expect((await page(f, 'get', '', { key: acme, origin: SHOP, from: '203.0.113.9' })).status).toBe(429);
      expect((await page(f, 'get', '', { key: acme, origin: SHOP, from: '203.0.113.10' })).status).toBe(200);
      // One address's budget of requests with live keys is its own: the seventh from 198.51.100.7
      // is refused, the next address is not.
      const more: number[] = [];
      for (let i = 0; i < 4; i++) more.push((await page(f, 'get', '', at)).status);
      expect(more).toEqual([200, 200, 200, 429]);
      expect((await page(f, 'get', '', { ...at, from: '198.51.100.8' })).status).toBe(200);
    });
  });

  describe('without TRUST_PROXY', () => {
    const f = appFixture(database, { agents: { 'help-desk': helpDesk }, config: { widget: widgetLimits({ addressPerMinute: 3 }) } });
    it('counts the peer, whatever X-Forwarded-For claims', async () => {
      const key = await publishable(f, 'acme', SHOP);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await page(f, 'get', '', { key, origin: SHOP, from: `192.0.2.${i + 1}` })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    });
  });

  describe.skipIf(!REDIS_URL)(`two replicas sharing REDIS_URL${REDIS_URL ? '' : ' (SKIPPED: set TEST_REDIS_URL)'}`, () => {
    const config = { trustProxy: 1, redisUrl: REDIS_URL, widget: widgetLimits({ addressPerMinute: 4 }) };
    const f = appFixture(database, { agents: { 'help-desk': helpDesk }, config });
    let second: App;
    beforeAll(async () => {
      second = testApp(f.db, config);
      await Promise.all([f.app.ready(), second.ready()]);
    });
    afterAll(() => second?.close());
    // Addresses of their own in every run: Redis outlives the test.
    const address = () => `198.18.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

    it("spends one address's widget budget on both", async () => {
      const key = await publishable(f, 'acme', SHOP);
      const from = address();
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const app = i % 2 ? second : f.app;
        statuses.push((await request(app.app).get(`/widget/v1/agents/help-desk?key=${key}`).set('origin', SHOP).set('x-forwarded-for', from)).status);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
    });

    it("spends one address's budget of webhook requests for unknown channels on both", async () => {
      const from = address();
      const statuses: number[] = [];
      for (let i = 0; i < 302; i++) {
        const app = i % 2 ? second : f.app;
        statuses.push(
          (
            await request(app.app)
              .post(`/hooks/v1/ch_${randomBytes(24).toString('base64url')}`)
              .set('x-forwarded-for', from)
              .send('{}')
          ).status,
        );
      }
      expect(statuses.slice(0, 300)).toEqual(Array<number>(300).fill(404));
      expect(statuses.slice(300)).toEqual([429, 429]);
    });
  });

  describe('visitors the service mints', () => {
    const clock = new FakeClock();
    const f = appFixture(database, {
      agents: { 'help-desk': helpDesk },
      clock,
      config: {
        trustProxy: 1,
        sseLimits: { perTenant: 2, perConversation: 10 },
        widget: widgetLimits({ newVisitorsPerAddressPerHour: 4, keyNewConversationsPerHour: 5, streamsPerKey: 2, streamsPerVisitor: 1, visitorTokenHours: 24 }),
      },
    });
    let key = '';
    let other = '';
    beforeAll(async () => {
      key = await publishable(f, 'acme', SHOP);
      other = await publishable(f, 'acme', SHOP);
    });

    it('takes only tokens it signed for the key, unexpired; renews them for the same visitor', async () => {
      const at = { key, origin: SHOP, from: '198.51.100.20' };
      const first = await mint(f, at);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ renewed: false });
      const token = first.body.visitor_token as string;
      const started = await page(f, 'post', '/converse', { ...at, token }).send({ message: 'billing problem' });
      expect(started.status).toBe(200);
      const id = started.body.conversation_id as string;
      // Made up, altered, or signed for another key: 401, and nothing is written.
      const [v, visitorId, exp, sig] = token.split('.');
      const forged = [`v1.${'A'.repeat(22)}.${exp}.${sig}`, `${v}.${visitorId}.${Number(exp) + 3600}.${sig}`, `${v}.${visitorId}.${exp}.${sig.slice(0, -2)}AA`];
      for (const t of forged) expect((await page(f, 'post', '/converse', { ...at, token: t }).send({ message: 'last', conversation_id: id })).status).toBe(401);
      expect((await page(f, 'get', `/conversations/${id}`, { ...at, key: other, token })).status).toBe(401);
      expect((await page(f, 'get', `/conversations/${id}`, { ...at, token })).body.turns).toHaveLength(2);
      // A day later the token has expired; renewed, it is the same visitor, who finds the conversation.
      clock.advance(25 * 3600_000);
      const expired = await page(f, 'get', `/conversations/${id}`, { ...at, token });
      expect(expired.status).toBe(401);
      expect(expired.body.detail).toMatch(/expired/);
      const renewed = await mint(f, { ...at, held: token });
      expect(renewed.body).toMatchObject({ renewed: true });
      const again = await page(f, 'get', `/conversations/${id}`, { ...at, token: renewed.body.visitor_token });
      expect(again.status).toBe(200);
      expect(again.body.turns).toHaveLength(2);
      // A forged token asks for a new visitor: it gets one, never the visitor it names.
      const fresh = await mint(f, { ...at, held: forged[0] });
      expect(fresh.body).toMatchObject({ renewed: false });
      expect((await page(f, 'get', `/conversations/${id}`, { ...at, token: fresh.body.visitor_token })).status).toBe(404);
      // Past the renewal window, a new visitor too.
      clock.advance(31 * 86_400_000);
      expect((await mint(f, { ...at, from: '198.51.100.21', held: renewed.body.visitor_token })).body).toMatchObject({ renewed: false });
    });

    it('mints a bounded number of visitors per address and counts new conversations per key', async () => {
      const statuses: number[] = [];
      const tokens: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await mint(f, { key: other, origin: SHOP, from: '203.0.113.50' });
        statuses.push(r.status);
        if (r.status === 200) tokens.push(r.body.visitor_token as string);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
      // Another address still gets its visitors; the key's new conversations an hour hold for all of them.
      for (let i = 0; i < 2; i++) tokens.push((await mint(f, { key: other, origin: SHOP, from: `203.0.113.${60 + i}` })).body.visitor_token as string);
      const started: number[] = [];
      for (const token of tokens)
        started.push(
          (await page(f, 'post', '/converse', { key: other, origin: SHOP, from: '203.0.113.70', token }).send({ message: 'billing problem' })).status,
        );
      expect(started).toEqual([200, 200, 200, 200, 200, 429]);
    });

    it("counts the widget's event streams per key, never against the tenant's own streams", async () => {
      const server = await listen(f.app);
      const streams: Awaited<ReturnType<typeof openSse>>[] = [];
      try {
        await f.app.startBackground();
        const third = await publishable(f, 'acme', SHOP);
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          const at = { key: third, origin: SHOP, from: `192.0.2.${80 + i}` };
          const token = (await mint(f, at)).body.visitor_token as string;
          const id = (await page(f, 'post', '/converse', { ...at, token }).send({ message: 'talk to a human' })).body.conversation_id as string;
          const s = await openSse(`${server.url}/widget/v1/agents/help-desk/conversations/${id}/events?key=${third}`, {
            origin: SHOP,
            'x-forwarded-for': at.from,
            'x-visitor-token': token,
          });
          statuses.push(s.status);
          streams.push(s);
        }
        expect(statuses).toEqual([200, 200, 429]);
        // The tenant's API streams have their own budget (SSE_MAX_PER_TENANT, 2 here) untouched.
        const api = await request(f.app.app).post('/api/v1/agents/help-desk/converse').set('tenant-id', 'acme').send({ message: 'talk to a human' });
        for (let i = 0; i < 2; i++) {
          const s = await openSse(`${server.url}/api/v1/agents/help-desk/conversations/${api.body.conversation_id}/events`, { 'tenant-id': 'acme' });
          expect(s.status).toBe(200);
          streams.push(s);
        }
      } finally {
        for (const s of streams) s.close();
        await server.close();
      }
    });
  });
});

/** Puts help-desk under `tenant` too, in the fixture's app (called in a beforeAll). */
function appFixtureAgents(f: Fixture, tenant: string) {
  return async () => {
    await request(f.app.app).put('/api/v1/agents/help-desk').set('tenant-id', tenant).send(helpDesk).expect(200);
  };
}
