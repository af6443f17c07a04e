// GET /metrics: the Prometheus text format, scraped and parsed; a conversation's calls move the
// series they should (turns, routing, actions, model tokens, closes, HTTP durations), on every
// database; METRICS_TOKEN guards the endpoint; METRICS_TENANT_LABEL=false drops the tenant.
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { orderLookupAgent } from '../helpers/agents.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';
import { loadConfig } from '../../server/src/config.js';

warnIfPostgresSkipped();

/** Samples of the text format: `name{label="value",…} number` lines, by series. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not the Prometheus text format: ${line}`);
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}=${v}`).sort();
    out.set(`${m[1]}{${labels.join(',')}}`, Number(m[3]));
  }
  return out;
}

const series = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(',')}}`;

const shop = (base: string) =>
  orderLookupAgent(base, [
    {
      name: 'advice',
      examples: ['which size should i buy', 'recommend a product', 'what do you suggest', 'help me choose'],
      phases: [
        { id: 'chat', generate: { instructions: 'Recommend something.' }, next: 'bye' },
        { id: 'bye', say: 'Bye.', end: 'completed' },
      ],
    },
  ]);

eachDatabase('metrics on $name', (database) => {
  let backend: Backend;
  let llm: FakeLlm;
  beforeAll(async () => {
    backend = await startBackend((_req, res) => json(res, 200, { status: 'shipped' }));
    llm = await startFakeLlm();
  });
  afterAll(async () => {
    await backend.close();
    await llm.close();
  });
  const f = appFixture(database, {
    agents: () => ({ shop: shop(backend.url) }),
    config: () => ({
      actionAllowedHosts: { acme: [`127.0.0.1:${backend.port}`] },
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 2000, maxRetries: 0, maxTokensPerConversation: 0, tenantDailyTokens: 100_000 },
    }),
  });
  const client = clientFixture(f);
  const api = () => request(f.app.app);
  const scrape = async () => {
    const r = await api().get('/metrics').expect(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return parse(r.text);
  };
  const say = async (message: string, conversation_id?: string) =>
    (await api().post('/api/v1/agents/shop/converse').set('tenant-id', 'acme').send({ message, conversation_id }).expect(200)).body as {
      conversation_id: string;
    };

  it('serves the process metrics and the pool, outbox and stream gauges', async () => {
    const m = await scrape();
    expect(m.get('process_resident_memory_bytes{}')).toBeGreaterThan(0);
    expect(m.has('nodejs_eventloop_lag_seconds{}')).toBe(true);
    expect(m.get(series('switchboard_db_pool_connections', { state: 'used' }))).toBeGreaterThanOrEqual(0);
    expect(m.get('switchboard_webhook_outbox_pending{}')).toBe(0);
    expect(m.get('switchboard_event_streams_open{}')).toBe(0);
    expect(m.get('switchboard_llm_tenant_daily_tokens_limit{}')).toBe(100_000);
  });

  it('moves the turn, routing, action, close and HTTP series of a conversation', async () => {
    const before = await scrape();
    const get = (m: Map<string, number>, key: string) => m.get(key) ?? 0;
    const first = await say('where is my order');
    await say('A-1', first.conversation_id);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => get(after, series(name, labels)) - get(before, series(name, labels));
    const who = { tenant: 'acme', agent: 'shop' };

    const v1 = { ...who, version: '1' };
    expect(delta('switchboard_conversations_started_total', v1)).toBe(1);
    expect(delta('switchboard_turns_total', { ...v1, capability: 'order_status', status: 'active' })).toBe(1);
    expect(delta('switchboard_turns_total', { ...v1, capability: 'order_status', status: 'completed' })).toBe(1);
    expect(delta('switchboard_routing_decisions_total', { ...v1, decision: 'matched' })).toBe(1);
    expect(delta('switchboard_routing_confidence_count', who)).toBe(1);
    expect(delta('switchboard_action_calls_total', { ...who, action: 'get_order', outcome: 'ok' })).toBe(1);
    expect(delta('switchboard_action_duration_seconds_count', { ...who, action: 'get_order' })).toBe(1);
    expect(delta('switchboard_conversations_closed_total', { ...v1, status: 'completed' })).toBe(1);
    const converse = { method: 'POST', route: '/api/v1/agents/:slug/converse', status: '200' };
    expect(delta('switchboard_http_request_duration_seconds_count', converse)).toBe(2);
    // Buckets are cumulative: the +Inf bucket counts every request.
    expect(delta('switchboard_http_request_duration_seconds_bucket', { ...converse, le: '+Inf' })).toBe(2);

    // A message the router cannot place goes to the fallback.
    await say('the weather on mars tomorrow');
    expect(get(await scrape(), series('switchboard_routing_decisions_total', { ...v1, decision: 'fallback' }))).toBeGreaterThanOrEqual(1);
  });

  it("counts a model call's tokens and the tenant's tokens of the day", async () => {
    llm.script({ text: 'Take the large one.', usage: { prompt: 120, completion: 30 } });
    const before = await scrape();
    await say('help me choose');
    const after = await scrape();
    const who = { tenant: 'acme', agent: 'shop' };
    const delta = (name: string, labels: Record<string, string>) => (after.get(series(name, labels)) ?? 0) - (before.get(series(name, labels)) ?? 0);
    expect(delta('switchboard_llm_tokens_total', { ...who, kind: 'input' })).toBe(120);
    expect(delta('switchboard_llm_tokens_total', { ...who, kind: 'output' })).toBe(30);
    expect(delta('switchboard_llm_calls_total', { ...who, outcome: 'ok' })).toBe(1);
    expect(after.get(series('switchboard_llm_tenant_tokens_today', { tenant: 'acme' }))).toBeGreaterThanOrEqual(150);
  });

  it('backs every metric the Grafana dashboard and the alert rules use, and the dashboard has the shape Grafana loads', async () => {
    const text = (await api().get('/metrics').expect(200)).text;
    const families = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]));
    const known = (name: string) => families.has(name) || families.has(name.replace(/_(bucket|count|sum)$/, ''));
    const used = (expr: string) => [...expr.matchAll(/\b((?:switchboard|nodejs|process)_[a-z0-9_]+)/g)].map((m) => m[1]);

    const dashboard = JSON.parse(readFileSync('docs/observability/grafana-dashboard.json', 'utf8')) as {
      uid: string;
      title: string;
      schemaVersion: number;
      panels: { id: number; type: string; title: string; gridPos: Record<string, number>; targets: { refId: string; expr: string }[] }[];
    };
    expect(dashboard).toMatchObject({ uid: expect.any(String), title: 'Switchboard', schemaVersion: expect.any(Number) });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const p of dashboard.panels) {
      expect(p.type).toBe('timeseries');
      expect(Object.keys(p.gridPos).sort()).toEqual(['h', 'w', 'x', 'y']);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.targets.length).toBeGreaterThan(0);
      for (const t of p.targets) for (const name of used(t.expr)) expect(known(name), `${p.title}: ${name}`).toBe(true);
    }
    const rules = parseYaml(readFileSync('docs/observability/alerts.yml', 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
    const alerts = rules.groups.flatMap((g) => g.rules);
    expect(alerts).toHaveLength(5);
    for (const a of alerts) {
      expect(used(a.expr).length, a.alert).toBeGreaterThan(0);
      for (const name of used(a.expr)) expect(known(name), `${a.alert}: ${name}`).toBe(true);
    }
  });

  it('labels unknown paths "other", never with the path itself', async () => {
    await api().get('/no/such/path/user-42').expect(404);
    const text = (await api().get('/metrics').expect(200)).text;
    expect(text).not.toContain('user-42');
    expect(text).toMatch(/switchboard_http_request_duration_seconds_count\{method="GET",route="other",status="404"\} [1-9]/);
    // The typed client reads it too (a text body).
    const typed = await client.sb.ops.metrics({ headers: {} });
    expect(typed.status).toBe(200);
    expect(String(typed.body)).toContain('switchboard_turns_total');
  });
});

describe('metrics options', () => {
  const database = databases[0];
  const guarded = appFixture(database, {
    agents: { bot: { name: 'Bot', capabilities: [{ name: 'hi', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'a', say: 'Hi.' }] }] } },
    config: { metricsToken: 'scrape-token-0123456789', metricsTenantLabel: false },
  });

  it('asks for METRICS_TOKEN when set, and drops the tenant label with METRICS_TENANT_LABEL=false', async () => {
    const app = () => request(guarded.app.app);
    const refused = await app().get('/metrics').expect(401);
    expect(refused.body).toMatchObject({ code: 'unauthorized', status: 401 });
    await app().get('/metrics').set('authorization', 'Bearer wrong-token-0123456789').expect(401);
    await app().post('/api/v1/agents/bot/converse').set('tenant-id', 'acme').send({ message: 'hello' }).expect(200);
    const ok = await app().get('/metrics').set('authorization', 'Bearer scrape-token-0123456789').expect(200);
    expect(ok.text).toMatch(/switchboard_turns_total\{agent="bot",version="1",capability="hi",status="active"\} 1/);
    expect(ok.text).not.toContain('tenant="acme"');
  });
});

describe('metrics label cardinality', () => {
  const hi = (capability: string) => ({
    name: 'Bot',
    capabilities: [{ name: capability, examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'a', say: 'Hi.' }] }],
  });
  const f = appFixture(databases[0], { config: { metricsLabels: { maxTenants: 2, maxNamesPerTenant: 3 } } });

  it('gives a tenant series of its own for as many names as the caps allow, and counts the rest as "other"', async () => {
    const app = () => request(f.app.app);
    // One tenant making agent after agent, each with a capability of a new name.
    for (let i = 0; i < 6; i++) {
      await app()
        .put(`/api/v1/agents/bot-${i}`)
        .set('tenant-id', 'noisy')
        .send(hi(`cap_${i}`))
        .expect(200);
      await app().post(`/api/v1/agents/bot-${i}/converse`).set('tenant-id', 'noisy').send({ message: 'hello' }).expect(200);
    }
    for (const t of ['second', 'third']) {
      await app().put('/api/v1/agents/bot').set('tenant-id', t).send(hi('greet')).expect(200);
      await app().post('/api/v1/agents/bot/converse').set('tenant-id', t).send({ message: 'hello' }).expect(200);
    }
    const samples = parse((await app().get('/metrics').expect(200)).text);
    const turns = [...samples.entries()].filter(([k]) => k.startsWith('switchboard_turns_total{'));
    expect(turns.map(([k]) => k).sort()).toEqual(
      [
        series('switchboard_turns_total', { tenant: 'noisy', agent: 'bot-0', version: '1', capability: 'cap_0', status: 'active' }),
        series('switchboard_turns_total', { tenant: 'noisy', agent: 'bot-1', version: '1', capability: 'cap_1', status: 'active' }),
        series('switchboard_turns_total', { tenant: 'noisy', agent: 'bot-2', version: '1', capability: 'cap_2', status: 'active' }),
        series('switchboard_turns_total', { tenant: 'noisy', agent: 'other', version: 'other', capability: 'other', status: 'active' }),
        series('switchboard_turns_total', { tenant: 'second', agent: 'bot', version: '1', capability: 'greet', status: 'active' }),
        series('switchboard_turns_total', { tenant: 'other', agent: 'other', version: 'other', capability: 'other', status: 'active' }),
      ].sort(),
    );
    expect(samples.get(series('switchboard_turns_total', { tenant: 'noisy', agent: 'other', version: 'other', capability: 'other', status: 'active' }))).toBe(
      3,
    );
  });
});

describe('metrics configuration', () => {
  it('refuses to start open in api_key mode: METRICS_TOKEN, or METRICS_PUBLIC=true on purpose', () => {
    expect(() => loadConfig({ AUTH_MODE: 'api_key' })).toThrow(/METRICS_TOKEN: required with AUTH_MODE=api_key/);
    expect(loadConfig({ AUTH_MODE: 'api_key', METRICS_TOKEN: 'scrape-token-0123456789' }).metricsToken).toBe('scrape-token-0123456789');
    expect(loadConfig({ AUTH_MODE: 'api_key', METRICS_PUBLIC: 'true' }).metricsToken).toBeNull();
    expect(loadConfig({}).authMode).toBe('header');
    // The command-line tools serve nothing: `npm run keys` works where the server's settings say api_key.
    expect(loadConfig({ AUTH_MODE: 'api_key' }, {}, 'tool').authMode).toBe('api_key');
  });
});
