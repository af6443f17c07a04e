// Web knowledge sources end to end, on every database, against a loopback site with a sitemap,
// robots.txt, ETags, a redirect, a PDF and pages that change, fail and disappear between syncs:
// the pages read and cited by their URL; conditional requests that re-read nothing unchanged; a
// failed page keeping its last good text and a gone one dropped after three syncs; a crawl by
// links within its folder and depth; schedules, the syncs of a day, two servers sharing one
// database; and hostile sites (a redirect loop, a body that never ends, a million-URL sitemap, a
// robots.txt that fails, a private address) refused with the reason.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import request from 'supertest';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { FakeClock } from '../helpers/clock.js';
import { pdf } from '../helpers/documents.js';
import { startBackend, testApp, testConfig, type Backend } from '../helpers/servers.js';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A page answered with an ETag, and 304 to a request that names it. */
const page = (html: string, type = 'text/html; charset=utf-8'): Route => {
  const etag = `"${createHash('sha1').update(html).digest('hex').slice(0, 16)}"`;
  return (req, res) => {
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': type, etag }).end(html);
  };
};
const binary =
  (bytes: Uint8Array, type: string): Route =>
  (_req, res) =>
    void res.writeHead(200, { 'content-type': type }).end(Buffer.from(bytes));
const html = (title: string, body: string, links = '') =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav>Home | Help ${links}</nav><article><h1>${title}</h1>${body}</article></body></html>`;
const status =
  (code: number, headers: Record<string, string> = {}): Route =>
  (_req, res) =>
    void res.writeHead(code, headers).end();

const SHIPPING = html(
  'Shipping',
  '<p>Orders leave our warehouse within two business days. Standard delivery takes three to five business days after dispatch.</p>',
);
const RETURNS = html('Returns', '<p>Items can be returned within 30 days of delivery. Print the prepaid label from your account.</p>');
const RETURNS_LONGER = html('Returns', '<p>Items can be returned within 60 days of delivery. Print the prepaid label from your account.</p>');

const agent = {
  name: 'Site help',
  knowledge_sources: [{ tag: 'site' }],
  routing: { fallback: 'docs' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    { name: 'docs', phases: [{ id: 'answer', answer: { not_found: 'escalate' } }] },
  ],
};

const base = testConfig().knowledge;

eachDatabase('web knowledge sources on $name', (database) => {
  const routes = new Map<string, Route>();
  let site: Backend;
  const clock = new FakeClock(new Date().toISOString());
  const f = appFixture(database, {
    agents: { sitehelp: agent },
    clock,
    config: {
      actionAllowedHosts: { acme: ['127.0.0.1'] },
      knowledge: {
        ...base,
        maxFileBytes: 1_000_000,
        sites: { ...base.sites, maxSyncsPerDay: 30, fetchTimeoutMs: 1500, maxSitePages: 50 },
      },
    },
  });
  const client = clientFixture(f);
  const api = () => request(f.app.app);
  beforeAll(async () => {
    site = await startBackend((req, res) => {
      const route = routes.get(new URL(req.url!, 'http://x').pathname);
      if (route) route(req, res);
      else res.writeHead(404).end('not here');
    });
  });
  afterAll(() => site?.close());

  const put = (name: string, body: object, tenant = 'acme') => api().put(`/api/v1/knowledge/sites/${name}`).set('tenant-id', tenant).send(body);
  const synced = async (name: string) => {
    await f.app.sites.idle();
    return (await api().get(`/api/v1/knowledge/sources/${name}`).set(T).expect(200)).body;
  };
  const sync = async (name: string) => {
    await api().post(`/api/v1/knowledge/sources/${name}/sync`).set(T).expect(202);
    return synced(name);
  };
  const pages = async (name: string) => (await api().get(`/api/v1/knowledge/sources/${name}/pages`).set(T).expect(200)).body.data;
  const passages = async (name: string) => (await api().get(`/api/v1/knowledge/sources/${name}/passages?limit=200`).set(T).expect(200)).body.data;
  const hits = (path: string) => site.requests.filter((r) => r.url === path);
  let unlist: (path: string) => void = () => undefined;

  it('syncs a site by its sitemap: robots.txt honoured, a redirect followed, HTML and PDF read, answers cited by the page', async () => {
    const u = (p: string) => `${site.url}${p}`;
    routes.set('/robots.txt', page('User-agent: *\nDisallow: /help/private\n', 'text/plain'));
    const listed = ['/help/shipping', '/help/returns-old', '/help/private/notes', '/help/guide.pdf', '/help/old'];
    const sitemap = () =>
      `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${listed
        .map((p) => `<url><loc>${u(p)}</loc></url>`)
        .join('')}<url><loc>https://elsewhere.example/x</loc></url></urlset>`;
    routes.set('/sitemap.xml', (req, res) => page(sitemap(), 'application/xml')(req, res));
    unlist = (p) => listed.splice(listed.indexOf(p), 1);
    routes.set('/help/shipping', page(SHIPPING));
    routes.set('/help/returns-old', status(301, { location: '/help/returns' }));
    routes.set('/help/returns', page(RETURNS));
    routes.set('/help/private/notes', page(html('Notes', '<p>Internal notes nobody should read.</p>')));
    routes.set('/help/old', page(html('Old page', '<p>Gift wrapping is available for every order at the checkout.</p>')));
    routes.set(
      '/help/guide.pdf',
      binary(await pdf([{ heading: 'Warranty', paragraphs: ['Every product has a two-year warranty from the day of delivery.'] }], 'Guide'), 'application/pdf'),
    );

    const r = await put('help-site', { url: u('/sitemap.xml'), crawl: 'sitemap', schedule: 'daily', tags: ['site'], title: 'Acme help site' }).expect(202);
    expect(r.body).toMatchObject({
      name: 'help-site',
      kind: 'web',
      state: 'queued',
      site: { url: u('/sitemap.xml'), crawl: 'sitemap', max_pages: 50 },
      schedule: 'daily',
    });
    const s = await synced('help-site');
    expect(s).toMatchObject({ state: 'indexed', kind: 'web', pages: 4, title: 'Acme help site' });
    expect(s.error).toBe('robots.txt forbids /help/private/notes');
    expect(hits('/help/private/notes')).toHaveLength(0);
    expect(Date.parse(s.next_sync_at) - Date.parse(s.fetched_at)).toBe(86_400_000);
    const kept = await pages('help-site');
    expect(kept.map((p: { url: string }) => p.url)).toEqual([u('/help/guide.pdf'), u('/help/old'), u('/help/returns-old'), u('/help/shipping')]);
    expect(kept.every((p: { state: string; failures: number }) => p.state === 'ok' && p.failures === 0)).toBe(true);
    const all = await passages('help-site');
    expect(all.find((p: { url: string }) => p.url === u('/help/guide.pdf'))).toMatchObject({ page: 1, heading: 'Warranty' });

    const said = (await api().post('/api/v1/agents/sitehelp/converse').set(T).send({ message: 'how long does standard delivery take?' }).expect(200)).body;
    expect(said.response.citations[0]).toMatchObject({ source: 'help-site', title: 'Acme help site', url: u('/help/shipping'), heading: 'Shipping' });
    expect(said.response.message).toContain(`Source: Acme help site, Shipping (${u('/help/shipping')})`);
  });

  it('syncs again with conditional requests: the unchanged costs nothing, the changed replaces its own passages, a failure keeps its text', async () => {
    const u = (p: string) => `${site.url}${p}`;
    const before = await passages('help-site');
    const idsOf = (list: { url: string; id: string }[], p: string) => list.filter((x) => x.url === u(p)).map((x) => x.id);
    const first = await synced('help-site');

    // Nothing changed: every page answers 304 (or the same bytes), nothing is read again or re-indexed.
    clock.advance(1000);
    const same = await sync('help-site');
    expect(same).toMatchObject({ state: 'indexed', indexed_at: first.indexed_at, changed_at: first.changed_at, sha256: first.sha256 });
    expect(same.fetched_at).not.toBe(first.fetched_at);
    expect(hits('/help/shipping').at(-1)!.headers['if-none-match']).toMatch(/^"/);
    expect(await passages('help-site')).toEqual(before);

    // An agent that takes knowledge through releases pins the site as it is now.
    await api()
      .put('/api/v1/agents/sitepinned')
      .set(T)
      .send({ ...agent, knowledge_updates: 'release' })
      .expect(200);
    const ask = async (slug: string, message: string) => (await api().post(`/api/v1/agents/${slug}/converse`).set(T).send({ message }).expect(200)).body;

    // Returns changes, the guide fails, the old page leaves the sitemap.
    routes.set('/help/returns', page(RETURNS_LONGER));
    routes.set('/help/guide.pdf', status(500));
    unlist('/help/old');
    clock.advance(1000);
    const changed = await sync('help-site');
    expect(changed.indexed_at).not.toBe(first.indexed_at);
    expect(changed.state).toBe('indexed');
    expect(changed.error).toContain(`${u('/help/guide.pdf')}: HTTP 500 (its last good text keeps answering)`);
    const after = await passages('help-site');
    expect(idsOf(after, '/help/shipping')).toEqual(idsOf(before, '/help/shipping'));
    expect(idsOf(after, '/help/guide.pdf')).toEqual(idsOf(before, '/help/guide.pdf'));
    expect(idsOf(after, '/help/returns-old')).not.toEqual(idsOf(before, '/help/returns-old'));
    expect(after.find((p: { url: string }) => p.url === u('/help/returns-old')).text).toContain('60 days');
    const listed = await pages('help-site');
    expect(listed.find((p: { url: string }) => p.url === u('/help/guide.pdf'))).toMatchObject({ state: 'failed', failures: 1, error: 'HTTP 500', passages: 1 });
    expect(listed.find((p: { url: string }) => p.url === u('/help/old'))).toMatchObject({ state: 'failed', failures: 1, error: 'no longer in the sitemap' });
    const warranty = (await api().post('/api/v1/agents/sitehelp/converse').set(T).send({ message: 'how long is the warranty?' }).expect(200)).body;
    expect(warranty.response.citations[0]).toMatchObject({ url: u('/help/guide.pdf'), page: 1 });

    // Two more syncs: the page gone from the sitemap and the failing guide are dropped with their passages.
    for (let i = 0; i < 2; i++) {
      clock.advance(1000);
      await sync('help-site');
    }
    expect((await pages('help-site')).map((p: { url: string }) => p.url)).toEqual([u('/help/returns-old'), u('/help/shipping')]);
    expect((await passages('help-site')).every((p: { url: string }) => p.url !== u('/help/guide.pdf') && p.url !== u('/help/old'))).toBe(true);
    const gone = (await api().post('/api/v1/agents/sitehelp/converse').set(T).send({ message: 'is gift wrapping available at the checkout?' }).expect(200))
      .body;
    expect(gone.state.status).toBe('escalated');
    // The pinned agent answers from the site as it was: the old returns page, and the page since dropped.
    const returns = 'how many days do I have to return an item?';
    expect((await ask('sitehelp', returns)).response.message).toContain('60 days');
    expect((await ask('sitepinned', returns)).response.message).toContain('30 days');
    const wrapped = await ask('sitepinned', 'is gift wrapping available at the checkout?');
    expect(wrapped.state.status).toBe('active');
    expect(wrapped.response.citations[0]).toMatchObject({ url: u('/help/old') });
  });

  it('crawls by links within the start folder, as deep as asked, and through the typed client', async () => {
    const u = (p: string) => `${site.url}${p}`;
    routes.set(
      '/docs/',
      page(
        html(
          'Docs',
          '<p>Start here for help with your account and your orders.</p>',
          '<a href="a">A</a> <a href="/docs/b#top">B</a> <a href="/blog/x">Blog</a> <a href="mailto:x@y.z">Mail</a>',
        ),
      ),
    );
    routes.set('/docs/a', page(html('Account', '<p>Change your password from the account page at any time.</p>', '<a href="/docs/c">C</a>')));
    routes.set('/docs/b', page(html('Billing', '<p>Invoices are sent by email on the day an order ships.</p>')));
    routes.set('/docs/c', page(html('Deep', '<p>Too deep to be fetched at depth one.</p>')));
    routes.set('/blog/x', page(html('Blog', '<p>Outside the folder.</p>')));
    const r = await client.sb.api.putSite({ params: { source: 'docs' }, body: { url: u('/docs/'), crawl: 'links', depth: 1, schedule: 'never' } });
    expect(r.status).toBe(202);
    const s = await synced('docs');
    expect(s).toMatchObject({ state: 'indexed', pages: 3, title: 'Docs', next_sync_at: null, error: null });
    expect((await pages('docs')).map((p: { url: string }) => p.url)).toEqual([u('/docs/'), u('/docs/a'), u('/docs/b')]);
    expect(hits('/blog/x')).toHaveLength(0);
    expect(hits('/docs/c')).toHaveLength(0);
  });

  it('reads a sitemap index and its gzipped sitemap, and asks a page with only Last-Modified with If-Modified-Since', async () => {
    const u = (p: string) => `${site.url}${p}`;
    routes.set(
      '/index.xml',
      page(
        `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${u('/part.xml.gz')}</loc></sitemap></sitemapindex>`,
        'application/xml',
      ),
    );
    const part = gzipSync(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${u('/dated')}</loc></url></urlset>`);
    routes.set('/part.xml.gz', binary(part, 'application/gzip'));
    const modified = 'Wed, 18 Nov 2026 10:00:00 GMT';
    routes.set('/dated', (req, res) => {
      if (req.headers['if-modified-since'] === modified) return void res.writeHead(304).end();
      res
        .writeHead(200, { 'content-type': 'text/html', 'last-modified': modified })
        .end(html('Dated', '<p>Parcels are insured up to 500 euros at no extra cost.</p>'));
    });
    await put('dated', { url: u('/index.xml'), crawl: 'sitemap', schedule: 'never' }).expect(202);
    const first = await synced('dated');
    expect(first).toMatchObject({ state: 'indexed', pages: 1, error: null });
    clock.advance(1000);
    const again = await sync('dated');
    expect(again.indexed_at).toBe(first.indexed_at);
    expect(hits('/dated').at(-1)!.headers['if-modified-since']).toBe(modified);
  });

  it('refuses hostile sites with the reason, keeping nothing half-read', async () => {
    const u = (p: string) => `${site.url}${p}`;
    routes.set('/loop/a', status(302, { location: '/loop/b' }));
    routes.set('/loop/b', status(302, { location: '/loop/a' }));
    await put('loop', { url: u('/loop/a') }).expect(202);
    expect(await synced('loop')).toMatchObject({ state: 'failed', passages: 0, error: expect.stringContaining('redirects in a loop') });

    routes.set('/forever', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const write = () => {
        while (res.write(chunk));
        res.once('drain', write);
      };
      write();
      res.on('close', () => res.removeAllListeners('drain'));
    });
    await put('forever', { url: u('/forever') }).expect(202);
    expect((await synced('forever')).error).toBe(`${u('/forever')}: ${u('/forever')} sent more than the 1000000 bytes allowed (KNOWLEDGE_MAX_FILE_MB)`);

    routes.set('/slow', () => undefined);
    await put('slow', { url: u('/slow') }).expect(202);
    expect((await synced('slow')).error).toBe(`${u('/slow')}: ${u('/slow')} did not answer in full within 1500 ms`);

    const entries = Array.from({ length: 15_000 }, (_, i) => `<url><loc>${u(`/many/${i}`)}</loc></url>`).join('');
    routes.set('/many.xml', page(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries}</urlset>`, 'application/xml'));
    routes.set('/many/0', page(html('Zero', '<p>The first page of many.</p>')));
    await put('many', { url: u('/many.xml'), crawl: 'sitemap', max_pages: 2 }).expect(202);
    const many = await synced('many');
    expect(many.pages).toBe(2);
    expect(many.error).toContain('the sitemap lists more than 2 pages: the first 2 are kept (max_pages)');
    expect(hits('/many/2')).toHaveLength(0);

    const tooMany = await put('huge', { url: u('/many.xml'), crawl: 'sitemap', max_pages: 51 }).expect(422);
    expect(tooMany.body).toMatchObject({ code: 'limit_exceeded', errors: [{ path: 'body.max_pages' }] });
    const bad = await put('bad', { url: 'ftp://example.com/x' }).expect(400);
    expect(bad.body.code).toBe('validation_error');

    // A tenant that may not reach loopback addresses is told so, and nothing is fetched for it.
    const count = site.requests.length;
    await put('private', { url: u('/help/shipping') }, 'other').expect(202);
    await f.app.sites.idle();
    const other = (await api().get('/api/v1/knowledge/sources/private').set('tenant-id', 'other').expect(200)).body;
    expect(other).toMatchObject({ state: 'failed', passages: 0 });
    expect(other.error).toContain('is not reachable (an unknown host, or an address this tenant may not reach');
    expect(site.requests.length).toBe(count);
    // Nor does it see acme's sources.
    await api().get('/api/v1/knowledge/sources/help-site/pages').set('tenant-id', 'other').expect(404);
  });

  it('fetches nothing of a site whose robots.txt fails, and refuses to mix a file and a site under one name', async () => {
    const u = (p: string) => `${site.url}${p}`;
    const robots = routes.get('/robots.txt')!;
    routes.set('/robots.txt', status(503));
    const count = site.requests.length;
    await put('down', { url: u('/help/shipping') }).expect(202);
    const s = await synced('down');
    expect(s).toMatchObject({ state: 'failed', passages: 0 });
    expect(s.error).toContain('answered HTTP 503, so nothing of the site is fetched (RFC 9309)');
    expect(site.requests.length).toBe(count + 1);
    routes.set('/robots.txt', robots);

    const file = await api().put('/api/v1/knowledge/sources/down').set(T).attach('file', Buffer.from('# x\n\ntext'), 'x.md').expect(409);
    expect(file.body.code).toBe('source_kind_mismatch');
    await api().put('/api/v1/knowledge/sources/notes').set(T).attach('file', Buffer.from('# Notes\n\nSome text.'), 'notes.md').expect(202);
    await f.app.knowledge.idle();
    expect((await put('notes', { url: u('/help/shipping') }).expect(409)).body.code).toBe('source_kind_mismatch');
    expect((await api().post('/api/v1/knowledge/sources/notes/sync').set(T).expect(409)).body.code).toBe('source_kind_mismatch');
    await api().post('/api/v1/knowledge/sources/nothing/sync').set(T).expect(404);
  });

  it('syncs each due source once when two servers share the database', async () => {
    const u = (p: string) => `${site.url}${p}`;
    const second = testApp(f.db, { actionAllowedHosts: { acme: ['127.0.0.1'] } }, clock);
    try {
      routes.set('/twice', page(html('Twice', '<p>This page must be fetched once per sync.</p>')));
      await put('twice', { url: u('/twice'), schedule: 'never' }).expect(202);
      second.sites.kick();
      f.app.sites.kick();
      await Promise.all([f.app.sites.idle(), second.sites.idle()]);
      expect(hits('/twice')).toHaveLength(1);
      expect((await synced('twice')).state).toBe('indexed');
    } finally {
      await second.close();
    }
  });

  it('stops a sync under way when the source is changed, and syncs it again with the new settings', async () => {
    const u = (p: string) => `${site.url}${p}`;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    routes.set(
      '/held',
      (_req, res) => void held.then(() => res.writeHead(200, { 'content-type': 'text/html' }).end(html('Held', '<p>An old page nobody needs.</p>'))),
    );
    routes.set('/new', page(html('New', '<p>The new page replaces the held one for good.</p>')));
    await put('changing', { url: u('/held'), schedule: 'never' }).expect(202);
    await expect.poll(async () => (await api().get('/api/v1/knowledge/sources/changing').set(T)).body.state).toBe('fetching');
    await put('changing', { url: u('/new'), schedule: 'never' }).expect(202);
    release();
    const s = await synced('changing');
    expect(s).toMatchObject({ state: 'indexed', revision: 2, pages: 1, site: { url: u('/new') } });
    expect((await pages('changing')).map((p: { url: string }) => p.url)).toEqual([u('/new')]);
  });

  it('syncs on its schedule, holds the tenant to its syncs of the day, and says so in its usage', async () => {
    const u = (p: string) => `${site.url}${p}`;
    await put('hourly', { url: u('/help/shipping'), schedule: 'hourly' }).expect(202);
    const first = await synced('hourly');
    expect(first.state).toBe('indexed');
    const fetches = hits('/help/shipping').length;
    f.app.sites.kick();
    await synced('hourly');
    expect(hits('/help/shipping').length).toBe(fetches);
    clock.advance(3_600_001);
    f.app.sites.kick();
    const second = await synced('hourly');
    expect(hits('/help/shipping').length).toBe(fetches + 1);
    expect(Date.parse(second.next_sync_at)).toBe(Date.parse(second.fetched_at) + 3_600_000);

    const usage = (await api().get('/api/v1/usage').set(T).expect(200)).body.knowledge.syncs_today;
    expect(usage.limit).toBe(30);
    expect(usage.used).toBeGreaterThan(0);
    for (let i = usage.used; i < 30; i++) await sync('hourly');
    const over = await api().post('/api/v1/knowledge/sources/hourly/sync').set(T).expect(422);
    expect(over.body.code).toBe('limit_exceeded');
    // A scheduled sync past the quota waits for the next day, saying so.
    clock.advance(3_600_001);
    f.app.sites.kick();
    const waiting = await synced('hourly');
    expect(waiting.state).toBe('indexed');
    expect(waiting.error).toContain("the tenant's 30 syncs of today are used (KNOWLEDGE_MAX_SYNCS_PER_DAY)");
    expect(waiting.next_sync_at.slice(11)).toBe('00:00:00.000Z');
  });

  it('deletes a site source with its pages and passages at once', async () => {
    await api().delete('/api/v1/knowledge/sources/docs').set(T).expect(204);
    await api().get('/api/v1/knowledge/sources/docs/pages').set(T).expect(404);
    expect(await f.db.knex('knowledge_pages').where({ tenant_id: 'acme', source: 'docs' })).toEqual([]);
  });
});

describe('npm run agents -- knowledge, for a site', () => {
  let site: Backend;
  const f = appFixture(databases[0], { config: { actionAllowedHosts: { acme: ['127.0.0.1'] } } });
  const server = clientFixture(f);
  const cli = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'server/src/cli/agents.ts', 'knowledge', ...args, '--url', server.url, '--tenant', 'acme']);
  beforeAll(async () => {
    site = await startBackend((req, res) => {
      const path = new URL(req.url!, 'http://x').pathname;
      const pages: Record<string, Route> = {
        '/sitemap.xml': page(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${site.url}/hours</loc></url><url><loc>${site.url}/gone</loc></url></urlset>`,
          'application/xml',
        ),
        '/hours': page(html('Opening hours', '<p>Our shops open at 9 am and close at 6 pm, Monday to Saturday.</p>')),
      };
      (pages[path] ?? status(404))(req, res);
    });
  });
  afterAll(() => site?.close());

  it('adds a sitemap, follows its first sync, lists its pages and syncs it again, saying what it did', async () => {
    const added = await cli('add', `${site.url}/sitemap.xml`, '--tags', 'help', '--schedule', 'weekly').catch((e: { stdout: string }) => e);
    expect(added.stdout).toContain(`added ${site.url}/sitemap.xml as knowledge source 127-0-0-1-sitemap (sitemap, synced weekly), revision 1`);
    expect(added.stdout).toMatch(/^127-0-0-1-sitemap: indexed \(.*\/gone: HTTP 404\)$/m);
    expect(added.stdout).toContain(`  site       ${site.url}/sitemap.xml (sitemap, at most 100 pages)`);
    expect(added.stdout).toMatch(/^ {2}schedule {3}weekly; next sync 20/m);
    expect(added.stdout).toContain(`  failed     ${site.url}/gone: HTTP 404 (1 in a row)`);
    const pages = (await cli('pages', '127-0-0-1-sitemap')).stdout;
    expect(pages).toMatch(new RegExp(`^ok +1 +20\\S+ +${site.url}/hours$`, 'm'));
    expect(pages).toMatch(new RegExp(`^failed +0 +20\\S+ +${site.url}/gone  \\(HTTP 404\\)$`, 'm'));
    const again = await cli('sync', '127-0-0-1-sitemap').catch((e: { stdout: string }) => e);
    expect(again.stdout).toContain('knowledge source 127-0-0-1-sitemap: queued for a sync now');
    expect(again.stdout).toContain(`  failed     ${site.url}/gone: HTTP 404 (2 in a row)`);

    // Choosing min_confidence: questions the site answers, and one it does not.
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-calibrate-'));
    writeFileSync(
      join(dir, 'q.csv'),
      'question,expected\nwhen do your shops open?,127-0-0-1-sitemap\nwhat time do the shops close on saturday?,127-0-0-1-sitemap\ndo you sell gift cards?,\n',
    );
    const calibrated = (await cli('calibrate', join(dir, 'q.csv'), '--sources', '127-0-0-1-sitemap')).stdout;
    expect(calibrated).toContain('3 questions: 2 the documents answer, 1 they do not (sources 127-0-0-1-sitemap)');
    expect(calibrated).toMatch(/^0\.25 +2 \(100%\) +0 +0 +1 \(100%\) +100%$/m);
    // The best is the highest threshold that still gets every question right: the next one up misses one.
    const best = /^best: min_confidence (0\.\d\d), 100% of the questions right; set it in the answer phase: answer: \{ min_confidence: \1 \}$/m.exec(
      calibrated,
    )!;
    expect(best).not.toBeNull();
    expect(calibrated).toMatch(new RegExp(`^${best[1].replace('.', '\\.')} +2 \\(100%\\) .* 100%$`, 'm'));
    const next = (Number(best[1]) + 0.05).toFixed(2);
    if (Number(next) <= 0.95) expect(calibrated).toMatch(new RegExp(`^${next.replace('.', '\\.')} +1 \\(50%\\)|^${next.replace('.', '\\.')} +0 \\(0%\\)`, 'm'));
  }, 60_000);
});
