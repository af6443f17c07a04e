// Host checks at PUT and in a version's view, against a name server that never answers: one
// tenant's definitions full of such names get "not checked" (never a false "unreachable"), within
// the bounds of their lookups, and another tenant's PUT and actions go on as usual. An unchanged
// PUT asks nothing again.
import { createServer } from 'node:http';
import pino from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HostChecker } from '../../server/src/actions/ssrf.js';
import { createApp, type App } from '../../server/src/app.js';
import type { Database } from '../../server/src/store/db.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { startNameServer, type NameServer } from '../helpers/dns.js';
import { testConfig } from '../helpers/servers.js';

warnIfPostgresSkipped();

eachDatabase('host checks against a name server that never answers ($name)', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let blackHole: NameServer;
  let app: App;
  let backend: ReturnType<typeof createServer>;
  let port = 0;

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    blackHole = await startNameServer({ blackHole: true });
    backend = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"amount":42}'));
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    port = (backend.address() as { port: number }).port;
    app = createApp(testConfig({ actionAllowedHosts: { other: [`localhost:${port}`] } }), {
      db,
      logger: pino({ level: 'silent' }),
      actionRetryBaseMs: 5,
      hostChecker: new HostChecker({ servers: [blackHole.address], timeoutMs: 300, maxLookups: 8, maxTenantLookups: 4 }),
    });
  });
  afterAll(async () => {
    await app?.close(1000);
    await new Promise((r) => backend?.close(r));
    await blackHole?.close();
    await drop();
  });

  const hostsAgent = (n: number, salt: string) => ({
    name: 'Hosts',
    actions: Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, { type: 'http', method: 'GET', url: `https://svc-${salt}-${i}.example.com/x` }])),
    capabilities: [{ name: 'c', examples: ['hello there', 'hi', 'good morning'], phases: [{ id: 'p', say: 'Hi.' }] }],
  });

  it("gives one tenant's unanswered names 'not checked', and another tenant's PUT and action their usual answers", async () => {
    const greedy = Array.from({ length: 6 }, (_, k) =>
      request(app.app)
        .put(`/api/v1/agents/hosts-${k}`)
        .set('tenant-id', 'greedy')
        .send(hostsAgent(10, String(k))),
    );
    const other = request(app.app)
      .put('/api/v1/agents/pay')
      .set('tenant-id', 'other')
      .send({
        name: 'Pay',
        actions: { pay: { type: 'http', method: 'GET', url: `http://localhost:${port}/pay`, timeout_ms: 3000 } },
        capabilities: [
          {
            name: 'pay',
            examples: ['pay my bill', 'i want to pay', 'make a payment'],
            phases: [{ id: 'p', call: 'pay', say: 'Paid {{ actions.pay.body.amount }}.', end: 'completed' }],
          },
        ],
      });
    const [mine, ...theirs] = await Promise.all([other, ...greedy]);
    expect(mine.status).toBe(200);
    expect(mine.body.warnings.filter((w: { code: string }) => w.code === 'unreachable_host' || w.code === 'host_not_checked')).toEqual([]);
    for (const r of theirs) {
      expect(r.status).toBe(200);
      expect(r.body.warnings.filter((w: { code: string }) => w.code === 'unreachable_host')).toEqual([]);
      const hosts = r.body.warnings.filter((w: { code: string }) => w.code === 'host_not_checked');
      expect(hosts).toHaveLength(1);
      expect(hosts[0].message).toMatch(/^not checked: svc-\d-\d\.example\.com \((the name server did not answer|too many host checks under way)/);
    }
    const paid = await request(app.app).post('/api/v1/agents/pay/converse').set('tenant-id', 'other').send({ message: 'i want to pay' });
    expect(paid.body.response.message).toBe('Paid 42.');
  });

  it('asks nothing again for an unchanged PUT, and bounds the checks of a version’s view alike', async () => {
    const before = blackHole.queries.length;
    const again = await request(app.app).put('/api/v1/agents/hosts-0').set('tenant-id', 'greedy').send(hostsAgent(10, '0'));
    expect(again.status).toBe(200);
    expect(blackHole.queries.length).toBe(before);
    const view = await request(app.app).get('/api/v1/agents/hosts-0/versions/1').set('tenant-id', 'greedy');
    expect(view.status).toBe(200);
    expect(view.body.warnings).toHaveLength(1);
    expect(view.body.warnings[0]).toMatchObject({ code: 'host_not_checked', message: expect.stringMatching(/^not checked: /) });
  });
});
