// Knowledge sources end to end, on every database: real PDF, DOCX, HTML and Markdown files
// uploaded as multipart, read in a worker, their passages listed with pages and headings; an
// agent's answer phase quoting and citing them, abstaining (and handing off) when they do not
// say; replacement, deletion and tenants kept apart; hostile files refused with the reason.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { docx, manyPages, pdf, zipBomb } from '../helpers/documents.js';
import { testConfig } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

warnIfPostgresSkipped();
const run = promisify(execFile);

const T = { 'tenant-id': 'acme' };

const HELP = [
  {
    heading: 'Shipping',
    paragraphs: [
      'Orders leave our warehouse within two business days. Standard delivery takes three to five business days after dispatch.',
      'Express delivery arrives the next business day when ordered before 2 pm.',
    ],
  },
  {
    heading: 'Refunds',
    paragraphs: [
      'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.',
      'Store credit is issued at once if you prefer it.',
    ],
  },
  {
    heading: 'Returns',
    paragraphs: ['Items can be returned within 30 days of delivery. Print the prepaid label from your account and drop the parcel at any post office.'],
  },
];

// Greetings are routed; every other message goes to the documents (the agent's fallback capability).
const agent = {
  name: 'Helpdesk',
  knowledge_sources: ['help-centre', { tag: 'policies' }],
  routing: { fallback: 'docs' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello! Ask me anything.' }] },
    { name: 'docs', phases: [{ id: 'answer', answer: { not_found: 'escalate' } }] },
  ],
};

const base = testConfig().knowledge;

eachDatabase('knowledge sources on $name', (database) => {
  const f = appFixture(database, {
    agents: { helpdesk: agent },
    config: {
      knowledge: {
        ...base,
        maxFileBytes: 2_000_000,
        maxSources: 8,
        read: { ...base.read, limits: { ...base.read.limits, maxPages: 40, maxInflatedBytes: 5_000_000, maxDepth: 400 } },
      },
    },
  });
  const client = clientFixture(f);
  const api = () => request(f.app.app);

  const upload = (name: string, bytes: Uint8Array, filename: string, fields: Record<string, string> = {}, tenant = 'acme') => {
    const r = api().put(`/api/v1/knowledge/sources/${name}`).set('tenant-id', tenant);
    for (const [k, v] of Object.entries(fields)) void r.field(k, v);
    return r.attach('file', Buffer.from(bytes), filename);
  };
  const settled = async (name: string, tenant = 'acme') => {
    await f.app.knowledge.idle();
    return (await api().get(`/api/v1/knowledge/sources/${name}`).set('tenant-id', tenant).expect(200)).body;
  };
  const say = async (message: string) => (await api().post('/api/v1/agents/helpdesk/converse').set(T).send({ message }).expect(200)).body;

  it('reads a PDF into passages that keep their page and heading, and answers from it with a citation', async () => {
    const put = await upload('help-centre', await pdf(HELP, 'Acme help centre'), 'help.pdf', {
      url: 'https://help.example.com/help.pdf',
      language: 'en',
      tags: 'help, faq',
    }).expect(202);
    expect(put.body).toMatchObject({ name: 'help-centre', state: 'parsing', revision: 1, tags: ['help', 'faq'], filename: 'help.pdf' });
    const source = await settled('help-centre');
    expect(source).toMatchObject({ state: 'indexed', kind: 'pdf', pages: 3, title: 'Acme help centre', error: null, url: 'https://help.example.com/help.pdf' });
    expect(source.passages).toBeGreaterThanOrEqual(3);
    const passages = (await api().get('/api/v1/knowledge/sources/help-centre/passages').set(T).expect(200)).body.data;
    const refunds = passages.find((p: { text: string }) => p.text.startsWith('Refunds go back'));
    expect(refunds).toMatchObject({ page: 2, heading: 'Refunds', source: 'help-centre' });
    // Every passage is on the page its heading is on here: one heading a page.
    expect(passages.map((p: { page: number; heading: string }) => [p.page, p.heading])).toEqual(
      passages.map((p: { page: number }) => [p.page, HELP[p.page - 1].heading]),
    );

    const r = await say('how long does a refund take to reach my card?');
    expect(r.response.message).toBe(
      'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.\n\nSource: Acme help centre, page 2 (https://help.example.com/help.pdf)',
    );
    expect(r.response.citations).toEqual([
      {
        source: 'help-centre',
        title: 'Acme help centre',
        url: 'https://help.example.com/help.pdf',
        page: 2,
        heading: 'Refunds',
        passage_id: refunds.id,
        snippet: 'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.',
      },
    ]);
    expect(r.state.status).toBe('active');
    const audit = (await api().get(`/api/v1/agents/helpdesk/conversations/${r.conversation_id}/audit-logs?type=knowledge_search`).set(T).expect(200)).body.data;
    expect(audit).toHaveLength(1);
    expect(audit[0].data).toMatchObject({ mode: 'answer', sources: ['help-centre'], answered: true, min_confidence: 0.7 });
    expect(audit[0].data.passages[0]).toMatchObject({ id: refunds.id });
    expect(audit[0].data.passages[0].confidence).toBeGreaterThanOrEqual(0.7);
    // The citations are kept with the turn: the history (through the typed client) and the event stream carry them.
    const history = await client.sb.api.getHistory({ params: { slug: 'helpdesk', id: r.conversation_id } });
    expect(history.status === 200 && history.body.turns.at(-1)?.citations).toEqual(r.response.citations);
    const stream = await openSse(`${client.url}/api/v1/agents/helpdesk/conversations/${r.conversation_id}/events`, { ...T, 'last-event-id': '0-0' });
    const [user, answer] = await stream.take(2);
    stream.close();
    expect(JSON.parse(user.data!).citations).toBeUndefined();
    expect(JSON.parse(answer.data!).citations).toEqual(r.response.citations);
  });

  it('hands off a question the documents do not answer, and says so in the audit', async () => {
    const r = await say('do you repair broken espresso machines under warranty?');
    expect(r.state.status).toBe('escalated');
    expect(r.response.citations).toBeUndefined();
    const audit = (await api().get(`/api/v1/agents/helpdesk/conversations/${r.conversation_id}/audit-logs`).set(T).expect(200)).body.data;
    const search = audit.find((e: { type: string }) => e.type === 'knowledge_search');
    expect(search.data.answered).toBe(false);
    expect(audit.findLast((e: { type: string }) => e.type === 'status_change').data).toMatchObject({ to: 'escalated', reason: 'knowledge_not_found' });
    // The question is in the review inbox as one the documents do not answer.
    const inbox = await client.sb.api.listReview({ params: { slug: 'helpdesk' }, query: { reason: 'unanswered' } });
    if (inbox.status !== 200) throw new Error(JSON.stringify(inbox.body));
    expect(inbox.body.counts.unanswered).toEqual({ items: 1, messages: 1 });
    expect(inbox.body.data[0]).toMatchObject({ reason: 'unanswered', message: 'do you repair broken espresso machines under warranty?', capability: 'docs' });
    expect(inbox.body.data[0].occurrences[0].detail).toMatchObject({ sources: ['help-centre'], min_confidence: 0.7 });
    expect((inbox.body.data[0].occurrences[0].detail.best_confidence as number | null) ?? 0).toBeLessThan(0.7);
  });

  it('reads Word documents, HTML and Markdown with their headings, and selects sources by tag', async () => {
    await upload(
      'warranty',
      await docx([
        { heading: 'Warranty', paragraphs: ['Espresso machines carry a two year warranty. We repair broken espresso machines free of charge under warranty.'] },
      ]),
      'warranty.docx',
      { tags: 'policies' },
    ).expect(202);
    await upload(
      'page',
      new TextEncoder().encode(
        '<!doctype html><html><head><title>Gift cards</title></head><body><nav>Home | Shop</nav><article><h1>Gift cards</h1><p>Gift cards never expire and can be used online or in any of our shops across the country, for any product we sell.</p><h2>Balance</h2><p>Check the balance of a gift card on the gift card page with its number and PIN, at any time, free of charge.</p></article></body></html>',
      ),
      'gift.html',
    ).expect(202);
    await upload('notes', new TextEncoder().encode('# Opening hours\n\nOur shops open at 9 am and close at 6 pm, Monday to Saturday.\n'), 'notes.md').expect(
      202,
    );
    expect(await settled('warranty')).toMatchObject({ state: 'indexed', kind: 'docx', pages: null });
    expect(await settled('page')).toMatchObject({ state: 'indexed', kind: 'html', title: 'Gift cards' });
    expect(await settled('notes')).toMatchObject({ state: 'indexed', kind: 'markdown', title: 'Opening hours' });
    const w = (await api().get('/api/v1/knowledge/sources/warranty/passages').set(T).expect(200)).body.data;
    expect(w[0]).toMatchObject({ heading: 'Warranty', page: null });
    const g = (await api().get('/api/v1/knowledge/sources/page/passages').set(T).expect(200)).body.data;
    expect(g.map((p: { heading: string }) => p.heading)).toEqual(['Gift cards', 'Balance']);
    expect(g.map((p: { text: string }) => p.text).join(' ')).not.toContain('Home | Shop');

    // The agent reads help-centre and the sources tagged policies: the warranty now answers…
    const r = await say('do you repair broken espresso machines under warranty?');
    expect(r.state.status).toBe('active');
    expect(r.response.citations[0]).toMatchObject({ source: 'warranty', heading: 'Warranty', page: null, url: null });
    expect(r.response.message).toBe(
      'Espresso machines carry a two year warranty. We repair broken espresso machines free of charge under warranty.\n\nSource: Warranty',
    );
    // …but not the gift card page, which it does not name.
    expect((await say('do gift cards expire?')).state.status).toBe('escalated');
    // The search endpoint reads every source, or those named.
    const all = await client.sb.api.searchKnowledge({ query: { q: 'do gift cards expire?' } });
    expect(all.status === 200 && all.body.data[0]).toMatchObject({ source: 'page', heading: 'Gift cards' });
    const some = await client.sb.api.searchKnowledge({ query: { q: 'do gift cards expire?', sources: 'help-centre,tag:policies' } });
    expect(some.status === 200 && some.body.data.every((h) => h.source !== 'page')).toBe(true);
    const tagged = await client.sb.api.listSources({ query: { tag: 'policies' } });
    expect(tagged.status === 200 && tagged.body.data.map((s) => s.name)).toEqual(['warranty']);
  });

  it('replaces a file: the new passages answer; an unreadable replacement fails and the last good text keeps answering', async () => {
    const changed = HELP.map((p) =>
      p.heading === 'Refunds' ? { ...p, paragraphs: ['Refunds go back to the card you paid with within 3 business days.'] } : p,
    );
    const file = await pdf(changed, 'Acme help centre');
    const put = await upload('help-centre', file, 'help.pdf', { url: 'https://help.example.com/help.pdf' }).expect(202);
    expect(put.body).toMatchObject({ revision: 2, state: 'parsing' });
    expect(await settled('help-centre')).toMatchObject({ state: 'indexed', revision: 2 });
    expect((await say('how long does a refund take to reach my card?')).response.message).toMatch(
      /^Refunds go back to the card you paid with within 3 business days\./,
    );

    // The same file again is nothing to read.
    const same = await upload('help-centre', file, 'help.pdf', { url: 'https://help.example.com/help.pdf' }).expect(202);
    expect(same.body).toMatchObject({ revision: 2, state: 'indexed' });

    // A file that says it is a PDF but is not one.
    await upload('help-centre', new TextEncoder().encode('just some text pretending'), 'help.pdf').expect(202);
    const failed = await settled('help-centre');
    expect(failed).toMatchObject({ state: 'failed', revision: 3, error: 'the file says it is a PDF but its content is plain text' });
    expect(failed.passages).toBeGreaterThan(0);
    expect((await say('how long does a refund take to reach my card?')).response.message).toMatch(/within 3 business days\./);
  });

  it('refuses hostile and oversized files with the reason, storing nothing half-read', async () => {
    await upload('bomb', await zipBomb(50_000_000), 'report.docx').expect(202);
    expect(await settled('bomb')).toMatchObject({ state: 'failed', passages: 0, error: 'the DOCX would inflate to more than 5000000 bytes' });
    await upload('deep', new TextEncoder().encode(`<html><body>${'<div>'.repeat(10_000)}deep${'</div>'.repeat(10_000)}</body></html>`), 'deep.html').expect(
      202,
    );
    expect(await settled('deep')).toMatchObject({ state: 'failed', error: 'the HTML nests elements more than 400 deep' });
    await upload('pages', await manyPages(60), 'big.pdf').expect(202);
    expect(await settled('pages')).toMatchObject({ state: 'failed', error: 'the PDF has 60 pages, more than the 40 allowed' });
    await upload('binary', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]), 'logo.png').expect(202);
    expect(await settled('binary')).toMatchObject({ state: 'failed', error: 'the file is none of PDF, DOCX, HTML, Markdown or UTF-8 text' });
    for (const name of ['bomb', 'deep', 'pages', 'binary']) {
      expect((await api().get(`/api/v1/knowledge/sources/${name}/passages`).set(T).expect(200)).body.data).toEqual([]);
    }

    const big = await upload('big', new Uint8Array(2_000_001).fill(0x61), 'big.txt').expect(413);
    expect(big.body).toMatchObject({ code: 'payload_too_large' });
    expect((await api().get('/api/v1/knowledge/sources/big').set(T).expect(404)).body.code).toBe('not_found');
    const json = await api().put('/api/v1/knowledge/sources/x').set(T).send({ file: 'nope' }).expect(415);
    expect(json.body.code).toBe('unsupported_media_type');
    const empty = await upload('empty', new Uint8Array(0), 'empty.txt').expect(400);
    expect(empty.body.errors).toEqual([{ path: 'body.file', message: 'empty' }]);
    const badName = await upload('Bad Name', new TextEncoder().encode('x'), 'x.txt').expect(400);
    expect(badName.body.code).toBe('validation_error');
    const badTag = await upload('t', new TextEncoder().encode('text'), 't.txt', { tags: 'ok, Not OK' }).expect(400);
    expect(badTag.body.errors[0].path).toBe('body.tags');
    const noFile = await api().put('/api/v1/knowledge/sources/nofile').set(T).field('title', 'x').expect(400);
    expect(noFile.body.code).toBe('validation_error');
  });

  it('holds the tenant to its number of sources, and keeps tenants apart', async () => {
    for (const name of ['bomb', 'deep', 'pages', 'binary']) await api().delete(`/api/v1/knowledge/sources/${name}`).set(T).expect(204);
    const count = (await api().get('/api/v1/knowledge/sources').set(T).expect(200)).body.data.length;
    expect(count).toBeLessThan(8);
    for (let i = count; i < 8; i++) await upload(`fill-${i}`, new TextEncoder().encode(`filler ${i}`), 'f.txt').expect(202);
    await f.app.knowledge.idle();
    const over = await upload('one-too-many', new TextEncoder().encode('more'), 'f.txt').expect(422);
    expect(over.body).toMatchObject({ code: 'limit_exceeded' });
    expect(over.body.detail).toContain('KNOWLEDGE_MAX_SOURCES=8');
    // Replacing one of them is not a new source.
    await upload('fill-7', new TextEncoder().encode('filler seven'), 'f.txt').expect(202);
    await f.app.knowledge.idle();

    // Another tenant sees none of it.
    expect((await api().get('/api/v1/knowledge/sources').set('tenant-id', 'other').expect(200)).body.data).toEqual([]);
    await api().get('/api/v1/knowledge/sources/help-centre').set('tenant-id', 'other').expect(404);
    expect((await api().get('/api/v1/knowledge/search?q=refund').set('tenant-id', 'other').expect(200)).body.data).toEqual([]);
    await upload('help-centre', new TextEncoder().encode('Other tenant: refunds take ninety days.'), 'o.txt', {}, 'other').expect(202);
    await settled('help-centre', 'other');
    expect((await say('how long does a refund take to reach my card?')).response.message).not.toContain('ninety');
  });

  it('pages the list of sources and of passages, and deletes a source so that it stops answering at once', async () => {
    const first = (await api().get('/api/v1/knowledge/sources?limit=3').set(T).expect(200)).body;
    expect(first.data).toHaveLength(3);
    const second = (await api().get(`/api/v1/knowledge/sources?limit=3&cursor=${first.next_cursor}`).set(T).expect(200)).body;
    expect(second.data[0].name > first.data[2].name).toBe(true);
    await api().get('/api/v1/knowledge/sources?cursor=nonsense').set(T).expect(400);
    const p1 = (await api().get('/api/v1/knowledge/sources/help-centre/passages?limit=1').set(T).expect(200)).body;
    const p2 = (await api().get(`/api/v1/knowledge/sources/help-centre/passages?limit=1&cursor=${p1.next_cursor}`).set(T).expect(200)).body;
    expect(p2.data[0].id).not.toBe(p1.data[0].id);

    const answered = await say('how long does a refund take to reach my card?');
    const cited = answered.response.citations.map((c: { passage_id: string }) => c.passage_id);
    expect(cited).toHaveLength(1);
    await client.sb.api.deleteSource({ params: { source: 'help-centre' } });
    await api().get('/api/v1/knowledge/sources/help-centre').set(T).expect(404);
    await api().delete('/api/v1/knowledge/sources/help-centre').set(T).expect(404);
    expect((await say('how long does a refund take to reach my card?')).state.status).toBe('escalated');
    // A replay of the conversation answered before shows the passages its answer cited, and that they are gone.
    const started = await api()
      .post('/api/v1/agents/helpdesk/replays')
      .set(T)
      .send({ version: 1, conversations: [answered.conversation_id] })
      .expect(202);
    let replay!: { status: string; results: { first_difference: { changes: { field: string; recorded: unknown; replayed: unknown }[] } }[] };
    await expect
      .poll(async () => (replay = (await api().get(`/api/v1/agents/helpdesk/replays/${started.body.id}`).set(T).expect(200)).body).status, { timeout: 20_000 })
      .toBe('done');
    expect(replay.results[0].first_difference.changes).toContainEqual({ field: 'citations', recorded: cited, replayed: [] });
  });

  it('uploads through the typed client', async () => {
    const bytes = await pdf(HELP.slice(0, 1), 'Shipping');
    const r = await client.sb.api.putSource({
      params: { source: 'shipping' },
      body: { file: new File([bytes], 'shipping.pdf', { type: 'application/pdf' }), title: 'Shipping guide', tags: 'help' },
    });
    expect(r.status).toBe(202);
    await f.app.knowledge.idle();
    const got = await client.sb.api.getSource({ params: { source: 'shipping' } });
    expect(got.status === 200 && got.body).toMatchObject({ state: 'indexed', title: 'Shipping guide', kind: 'pdf', pages: 1 });
  });

  it('says what the tenant uses of its quotas, its own sources only', async () => {
    const list = (await api().get('/api/v1/knowledge/sources?limit=100').set(T).expect(200)).body.data as { bytes: number; passages: number }[];
    const usage = (await api().get('/api/v1/usage').set(T).expect(200)).body;
    expect(usage.knowledge).toEqual({
      sources: { used: list.length, limit: 8 },
      bytes: { used: list.reduce((n, x) => n + x.bytes, 0), limit: base.maxBytes },
      passages: { used: list.reduce((n, x) => n + x.passages, 0), limit: base.maxPassages },
      syncs_today: { used: 0, limit: base.sites.maxSyncsPerDay },
    });
    expect(usage.knowledge.sources.used).toBeGreaterThan(0);
    const other = (await api().get('/api/v1/usage').set('tenant-id', 'nobody').expect(200)).body;
    expect(other.knowledge.sources.used).toBe(0);
    expect(other.knowledge.passages.used).toBe(0);
  });
});

describe('npm run agents -- knowledge', () => {
  const f = appFixture(databases[0]);
  const server = clientFixture(f);
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', 'knowledge', ...args, '--url', server.url, '--tenant', 'acme']);

  it('adds a file, waits until it is read, lists, searches, shows and removes it, saying what it did', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-knowledge-'));
    const file = join(dir, 'Opening Hours.md');
    writeFileSync(file, '# Opening hours\n\nOur shops open at 9 am and close at 6 pm, Monday to Saturday.\n');
    const added = await cli('add', file, '--tags', 'help,shops', '--link', 'https://example.com/hours');
    expect(added.stdout).toContain('uploaded Opening Hours.md (79 bytes) as knowledge source opening-hours, revision 1');
    expect(added.stdout).toMatch(/^opening-hours: indexed$/m);
    expect(added.stdout).toMatch(/^ {2}file {7}Opening Hours\.md \(markdown, 1 passages, 79 bytes\)/m);
    expect((await cli('list')).stdout).toMatch(/^opening-hours +indexed +markdown +— +1 +help, shops$/m);
    expect((await cli('search', 'when do the shops open?')).stdout).toMatch(/^1\.00 {2}opening-hours#1 — Opening hours {2}score /m);
    expect((await cli('show', 'opening-hours', '--passages', '1')).stdout).toContain('opening-hours#1 — Opening hours\n  Our shops open at 9 am');
    // A file that is not what it says: the reason, and exit code 1.
    writeFileSync(join(dir, 'fake.pdf'), 'not a pdf at all');
    const failed = await cli('add', join(dir, 'fake.pdf')).catch((e: { code: number; stdout: string }) => e);
    expect(failed).toMatchObject({ code: 1 });
    expect(failed.stdout).toContain('fake: failed (the file says it is a PDF but its content is plain text)');
    const used = await run(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', 'usage', '--url', server.url, '--tenant', 'acme']);
    expect(used.stdout).toMatch(/^knowledge sources +2 +of +500 +0\.4%$/m);
    expect(used.stdout).toMatch(/^knowledge passages +1 +of +100000 +0\.0%$/m);
    expect((await cli('rm', 'opening-hours')).stdout).toBe('deleted knowledge source opening-hours: its passages no longer answer\n');
    const gone = await cli('show', 'opening-hours').catch((e: { code: number; stderr: string }) => e);
    expect(gone.stderr).toContain('answered 404 not_found: No knowledge source opening-hours');
    // Eight command-line runs, each starting tsx: about 5 s apiece on a loaded 2-core machine.
  }, 180_000);
});

describe('a generative phase with knowledge sources', () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(async () => llm?.close());
  const f = appFixture(databases[0], {
    config: () => ({
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 2000, maxRetries: 0, maxTokensPerConversation: 0, tenantDailyTokens: 0 },
    }),
    agents: {
      assistant: {
        name: 'Assistant',
        knowledge_sources: ['help-centre'],
        capabilities: [
          { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
          {
            name: 'ask',
            examples: ['how long does a refund take', 'how do refunds work', 'when will my order ship', 'can i return an item', 'what is the delivery time'],
            phases: [{ id: 'model', generate: { instructions: 'Answer from the passages and cite them.', knowledge: true } }],
          },
        ],
      },
    },
  });
  const api = () => request(f.app.app);

  it("puts the sources' passages in the prompt with their ids, and cites those the model's answer names", async () => {
    await api()
      .put('/api/v1/knowledge/sources/help-centre')
      .set(T)
      .attach('file', Buffer.from(await pdf(HELP, 'Acme help centre')), 'help.pdf')
      .expect(202);
    await f.app.knowledge.idle();
    const refunds = (await api().get('/api/v1/knowledge/sources/help-centre/passages').set(T).expect(200)).body.data.find(
      (p: { heading: string }) => p.heading === 'Refunds',
    );
    llm.script({ text: `Refunds reach your card within 5 business days [${refunds.id}].` });
    const r = await api().post('/api/v1/agents/assistant/converse').set(T).send({ message: 'how long does a refund take?' }).expect(200);
    const system: string = llm.calls[0].body.messages[0].content;
    expect(system).toContain(`[${refunds.id}] Refunds\n${refunds.text}`);
    expect(r.body.response.message).toBe(`Refunds reach your card within 5 business days [${refunds.id}].`);
    expect(r.body.response.citations).toEqual([
      expect.objectContaining({ source: 'help-centre', passage_id: refunds.id, page: 2, heading: 'Refunds', title: 'Acme help centre' }),
    ]);
    const audit = (await api().get(`/api/v1/agents/assistant/conversations/${r.body.conversation_id}/audit-logs?type=knowledge_search`).set(T).expect(200)).body
      .data;
    expect(audit[0].data).toMatchObject({ mode: 'generate', sources: ['help-centre'] });
    expect(audit[0].data.passages.map((p: { id: string }) => p.id)).toContain(refunds.id);
    // An answer that names no passage cites none.
    llm.script({ text: 'I am not sure.' });
    const none = await api().post('/api/v1/agents/assistant/converse').set(T).send({ message: 'how long does a refund take?' }).expect(200);
    expect(none.body.response.citations).toBeUndefined();
    const calls = (await api().get(`/api/v1/agents/assistant/conversations/${r.body.conversation_id}/audit-logs?type=llm_call`).set(T).expect(200)).body.data;
    expect(calls[0].data.grounding).toEqual({
      supported: true,
      cited: [refunds.id],
      claims: [{ sentence: 'Refunds reach your card within 5 business days.', passage: refunds.id, support: 1 }],
    });
  });

  it('does not say an answer whose claims the passages it cites do not hold: the phase fails, and the check is audited', async () => {
    const refunds = (await api().get('/api/v1/knowledge/sources/help-centre/passages').set(T).expect(200)).body.data.find(
      (p: { heading: string }) => p.heading === 'Refunds',
    );
    llm.script({ text: `Refunds reach your card within 2 business days [${refunds.id}].` });
    const r = await api().post('/api/v1/agents/assistant/converse').set(T).send({ message: 'how long does a refund take?' }).expect(200);
    expect(r.body.response.message).not.toContain('2 business days');
    expect(r.body.response.citations).toBeUndefined();
    expect(r.body.state.status).toBe('escalated');
    const audit = (await api().get(`/api/v1/agents/assistant/conversations/${r.body.conversation_id}/audit-logs`).set(T).expect(200)).body.data;
    const call = audit.find((e: { type: string }) => e.type === 'llm_call');
    expect(call.data.grounding).toMatchObject({ supported: false, claims: [{ passage: refunds.id, support: 0, missing_numbers: ['2'] }] });
    const error = audit.find((e: { type: string }) => e.type === 'error');
    expect(error.data).toMatchObject({ code: 'answer_unsupported' });
    expect(error.data.message).toContain(`${refunds.id} does not hold (not the figure 2)`);
    // Answering with no citation at all is refused too.
    llm.script({ text: 'Refunds usually reach your card within a week.' });
    const bare = await api().post('/api/v1/agents/assistant/converse').set(T).send({ message: 'how long does a refund take?' }).expect(200);
    expect(bare.body.state.status).toBe('escalated');
  });
});

eachDatabase('a knowledge index over its budget on $name', (database) => {
  // The index's worker may take 5 ms: a manual of 5,000 passages takes ten times that or more.
  const f = appFixture(database, { agents: { helpdesk: agent }, config: { knowledge: { ...base, index: { ...base.index, timeoutMs: 5 } } } });
  const api = () => request(f.app.app);
  const manual = Array.from({ length: 5000 }, (_, i) => `## Part ${i}\n\nThe warranty on part ${i} lasts two years from delivery, and covers wear.`).join(
    '\n\n',
  );

  it('fails the search with the reason, and the answer phase takes its not_found with the error audited', async () => {
    await api().put('/api/v1/knowledge/sources/help-centre').set(T).attach('file', Buffer.from(manual), 'manual.md').expect(202);
    await f.app.knowledge.idle();
    const search = await api().get('/api/v1/knowledge/search?q=how long is the warranty').set(T).expect(503);
    expect(search.body).toMatchObject({
      code: 'unavailable',
      detail: 'The knowledge index could not be built: building the search index took longer than 5 ms',
    });
    const r = await api().post('/api/v1/agents/helpdesk/converse').set(T).send({ message: 'how long is the warranty?' }).expect(200);
    expect(r.body.state.status).toBe('escalated');
    const audit = (await api().get(`/api/v1/agents/helpdesk/conversations/${r.body.conversation_id}/audit-logs?type=knowledge_search`).set(T).expect(200)).body
      .data;
    expect(audit[0].data).toMatchObject({ answered: false, error: 'The knowledge index could not be built: building the search index took longer than 5 ms' });
  });
});

eachDatabase('a knowledge index larger than the cache on $name', (database) => {
  // An index the cache cannot hold would be built again on every search: it is refused with the reason.
  const f = appFixture(database, { agents: { helpdesk: agent }, config: { knowledge: { ...base, cacheBytes: 20_000 } } });
  const api = () => request(f.app.app);

  it('fails the search, naming the setting', async () => {
    const text = Array.from({ length: 60 }, (_, i) => `## Part ${i}\n\nThe warranty on part ${i} lasts two years from delivery.`).join('\n\n');
    await api().put('/api/v1/knowledge/sources/help-centre').set(T).attach('file', Buffer.from(text), 'manual.md').expect(202);
    await f.app.knowledge.idle();
    const search = await api().get('/api/v1/knowledge/search?q=warranty').set(T).expect(503);
    expect(search.body.detail).toMatch(/^The knowledge index could not be built: the index of 60 passages needs 1 MiB, more than KNOWLEDGE_CACHE_MB \(0\)$/);
  });
});
