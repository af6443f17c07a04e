// What a hostile tenant can do through the surfaces added since the tenant model (tests,
// replays, tools, knowledge, model calls, metrics): each finding reproduced, and refused or
// contained (docs/security.md, "Budgets").
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { databases, eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { waitUntil } from '../helpers/wait.js';

const T = { 'tenant-id': 'acme' };

/** An agent whose one action is offered to a model with `parameters` as its JSON Schema. */
function toolAgent(parameters: Record<string, unknown>) {
  return {
    name: 'Tools',
    capabilities: [
      {
        name: 'help',
        examples: ['help me', 'i need help', 'can you help', 'support please', 'assist me'],
        phases: [{ id: 'g', generate: { instructions: 'Help.', tools: ['lookup'] } }],
      },
    ],
    actions: { lookup: { type: 'http', method: 'POST', url: 'https://example.com/lookup', parameters } },
  };
}

/** `levels` definitions, each an anyOf naming the next one twice: 2^levels branches for 2–4 KB of JSON. */
function schemaBomb(levels: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = { [`l${levels}`]: { type: 'string', minLength: 3 } };
  for (let i = levels - 1; i >= 0; i--) $defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i + 1}` }, { $ref: `#/$defs/l${i + 1}`, maxLength: 2 }] };
  return { type: 'object', $defs, properties: { q: { $ref: '#/$defs/l0' } } };
}

describe('tool schemas', () => {
  const f = appFixture(databases[0]);
  const put = (slug: string, parameters: Record<string, unknown>) => request(f.app.app).put(`/api/v1/agents/${slug}`).set(T).send(toolAgent(parameters));

  it('refuses a schema whose references expand exponentially, at PUT, before compiling it', async () => {
    for (const levels of [22, 40]) {
      const bomb = schemaBomb(levels);
      expect(JSON.stringify(bomb).length).toBeLessThan(4000);
      const res = await put(`bomb-${levels}`, bomb);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: 'actions.lookup.parameters', message: expect.stringMatching(/expands to more than 2000 schema nodes/) }]);
    }
    expect((await request(f.app.app).get('/api/v1/agents/bomb-22').set(T)).status).toBe(404);
  });

  it('refuses a recursive schema and a reference to nothing, and accepts shared definitions', async () => {
    const recursive = {
      type: 'object',
      properties: { node: { $ref: '#/$defs/n' } },
      $defs: { n: { type: 'object', properties: { child: { $ref: '#/$defs/n' } } } },
    };
    expect((await put('rec', recursive)).body.errors[0].message).toMatch(/refers to itself/);
    expect((await put('dangling', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).body.errors[0].message).toMatch(/refers to nothing/);
    const shared = {
      type: 'object',
      $defs: { id: { type: 'string', pattern: '^[A-Z]+-[0-9]+$' } },
      properties: { from: { $ref: '#/$defs/id' }, to: { $ref: '#/$defs/id' } },
    };
    expect((await put('shared', shared)).status).toBe(200);
  });
});

describe('secrets in templates', () => {
  const f = appFixture(databases[0]);
  const withHeader = (value: string, say = 'Done.') => ({
    name: 'S',
    capabilities: [
      { name: 'c', examples: ['go now', 'go please', 'start', 'begin', 'do it'], phases: [{ id: 'a', call: 'x', say, end: 'completed' as const }] },
    ],
    actions: { x: { type: 'http', method: 'GET', url: 'https://example.com/x', headers: { 'x-key': value } } },
  });
  const put = (def: object) => request(f.app.app).put('/api/v1/agents/s').set(T).send(def);

  it('refuses every computed or quoted name at the start of a variable, which could reach secrets or any scope', async () => {
    for (const attack of [
      '{% assign k = "secre" | append: "ts" %}{{ [k].OPS | split: "" | join: "-" }}',
      '{{ ["secrets"].OPS }}',
      "{% assign k = 'secrets' %}{% for v in [k] %}{{ v }}{% endfor %}",
      '{% if [k] %}x{% endif %}',
    ]) {
      const res = await put(withHeader(attack));
      expect(res.status, attack).toBe(400);
      expect(res.body.errors, attack).toEqual([{ path: 'actions.x.headers.x-key', message: expect.stringMatching(/must start with a name/) }]);
    }
  });

  it('refuses secrets transformed, iterated or read outside an action, and allows them whole', async () => {
    for (const attack of ['{{ secrets.OPS | split: "" | join: "-" }}', '{% for s in secrets %}{{ s }}{% endfor %}', '{% assign s = secrets.OPS %}{{ s }}']) {
      expect((await put(withHeader(attack))).body.errors?.[0].message, attack).toMatch(/only whole/);
    }
    expect((await put(withHeader('ok', '{{ secrets.OPS }}'))).body.errors[0]).toEqual({
      path: 'capabilities.c.phases.a.say',
      message: 'secrets can be read only in action url, headers and body',
    });
    expect((await put(withHeader('Bearer {{ secrets.OPS }}', 'We keep no secrets from {{ slots[message] | default: "you" }}.'))).status).toBe(200);
  });
});

describe('patterns', () => {
  const collectAgent = (patterns: string[]) => ({
    name: 'P',
    capabilities: [
      {
        name: 'c',
        examples: ['go now', 'go please', 'start', 'begin', 'do it'],
        phases: [
          ...patterns.map((pattern, i) => ({ id: `p${i}`, say: 'Value?', collect: { slot: `s${i}`, type: 'text' as const, pattern } })),
          { id: 'done', say: 'Done.', end: 'completed' as const },
        ],
      },
    ],
  });
  const f = appFixture(databases[0], { agents: { ok: collectAgent(['^[A-Z]{2}-[0-9]{1,8}$']) } });
  const put = (slug: string, def: object) => request(f.app.app).put(`/api/v1/agents/${slug}`).set(T).send(def);

  it('refuses a linear-time but huge pattern at PUT, before compiling it', async () => {
    const huge = '.{0,1000}'.repeat(55);
    expect(huge.length).toBe(495);
    const res = await put('huge', collectAgent([huge]));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'capabilities.c.phases.p0.collect.pattern', message: expect.stringMatching(/^pattern too large: /) }]);
    const program = await put('program', collectAgent(['(?:[a-z]+[0-9]*){0,60}x{0,100}']));
    expect(program.body.errors[0].message).toMatch(/pattern too large: the pattern compiles to \d+ instructions, more than 500/);
    const tool = await put('tool', toolAgent({ type: 'object', properties: { q: { type: 'string', pattern: huge } } }));
    expect(tool.body.errors[0]).toMatchObject({ path: 'actions.lookup.parameters', message: expect.stringMatching(/repetition counts are too large/) });
  });

  it('refuses a definition whose patterns are each allowed but together too costly', async () => {
    const res = await put('many', collectAgent(Array.from({ length: 120 }, (_, i) => `^${'ab'.slice(i % 2)}{0,80}c{0,80}d$`)));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '(root)', message: expect.stringMatching(/patterns together are too large/) }]);
  });

  it('holds test expectations to the same rules, as a failed expectation rather than work', async () => {
    const res = await request(f.app.app)
      .post('/api/v1/agents/ok/tests')
      .set(T)
      .send({ tests: [{ name: 't', steps: [{ user: 'go now', expect: { reply: `/${'.{0,1000}'.repeat(55)}/` } }] }] });
    expect(res.status).toBe(200);
    expect(res.body.results[0].steps[0].failures).toEqual([expect.stringMatching(/is not a valid pattern \(.*a pattern may be at most|too large/)]);
  });
});

eachDatabase('the shared model server on $name', (database) => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(async () => llm?.close());
  const helper = (instructions = 'Help the customer.', model?: string) => ({
    name: 'Helper',
    ...(model ? { llm: { model } } : {}),
    capabilities: [
      { name: 'help', examples: ['help me', 'i need help', 'can you help', 'support please', 'assist me'], phases: [{ id: 'g', generate: { instructions } }] },
    ],
  });
  const f = appFixture(database, {
    config: () => ({
      llm: {
        url: llm.url,
        model: 'fake-model',
        models: ['cheap-model'],
        timeoutMs: 10_000,
        maxRetries: 0,
        maxTokensPerConversation: 8_000,
        tenantDailyTokens: 6_000,
        maxInputTokens: 4_000,
        concurrency: { total: 4, perTenant: 2 },
      },
    }),
  });
  const put = (tenant: string, slug: string, def: object) => request(f.app.app).put(`/api/v1/agents/${slug}`).set('tenant-id', tenant).send(def);
  const say = (tenant: string, slug: string, message = 'help me') =>
    request(f.app.app).post(`/api/v1/agents/${slug}/converse`).set('tenant-id', tenant).send({ message }).expect(200);
  const errorsOf = async (tenant: string, slug: string, id: string) =>
    (await request(f.app.app).get(`/api/v1/agents/${slug}/conversations/${id}/audit-logs?type=error`).set('tenant-id', tenant)).body.data.map(
      (e: { data: { code: string; message: string } }) => e.data,
    );

  it('refuses a model the operator does not offer, at PUT and at call time, and allows those it does', async () => {
    const res = await put('acme', 'pricey', helper(undefined, 'gpt-most-expensive'));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'llm.model', message: expect.stringMatching(/not offered by this server .*fake-model, cheap-model/) }]);
    expect((await put('acme', 'cheap', helper(undefined, 'cheap-model'))).status).toBe(200);
  });

  it('refuses a call whose input is over the cap, or whose reservation does not fit the conversation, before making it', async () => {
    llm.reset();
    await put('acme', 'long', helper(`Help. ${'Remember this policy text. '.repeat(700)}`)).expect(200);
    const r = await say('acme', 'long');
    expect(llm.calls).toHaveLength(0);
    expect(await errorsOf('acme', 'long', r.body.conversation_id)).toEqual([
      { code: 'llm_budget_exceeded', message: expect.stringMatching(/more than LLM_MAX_INPUT_TOKENS \(4000\)/), capability: 'help', phase: 'g' },
    ]);
    // About 3,000 tokens sent a call: the first fits the conversation's 8,000; after it spent 6,100 the second's reservation does not.
    await put('acme', 'mid', helper(`Help. ${'Remember this policy text. '.repeat(440)}`)).expect(200);
    llm.script({ text: 'First answer.', usage: { prompt: 6000, completion: 100 } });
    const first = await say('acme', 'mid');
    expect(first.body.response.message).toBe('First answer.');
    const second = await request(f.app.app)
      .post('/api/v1/agents/mid/converse')
      .set('tenant-id', 'acme')
      .send({ message: 'and another thing', conversation_id: first.body.conversation_id })
      .expect(200);
    expect(llm.calls).toHaveLength(1);
    expect(second.body.response.message).not.toBe('');
    expect(await errorsOf('acme', 'mid', first.body.conversation_id)).toEqual([
      {
        code: 'llm_budget_exceeded',
        message: expect.stringMatching(/1900 of its 8000 model tokens left; this call could spend up to \d+/),
        capability: 'help',
        phase: 'g',
      },
    ]);
  });

  it("charges concurrent calls against the tenant's day before they are made, so the day is never overrun", async () => {
    llm.reset();
    await put('burst', 'helper', helper()).expect(200);
    llm.script(...Array.from({ length: 12 }, () => ({ text: 'ok', delayMs: 150, usage: { prompt: 50, completion: 450 } })));
    const replies = await Promise.all(Array.from({ length: 12 }, () => say('burst', 'helper')));
    const answered = replies.filter((r) => r.body.response.message === 'ok').length;
    const row = await f.db.knex('llm_usage').where({ tenant_id: 'burst' }).first();
    expect(Number(row.tokens)).toBeLessThanOrEqual(6_000);
    expect(Number(row.tokens)).toBe(answered * 500);
    expect(llm.calls.length).toBe(answered);
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThan(12);
  });

  it("serves tenants in turn: one tenant's burst holds its own share of the model server, not another's call", async () => {
    llm.reset();
    await put('noisy', 'helper', helper()).expect(200);
    await put('quiet', 'helper', helper()).expect(200);
    llm.script(...Array.from({ length: 9 }, () => ({ text: 'noisy', delayMs: 200, usage: { prompt: 10, completion: 10 } })));
    const burst = Array.from({ length: 8 }, () => say('noisy', 'helper', 'help me'));
    await new Promise((r) => setTimeout(r, 50));
    const quiet = await say('quiet', 'helper', 'i need help');
    expect(quiet.body.response.message).toBe('noisy');
    await Promise.all(burst);
    // The quiet tenant's call was among the first made after it arrived, not behind the burst.
    const order = llm.calls.map((c) => c.body.messages.at(-1).content as string);
    expect(order.indexOf('i need help')).toBeLessThanOrEqual(2);
    expect(llm.maxInFlight()).toBeLessThanOrEqual(3);
  });
});

describe('knowledge', () => {
  const f = appFixture(databases[0]);
  it('refuses knowledge over 2,000,000 characters at PUT, naming the limit', async () => {
    const doc = (i: number) => ({ id: `doc-${i}`, text: `# Part ${i}\n\n${'Our returns policy covers many cases. '.repeat(5_000)}` });
    const res = await request(f.app.app)
      .put('/api/v1/agents/kb')
      .set(T)
      .send({ ...toolAgent({ type: 'object' }), knowledge: Array.from({ length: 11 }, (_, i) => doc(i)) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'knowledge', message: expect.stringMatching(/more than 2000000/) }]);
  });
});

eachDatabase('test conversations and replays on $name', (database) => {
  const HEAVY = '{% for i in (1..9000000) %}{% endfor %}Hi.';
  const greeter = (say: string) => ({
    name: 'G',
    capabilities: [{ name: 'hi', examples: ['hello', 'hi there', 'good morning', 'hey', 'greetings'], phases: [{ id: 'a', say }] }],
  });
  const f = appFixture(database, { agents: { g: greeter('Hi.') } });
  const app = () => request(f.app.app);

  it('runs tests within the tenant’s rendering share, yielding between steps, so the server answers meanwhile', async () => {
    const draft = (await app().put('/api/v1/agents/g?activate=false').set(T).send(greeter(HEAVY)).expect(200)).body.stored_version;
    const done: string[] = [];
    const tests = Array.from({ length: 40 }, (_, i) => ({ name: `t${i}`, steps: [{ user: 'hello' }] }));
    const run = app()
      .post('/api/v1/agents/g/tests')
      .set(T)
      .send({ version: draft, tests })
      .then((r) => (done.push('tests'), r));
    await new Promise((r) => setTimeout(r, 30));
    await app().get('/healthz').expect(200);
    done.push('healthz');
    const res = await run;
    expect(res.status).toBe(200);
    expect(done).toEqual(['healthz', 'tests']);
    // Every turn that spent the budget says so; none renders an empty reply.
    for (const r of res.body.results) {
      expect(r.steps[0].actual.status).toBe('escalated');
      expect(r.steps[0].actual.reply).not.toBe('');
    }
  });

  it('refuses more than 1,000 test steps in one request', async () => {
    const tests = Array.from({ length: 11 }, (_, i) => ({ name: `t${i}`, steps: Array.from({ length: 100 }, () => ({ user: 'hello' })) }));
    const res = await app().post('/api/v1/agents/g/tests').set(T).send({ tests });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'tests', message: expect.stringMatching(/at most 1000 steps/) }]);
  });

  it('replays a long conversation turn by turn within the share, answering the server meanwhile', async () => {
    // A tenant of its own: the tests above spent acme's rendering share.
    const R = { 'tenant-id': 'replayer' };
    await app().put('/api/v1/agents/g').set(R).send(greeter('Hi.')).expect(200);
    const first = (await app().post('/api/v1/agents/g/converse').set(R).send({ message: 'hello' }).expect(200)).body.conversation_id;
    for (let i = 0; i < 120; i++) await app().post('/api/v1/agents/g/converse').set(R).send({ message: 'hello', conversation_id: first }).expect(200);
    // Each replayed turn renders for milliseconds, well within a turn's budget even on a busy machine, and says what was
    // recorded: no difference stops the replay early, so it runs for over a hundred turns.
    const draft = (await app().put('/api/v1/agents/g?activate=false').set(R).send(greeter('{% for i in (1..100000) %}{% endfor %}Hi.')).expect(200)).body
      .stored_version;
    const started = await app()
      .post('/api/v1/agents/g/replays')
      .set(R)
      .send({ version: draft, conversations: [first] })
      .expect(202);
    await app().get('/healthz').expect(200);
    const meanwhile = await app().get(`/api/v1/agents/g/replays/${started.body.id}`).set(R).expect(200);
    expect(meanwhile.body.status).toBe('running');
    let r = meanwhile.body;
    await waitUntil(
      'the replay to finish',
      async () => (r = (await app().get(`/api/v1/agents/g/replays/${started.body.id}`).set(R)).body).status !== 'running',
      30_000,
      50,
    );
    expect(r.status).toBe('done');
    expect(r.summary.conversations).toBe(1);
  });
});
