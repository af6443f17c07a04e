// Personal data masked before it is kept or sent, on every database: an agent with a privacy
// policy runs its turn on the real values (a slot, an action's request, the live reply), while
// every table of the database holds only the masked form and the audit chain over it verifies;
// a generative phase's every model call, the tool loop's included, sees masked text only.
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import * as tracer from '../../server/src/lib/tracer.js';
import request from 'supertest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';
import { pino } from 'pino';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };
const EMAIL = 'jane.doe@example.com';
const CARD = '4111 1111 1111 1111';
const PHONE = '+44 20 7946 0958';
const IBAN = 'DE89 3704 0044 0532 0130 00';
/** Every form a value could be kept in. */
const VALUES = [EMAIL, encodeURIComponent(EMAIL), CARD, CARD.replace(/ /g, ''), PHONE, '2079460958', IBAN, IBAN.replace(/ /g, '')];

const privacy = { mask: { email: 'redact', phone: { keep_last: 4 }, card: { keep_last: 4 }, iban: 'redact' } } as const;

const contactDesk = (base: string): AgentDefinitionInput => ({
  name: 'Contact desk',
  privacy,
  routing: { fallback: 'contact' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    {
      name: 'contact',
      phases: [
        { id: 'ask', say: 'Which e-mail address should we write to?', collect: { slot: 'email', type: 'email' }, next: 'save' },
        { id: 'save', call: 'save_contact', next: 'done' },
        { id: 'done', say: 'Saved: we will write to {{ slots.email }}. Order 100001 is on its way.', end: 'completed' },
      ],
    },
  ],
  actions: {
    // The address in the URL as well: a trace shows the URL an action called.
    save_contact: { type: 'http', method: 'POST', url: `${base}/contacts?email={{ slots.email | url_encode }}`, body: { email: '{{ slots.email }}' } },
  },
  webhooks: [{ url: `${base}/hooks`, events: ['conversation.completed'] }],
});

const assistant = (base: string): AgentDefinitionInput => ({
  name: 'Assistant',
  privacy,
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    {
      name: 'orders',
      examples: ['where is my order', 'my order has not arrived', 'order status please', 'track my parcel', 'when will my order come'],
      phases: [{ id: 'assist', generate: { instructions: 'Help with orders.', tools: ['get_order', 'send_receipt', 'log_note'], max_steps: 3 } }],
    },
  ],
  actions: {
    get_order: {
      type: 'http',
      description: 'Look up an order by its number',
      parameters: { type: 'object', properties: { order_id: { type: 'string', pattern: '^[0-9]{6}$' } }, required: ['order_id'], additionalProperties: false },
      method: 'GET',
      url: `${base}/orders/{{ args.order_id }}`,
    },
    // Takes the real values behind the placeholders the model was shown; log_note does not.
    send_receipt: {
      type: 'http',
      description: 'E-mail the receipt',
      parameters: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'], additionalProperties: false },
      method: 'POST',
      url: `${base}/receipts`,
      body: { email: '{{ args.email }}' },
      real_values: true,
    },
    log_note: {
      type: 'http',
      description: 'Note something about the customer',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      method: 'POST',
      url: `${base}/notes`,
      body: { text: '{{ args.text }}' },
    },
  },
});

// An action whose result, saved in the state, is too long for the detectors to read in a turn.
const reports = (base: string): AgentDefinitionInput => ({
  name: 'Reports',
  privacy: { mask: { phone: 'redact' }, phone_regions: ['GB'] },
  routing: { fallback: 'report' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    {
      name: 'report',
      phases: [
        { id: 'fetch', call: 'get_report', next: 'done' },
        { id: 'done', say: 'Your report has {{ slots.report | size }} characters.', end: 'completed' },
      ],
    },
  ],
  actions: { get_report: { type: 'http', method: 'GET', url: `${base}/report`, save: { report: 'body.report' } } },
});
const REPORT = 'Call 020 7946 0958. '.repeat(4000);

// No detector policy: a slot marked sensitive is enough.
const kyc: AgentDefinitionInput = {
  name: 'Identity check',
  routing: { fallback: 'verify' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    {
      name: 'verify',
      phases: [
        { id: 'ask', say: 'What is your date of birth?', collect: { slot: 'date_of_birth', type: 'text', sensitive: true }, next: 'thanks' },
        { id: 'thanks', say: 'Thank you, {{ slots.date_of_birth }} is noted.', end: 'completed' },
      ],
    },
  ],
};

eachDatabase('privacy masking on $name', (database) => {
  let backend: Backend;
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
    backend = await startBackend((req, res) => {
      if (req.url?.startsWith('/contacts')) return json(res, 201, { saved: true });
      if (req.url?.startsWith('/report')) return json(res, 200, { report: REPORT });
      // The order's record holds the customer's contact details: a tool result full of them.
      return json(res, 200, { order_id: '100001', status: 'shipped', email: EMAIL, phone: PHONE, card_used: CARD });
    });
  });
  afterAll(async () => {
    await llm?.close();
    await backend?.close();
  });
  // Every log line, at debug level.
  const logLines: string[] = [];
  const f = appFixture(database, {
    logger: pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) }),
    config: () => ({
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 2000, maxRetries: 0, maxTokensPerConversation: 0, tenantDailyTokens: 0 },
      actionAllowedHosts: { acme: [`127.0.0.1:${backend.port}`] },
    }),
    agents: () => ({ contact: contactDesk(backend.url), assistant: assistant(backend.url), kyc, reports: reports(backend.url) }),
  });
  const api = () => request(f.app.app);

  /** The tables (and columns) where any of VALUES is kept: none, when masking works. */
  async function leaks(): Promise<string[]> {
    const out: string[] = [];
    for (const [table, rows] of await everything()) {
      const text = JSON.stringify(rows, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : v));
      for (const v of VALUES) if (text.includes(v)) out.push(`${table}: ${v}`);
    }
    return out;
  }

  /** Every row of every table. */
  async function everything(): Promise<[string, unknown[]][]> {
    const knex = f.db.knex;
    const tables: string[] =
      database.name === 'sqlite'
        ? ((await knex.raw("select name from sqlite_master where type = 'table'")) as { name: string }[]).map((r) => r.name)
        : ((await knex.raw('select tablename from pg_tables where schemaname = current_schema()')) as { rows: { tablename: string }[] }).rows.map(
            (r) => r.tablename,
          );
    expect(tables).toContain('turns');
    const dump: [string, unknown[]][] = [];
    for (const t of tables) dump.push([t, await knex(t).select('*')]);
    return dump;
  }

  let conversation: string;

  it('runs the turn on the real values and keeps only the masked ones, in every table', async () => {
    const first = await api()
      .post('/api/v1/agents/contact/converse')
      .set(T)
      .send({ message: `I need to update my details: card ${CARD} was charged twice, call me on ${PHONE}, refunds to ${IBAN}` });
    expect(first.status).toBe(200);
    conversation = first.body.conversation_id;
    const second = await api().post('/api/v1/agents/contact/converse').set(T).send({ conversation_id: conversation, message: EMAIL });
    expect(second.status).toBe(200);
    // The turn used the real address: the action received it, and the live reply says it.
    expect(JSON.parse(backend.requests.find((r) => r.url!.startsWith('/contacts'))!.body)).toEqual({ email: EMAIL });
    expect(second.body.response.message).toBe(`Saved: we will write to ${EMAIL}. Order 100001 is on its way.`);

    expect(await leaks()).toEqual([]);
    const history = (await api().get(`/api/v1/agents/contact/conversations/${conversation}`).set(T).expect(200)).body;
    const said = history.turns.map((t: { message: string }) => t.message);
    expect(said).toEqual([
      'I need to update my details: card [CARD …1111] was charged twice, call me on [PHONE …0958], refunds to [IBAN]',
      'Which e-mail address should we write to?',
      '[EMAIL]',
      // A business identifier is no phone number: the order's number stays.
      'Saved: we will write to [EMAIL]. Order 100001 is on its way.',
    ]);
  });

  it('replays a masked conversation as it went: a placeholder answers the slot it masked', async () => {
    const started = await api()
      .post('/api/v1/agents/contact/replays')
      .set(T)
      .send({ version: 1, conversations: [conversation] })
      .expect(202);
    let r = started.body;
    while (r.status === 'running') {
      await new Promise((res) => setTimeout(res, 20));
      r = (await api().get(`/api/v1/agents/contact/replays/${started.body.id}`).set(T).expect(200)).body;
    }
    expect(r.summary, JSON.stringify(r)).toMatchObject({ conversations: 1, identical: 1, changed: 0, errors: 0 });
    // A live turn takes no placeholder for a value: it asks again.
    const open = (await api().post('/api/v1/agents/contact/converse').set(T).send({ message: 'update my details' }).expect(200)).body.conversation_id;
    const live = (await api().post('/api/v1/agents/contact/converse').set(T).send({ conversation_id: open, message: '[EMAIL]' }).expect(200)).body;
    expect(live.response.message).toBe("Sorry, I didn't get that.\nWhich e-mail address should we write to?");
  });

  it('says in the turn what it masked, by type and count, and the chain over what is kept verifies', async () => {
    const audit = (await api().get(`/api/v1/agents/contact/conversations/${conversation}/audit-logs?type=turn_timing`).set(T).expect(200)).body.data;
    expect(audit.map((e: { data: { masked?: unknown } }) => e.data.masked)).toEqual([{ card: 1, phone: 1, iban: 1 }, { email: 2 }]);
    const verified = (await api().get(`/api/v1/agents/contact/conversations/${conversation}/audit-logs/verify`).set(T).expect(200)).body;
    expect(verified).toMatchObject({ valid: true });
    const metrics = (await api().get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/^switchboard_pii_masked_total\{[^}]*agent="contact",type="email"[^}]*\} 2$/m);
    expect(metrics).toMatch(/^switchboard_pii_masked_total\{[^}]*agent="contact",type="card"[^}]*\} 1$/m);
  });

  it("masks every model call of a generative phase, the tool loop's result included", async () => {
    llm.reset();
    llm.script({ toolCalls: [{ name: 'get_order', arguments: { order_id: '100001' } }] }, { text: 'Your order 100001 has shipped.' });
    const r = await api()
      .post('/api/v1/agents/assistant/converse')
      .set(T)
      .send({ message: `where is my order? my email is ${EMAIL} and card ${CARD}` });
    expect(r.status).toBe(200);
    expect(r.body.response.message).toBe('Your order 100001 has shipped.');
    expect(llm.calls).toHaveLength(2);
    const sent = JSON.stringify(llm.calls.map((c) => c.body));
    for (const v of VALUES) expect(sent, v).not.toContain(v);
    // The model saw the placeholders, in the user's message and in the tool's result.
    // Numbered: one value has one placeholder in all the turn's calls.
    expect(JSON.stringify(llm.calls[0].body.messages)).toContain('my email is [EMAIL_1] and card [CARD_1 …1111]');
    expect(JSON.stringify(llm.calls[1].body.messages)).toContain('[PHONE_1 …0958]');
    expect(JSON.stringify(llm.calls[1].body.messages)).toContain('"email\\":\\"[EMAIL_1]');
    expect(await leaks()).toEqual([]);
  });

  it('gives a tool that takes real values the value behind its placeholder, and any other tool the placeholder', async () => {
    llm.reset();
    llm.script(
      {
        toolCalls: [
          { name: 'send_receipt', arguments: { email: '[EMAIL_1]' } },
          { name: 'log_note', arguments: { text: 'receipt asked for at [EMAIL_1]' } },
        ],
      },
      { text: 'The receipt is on its way.' },
    );
    backend.requests.length = 0;
    const r = await api()
      .post('/api/v1/agents/assistant/converse')
      .set(T)
      .send({ message: `where is my order? send the receipt to ${EMAIL}` });
    expect(r.status).toBe(200);
    expect(JSON.stringify(llm.calls[0].body.messages)).toContain(`send the receipt to [EMAIL_1]`);
    expect(JSON.parse(backend.requests.find((q) => q.url === '/receipts')!.body)).toEqual({ email: EMAIL });
    expect(JSON.parse(backend.requests.find((q) => q.url === '/notes')!.body)).toEqual({ text: 'receipt asked for at [EMAIL_1]' });
    // What the model was sent after the tools ran holds no value either, and nothing kept does.
    expect(JSON.stringify(llm.calls[1].body)).not.toContain(EMAIL);
    expect(await leaks()).toEqual([]);
  });

  it("keeps a sensitive slot's answer masked, whatever its form, while the turn uses it", async () => {
    const first = (await api().post('/api/v1/agents/kyc/converse').set(T).send({ message: 'I need to verify my account' }).expect(200)).body;
    const second = (
      await api().post('/api/v1/agents/kyc/converse').set(T).send({ conversation_id: first.conversation_id, message: '12 March 1985' }).expect(200)
    ).body;
    expect(second.response.message).toBe('Thank you, 12 March 1985 is noted.');
    const kept = (await api().get(`/api/v1/agents/kyc/conversations/${first.conversation_id}`).set(T).expect(200)).body;
    expect(kept.turns.slice(2).map((t: { message: string }) => t.message)).toEqual(['[DATE_OF_BIRTH]', 'Thank you, [DATE_OF_BIRTH] is noted.']);
    const leaked = (await everything()).filter(([, rows]) => JSON.stringify(rows).includes('12 March 1985')).map(([t]) => t);
    expect(leaked).toEqual([]);
    const audit = (await api().get(`/api/v1/agents/kyc/conversations/${first.conversation_id}/audit-logs?type=turn_timing`).set(T).expect(200)).body.data;
    expect(audit.at(-1).data.masked).toEqual({ sensitive: 2 });
  });

  it("keeps a person's reply masked, and answers with it as written", async () => {
    const open = (await api().post('/api/v1/agents/contact/converse').set(T).send({ message: 'hello' }).expect(200)).body.conversation_id as string;
    const r = await api()
      .post(`/api/v1/agents/contact/conversations/${open}/messages`)
      .set(T)
      .send({ message: `We refunded ${IBAN}; reach us on ${PHONE}` })
      .expect(201);
    expect(r.body.turn.message).toBe(`We refunded ${IBAN}; reach us on ${PHONE}`);
    const kept = (await api().get(`/api/v1/agents/contact/conversations/${open}`).set(T).expect(200)).body;
    expect(kept.turns.at(-1).message).toBe('We refunded [IBAN]; reach us on [PHONE …0958]');
    expect(await leaks()).toEqual([]);
    const verified = (await api().get(`/api/v1/agents/contact/conversations/${open}/audit-logs/verify`).set(T).expect(200)).body;
    expect(verified).toMatchObject({ valid: true });
  });

  it('lets a test conversation assert what is kept, and says what differs', async () => {
    const r = await api()
      .post('/api/v1/agents/contact/tests')
      .set(T)
      .send({
        tests: [
          {
            name: 'masked',
            actions: { save_contact: { status: 201, body: {} } },
            steps: [
              { user: `card ${CARD}, phone ${PHONE}`, expect: { kept: 'card [CARD …1111], phone [PHONE …0958]', masked: { card: 1, phone: 1, email: 0 } } },
              { user: EMAIL, expect: { kept: EMAIL, masked: { email: 1 } } },
            ],
          },
        ],
      })
      .expect(200);
    const [first, second] = r.body.results[0].steps;
    expect(first).toMatchObject({ passed: true, actual: { kept: 'card [CARD …1111], phone [PHONE …0958]', masked: { card: 1, phone: 1 } } });
    // The address is masked in the message and in the reply that repeats it: the test's expectations were wrong.
    expect(second.failures).toEqual([`kept: expected ${EMAIL}, got "[EMAIL]"`, 'masked.email: expected 1, got 2']);
  });

  it('sends none of the values in a webhook, a log line at debug level, or a traced URL', async () => {
    const sent = await f.app.webhooks.runOnce();
    expect(sent.delivered).toBeGreaterThan(0);
    const hooks = backend.requests.filter((r) => r.url === '/hooks');
    expect(hooks.length).toBeGreaterThan(0);
    for (const v of VALUES) expect(hooks.map((h) => h.body).join('\n'), v).not.toContain(v);
    expect(logLines.length).toBeGreaterThan(10);
    for (const v of VALUES) expect(logLines.join(''), v).not.toContain(v);
    // The URL a trace shows for the action's call, as http-action.ts gives it to the tracer.
    const traced: string[] = [];
    const runs = vi.spyOn(tracer, 'withRedactedUrl').mockImplementation((url, fn) => (traced.push(url), fn()));
    try {
      const open = (await api().post('/api/v1/agents/contact/converse').set(T).send({ message: 'update my details' }).expect(200)).body.conversation_id;
      await api().post('/api/v1/agents/contact/converse').set(T).send({ conversation_id: open, message: EMAIL }).expect(200);
    } finally {
      runs.mockRestore();
    }
    expect(traced).toEqual([`${backend.url}/contacts?email=[EMAIL]`]);
  });

  it('keeps a text too long to read unread, and says so, rather than keep it unmasked', async () => {
    const r = (await api().post('/api/v1/agents/reports/converse').set(T).send({ message: 'my report please' }).expect(200)).body;
    expect(r.response.message).toBe(`Your report has ${REPORT.length} characters.`);
    const kept = (await api().get(`/api/v1/agents/reports/conversations/${r.conversation_id}`).set(T).expect(200)).body;
    expect(kept.slots.report).toBe(`[UNREAD: ${REPORT.length} characters]`);
    const audit = (await api().get(`/api/v1/agents/reports/conversations/${r.conversation_id}/audit-logs`).set(T).expect(200)).body.data;
    expect(audit.filter((e: { type: string }) => e.type === 'error').map((e: { data: { code: string } }) => e.data.code)).toContain('masking_budget_exceeded');
    expect(audit.find((e: { type: string }) => e.type === 'turn_timing').data.masked.unread).toBeGreaterThanOrEqual(1);
    const rows = (await everything()).filter(([, rowsOf]) => JSON.stringify(rowsOf).includes('020 7946 0958')).map(([t]) => t);
    expect(rows).toEqual([]);
  });

  it('refuses a phone region it does not know', async () => {
    const def = { ...contactDesk(backend.url), privacy: { ...privacy, phone_regions: ['XX'] } };
    const r = await api().put('/api/v1/agents/bad').set(T).send(def).expect(400);
    expect(r.body.errors).toContainEqual({ path: 'privacy.phone_regions[0]', message: '"XX" is not a region whose phone numbers are known' });
  });
});
