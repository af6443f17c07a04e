// Routing with a model server's embeddings (LLM_EMBEDDINGS_MODEL), against a scripted
// OpenAI-compatible embeddings server on loopback whose "model" knows synonyms: a router of its
// embeddings is trained in the background and stored, routes paraphrases the local router
// cannot, and whenever a message's embedding does not come in time (slow or failing server) the
// local router answers and the audit says why. Its training counts against the tenant's tokens.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import type { Config } from '../../server/src/config.js';
import { FUSED_MODEL, ROUTER_MODEL } from '../../server/src/engine/router/index.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { FAKE_EMBEDDING_DIMS, startFakeEmbeddings, type FakeEmbeddings } from '../helpers/fake-embeddings.js';
import { testApp } from '../helpers/servers.js';
import { waitUntil } from '../helpers/wait.js';

warnIfPostgresSkipped();

const bank = {
  name: 'Bank',
  capabilities: [
    {
      name: 'balance',
      examples: ['what is my balance', 'show my account balance', 'how much is in my account', 'check my balance please', 'balance of my checking account'],
      phases: [{ id: 'b', say: 'Your balance is fine.' }],
    },
    {
      name: 'card_lost',
      examples: ['I lost my card', 'my card was stolen', 'block my card', 'I cannot find my debit card', 'report a missing card'],
      phases: [{ id: 'c', say: 'Card blocked.', end: 'completed' }],
    },
    {
      name: 'transfer',
      examples: ['send money to my friend', 'transfer funds to savings', 'move money between accounts', 'wire cash to my brother', 'make a transfer'],
      phases: [{ id: 't', say: 'Transfer started.' }],
    },
  ],
};

/** A paraphrase of card_lost that shares no word with its examples. */
const PARAPHRASE = 'someone pinched my plastic';
const SEMANTIC_MODEL = `${FUSED_MODEL}+embeddings:fake-embed`;

const llmConfig = (url: string, over: { tenantDailyTokens?: number; timeoutMs?: number } = {}): Partial<Config> => ({
  llm: {
    url,
    model: 'fake-chat',
    apiKey: 'embed-key',
    timeoutMs: 5_000,
    maxRetries: 0,
    maxTokensPerConversation: 0,
    tenantDailyTokens: over.tenantDailyTokens ?? 0,
    embeddings: { model: 'fake-embed', timeoutMs: over.timeoutMs ?? 300 },
  },
  // The routing fallback by chat is not what is tested here: its calls would go to the same server.
  routerLlmTimeoutMs: 100,
});

async function converse(app: App, tenant: string, slug: string, message: string) {
  const r = await request(app.app).post(`/api/v1/agents/${slug}/converse`).set('tenant-id', tenant).send({ message });
  expect(r.status).toBe(200);
  const audit = await request(app.app).get(`/api/v1/agents/${slug}/conversations/${r.body.conversation_id}/audit-logs`).set('tenant-id', tenant);
  const entries = audit.body.data as { type: string; data: any }[];
  return {
    id: r.body.conversation_id as string,
    capability: r.body.state.capability as string,
    routing: entries.find((e) => e.type === 'routing_decision')!.data,
    errors: entries.filter((e) => e.type === 'error').map((e) => e.data),
  };
}

type Conversed = Awaited<ReturnType<typeof converse>>;

/** Converses until the routing decision was made by the router of server embeddings (its training runs in the background). */
async function untilSemantic(app: App, tenant: string, slug: string, message: string, model = SEMANTIC_MODEL) {
  let r!: Conversed;
  await waitUntil('routing with server embeddings', async () => (r = await converse(app, tenant, slug, message)).routing.model === model, 20_000, 50);
  return r;
}

eachDatabase('routing with server embeddings ($name)', (database) => {
  let fake: FakeEmbeddings;
  let drop: () => Promise<void>;
  let url: string;
  let db: Database;
  const apps: App[] = [];
  const extra: Database[] = [];
  const start = (config: Partial<Config>, d: Database = db) => {
    const app = testApp(d, config);
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    fake = await startFakeEmbeddings();
    ({ drop, url, db } = await database.create());
  });
  afterAll(async () => {
    for (const a of apps) await a.close(1000);
    for (const d of extra) await d.close();
    await drop();
    await fake.close();
  });

  it('trains a router of the server embeddings in the background, then routes a paraphrase the local router turns away', async () => {
    const app = start(llmConfig(fake.url));
    // The server holds its answers: the router of its embeddings cannot be trained yet.
    fake.hold();
    try {
      expect((await request(app.app).put('/api/v1/agents/bank').set('tenant-id', 'acme').send(bank)).status).toBe(200);
      // The local router knows no word of the paraphrase.
      const local = await converse(app, 'acme', 'bank', PARAPHRASE);
      expect(local.capability).toBe('fallback');
      expect(local.routing.embeddings).toEqual({ model: 'fake-embed', unavailable: 'the router of server embeddings is being trained' });
    } finally {
      fake.release();
    }
    const semantic = await untilSemantic(app, 'acme', 'bank', PARAPHRASE);
    expect(semantic.capability).toBe('card_lost');
    expect(semantic.routing).toMatchObject({ reason: 'best_match', model: SEMANTIC_MODEL, embeddings: { model: 'fake-embed' } });
    expect(semantic.routing.embeddings.duration_ms).toBeGreaterThanOrEqual(0);
    expect(semantic.routing.lexical).toBeUndefined();
    // The training texts went in batches (the examples and the background class), the message alone.
    const training = fake.calls.filter((c) => c.input.length > 1);
    expect(training.length).toBeGreaterThanOrEqual(2);
    expect(training.flatMap((c) => c.input)).toContain('my card was stolen');
    expect(fake.calls.at(-1)).toEqual({ input: [PARAPHRASE], model: 'fake-embed', format: 'float', authorization: 'Bearer embed-key' });
    // Unrelated talk still goes to the fallback.
    expect((await converse(app, 'acme', 'bank', 'what will the weather be like tomorrow')).capability).toBe('fallback');
  });

  it('answers with the local router, and audits why, when the embedding does not come in time or the server fails', async () => {
    const app = apps[0];
    fake.behave({ delayMs: 3_000 });
    try {
      const started = performance.now();
      const slow = await converse(app, 'acme', 'bank', 'I lost my card');
      // Routing waits ROUTER_EMBEDDINGS_TIMEOUT_MS (300 ms here), not the server's 3 s.
      expect(performance.now() - started).toBeLessThan(2_500);
      expect(slow.capability).toBe('card_lost');
      expect(slow.routing.model).not.toBe(SEMANTIC_MODEL);
      expect(slow.routing.embeddings).toMatchObject({ model: 'fake-embed', error: 'no answer within 300 ms' });
      expect(slow.errors).toContainEqual({ code: 'embeddings_failed', message: 'no answer within 300 ms', model: 'fake-embed' });

      fake.behave({ status: 500 });
      const failing = await converse(app, 'acme', 'bank', PARAPHRASE);
      expect(failing.capability).toBe('fallback');
      expect(failing.routing.embeddings.error).toBe('provider answered HTTP 500');
      // (The routing fallback by chat is asked next, as for any message the router turns away; the scripted server has no chat.)
      expect(failing.errors.map((e) => e.code)).toEqual(['embeddings_failed', 'llm_failed']);
    } finally {
      fake.behave({});
    }
  });

  it("replays ask the server for each message's embedding, as the live conversation did", async () => {
    const app = apps[0];
    const live = await untilSemantic(app, 'acme', 'bank', PARAPHRASE);
    const replay = async () => {
      const started = await request(app.app)
        .post('/api/v1/agents/bank/replays')
        .set('tenant-id', 'acme')
        .send({ version: 1, conversations: [live.id] });
      expect(started.status).toBe(202);
      let r!: { body: { status: string } & Record<string, any> };
      const read = () => request(app.app).get(`/api/v1/agents/bank/replays/${started.body.id}`).set('tenant-id', 'acme');
      await waitUntil('the replay to finish', async () => (r = await read()).body.status !== 'running', 20_000, 50);
      return r.body;
    };
    const before = fake.calls.length;
    expect((await replay()).summary).toMatchObject({ conversations: 1, identical: 1 });
    expect(fake.calls.slice(before).map((c) => c.input)).toEqual([[PARAPHRASE]]);
    // Without the embedding, the agent's own router turns the paraphrase away: the replay says so.
    fake.behave({ status: 500 });
    try {
      const changed = await replay();
      expect(changed.results[0].first_difference).toMatchObject({ field: 'reply', recorded: 'Card blocked.' });
    } finally {
      fake.behave({});
    }
  });

  it('a restarted process loads the stored router of server embeddings instead of embedding the examples again', async () => {
    const d = openDatabase(url, { poolMax: 5 });
    extra.push(d);
    const again = start(llmConfig(fake.url), d);
    const before = fake.calls.length;
    const r = await untilSemantic(again, 'acme', 'bank', PARAPHRASE);
    expect(r.capability).toBe('card_lost');
    expect(fake.calls.slice(before).every((c) => c.input.length === 1)).toBe(true);
    expect(again.agents.routerCounts.trained).toBe(0);

    // One stored by the training method before this one answers as it is, named by its model:
    // training it again would embed every example again, at the tenant's expense.
    const previous = `${ROUTER_MODEL}+embeddings:fake-embed`;
    expect(await d.knex('stored_routers').where({ tenant_id: 'acme', model: SEMANTIC_MODEL }).update({ model: previous })).toBe(1);
    const d2 = openDatabase(url, { poolMax: 5 });
    extra.push(d2);
    const older = start(llmConfig(fake.url), d2);
    const since = fake.calls.length;
    const o = await untilSemantic(older, 'acme', 'bank', PARAPHRASE, previous);
    expect(o.capability).toBe('card_lost');
    expect(fake.calls.slice(since).every((c) => c.input.length === 1)).toBe(true);
    expect(older.agents.routerCounts.trained).toBe(0);
  });

  it('an embedding with a number no float32 holds is an embeddings_failed: the local router answers, the process stays up', async () => {
    const app = apps[0];
    await untilSemantic(app, 'acme', 'bank', PARAPHRASE);
    fake.behave({ first: 1e39 });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await converse(app, 'acme', 'bank', 'I lost my card');
        expect(r.capability).toBe('card_lost');
        expect(r.routing.model).not.toBe(SEMANTIC_MODEL);
        expect(r.errors).toContainEqual({
          code: 'embeddings_failed',
          message: 'the provider answered an embedding with a value that is not a finite 32-bit number',
          model: 'fake-embed',
        });
      }
    } finally {
      fake.behave({});
    }
    expect((await untilSemantic(app, 'acme', 'bank', PARAPHRASE)).capability).toBe('card_lost');
  });

  it('an embedding of another length falls back with the reason audited, and the router is trained again for it, here and after a restart', async () => {
    const app = apps[0];
    await untilSemantic(app, 'acme', 'bank', PARAPHRASE);
    const dims = FAKE_EMBEDDING_DIMS + 3;
    fake.behave({ dims });
    try {
      const changed = await converse(app, 'acme', 'bank', 'I lost my card');
      expect(changed.capability).toBe('card_lost');
      expect(changed.routing.model).not.toBe(SEMANTIC_MODEL);
      expect(changed.errors).toContainEqual({
        code: 'embeddings_failed',
        message: `the model server answered an embedding of ${dims} numbers for a router of ${FAKE_EMBEDDING_DIMS}: the router of server embeddings is trained again`,
        model: 'fake-embed',
      });
      // Trained again on embeddings of the new length, and stored in the old one's place.
      expect((await untilSemantic(app, 'acme', 'bank', PARAPHRASE)).capability).toBe('card_lost');
      const stored = await db.knex('stored_routers').where({ tenant_id: 'acme', model: SEMANTIC_MODEL });
      expect(stored).toHaveLength(1);
      // A restarted process meets the new length too: it routes, never a 500.
      const d = openDatabase(url, { poolMax: 5 });
      extra.push(d);
      const again = start(llmConfig(fake.url), d);
      expect((await untilSemantic(again, 'acme', 'bank', PARAPHRASE)).capability).toBe('card_lost');
      expect(again.agents.routerCounts.trained).toBe(0);
    } finally {
      fake.behave({});
    }
  });

  it("a training the tenant's tokens cannot pay for is refused, said in the audit, and the local router answers", async () => {
    const poor = start(llmConfig(fake.url, { tenantDailyTokens: 50 }));
    expect((await request(poor.app).put('/api/v1/agents/bank').set('tenant-id', 'poor').send(bank)).status).toBe(200);
    let r!: Conversed;
    await waitUntil(
      'the training of server embeddings to fail',
      async () => String((r = await converse(poor, 'poor', 'bank', 'I lost my card')).routing.embeddings?.unavailable).includes('failed'),
      10_000,
      50,
    );
    expect(r.capability).toBe('card_lost');
    expect(r.routing.model).not.toBe(SEMANTIC_MODEL);
    expect(r.routing.embeddings.unavailable).toMatch(
      /^training the router of server embeddings failed: the tenant's 50 model tokens for \d{4}-\d\d-\d\d are spent/,
    );
  });
});

describe('LLM_EMBEDDINGS_MODEL', () => {
  it('needs a model server', async () => {
    const { loadConfig } = await import('../../server/src/config.js');
    expect(() => loadConfig({ LLM_EMBEDDINGS_MODEL: 'text-embedding-3-small' })).toThrow(
      /LLM_EMBEDDINGS_MODEL: names a model of the model server, so it needs LLM_URL/,
    );
    expect(loadConfig({ LLM_URL: 'http://127.0.0.1:9/v1', LLM_EMBEDDINGS_MODEL: 'e5' }).llm?.embeddings).toEqual({ model: 'e5', timeoutMs: 1000 });
  });
});
