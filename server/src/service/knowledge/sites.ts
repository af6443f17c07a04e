// Web knowledge sources (docs/knowledge.md, "A web page or a site"): a page, or a site by its
// sitemap or by following links, fetched and synced on a schedule. Every server polls for due
// sources and claims one of a tenant at a time (store/knowledge/site-store.ts: a lease in the
// database, so replicas never sync one source twice and one tenant's hundred sources wait behind
// each other, not in front of other tenants), at most KNOWLEDGE_SYNC_WORKERS at once in a process.
//
// A sync asks for each page with its ETag and Last-Modified: an unchanged page (304, or the same
// bytes) costs no reading and no re-index; a changed one is read in the file workers (the same
// caps as an upload) and replaces only its own passages; a failed fetch keeps the page's last good
// text and says so; a page that fails (or is gone from the site) DROP_AFTER syncs in a row is
// removed. robots.txt is honoured (RFC 9309), with its Crawl-delay up to MAX_CRAWL_DELAY_MS, one
// request at a time per source; every request goes through the SSRF guard with the tenant's
// allow-list, within KNOWLEDGE_FETCH_TIMEOUT_MS and KNOWLEDGE_MAX_FILE_MB.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KnowledgeSource, SiteBody, Usage } from '@switchboard/contract';
import type { DispatcherPool } from '../../actions/http-action.js';
import { LimitError, NotFoundError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { decodeCursor, pageOf } from '../../lib/cursor.js';
import { Passes } from '../../lib/passes.js';
import type { KnowledgeSiteStore, PageRow } from '../../store/knowledge/site-store.js';
import type { SiteSettings, SourceRow } from '../../store/knowledge/source-store.js';
import { ExtractError } from './extract.js';
import type { Extractor } from './extractor.js';
import { passagesOf, type KnowledgeService } from './knowledge-service.js';
import { FetchError, fetchUrl, linksOf, robotsFor, sitemapUrls, type FetchOptions, type Robots } from './web-fetch.js';

export interface SiteLimits {
  /** Pages one web source may keep. */
  maxSitePages: number;
  /** Syncs a tenant may start in a UTC day. */
  maxSyncsPerDay: number;
  /** One request, its body included. */
  fetchTimeoutMs: number;
  /** Syncs one process runs at once. */
  workers: number;
  /** How often a server looks for due sources. */
  pollMs: number;
}

/** How long a claimed sync is held without renewal (renewed every third of it while it runs). */
const LEASE_MS = 120_000;
/** Syncs in a row a page may fail (or be missing from the site) before it is removed. */
const DROP_AFTER = 3;
/** The longest Crawl-delay honoured between two requests of one source. */
const MAX_CRAWL_DELAY_MS = 30_000;
const EVERY: Record<string, number | null> = { hourly: 3_600_000, daily: 86_400_000, weekly: 7 * 86_400_000, never: null };

/** The sync's lease was lost (the source was deleted or changed, or another server took it over). */
class LeaseLost extends Error {}

const isUrl = (v: unknown): v is string => typeof v === 'string' && v.length <= 2048;

/** Where a `links` crawl may go from `start`: its origin, under its folder. */
function scopeOf(start: string): (u: string) => boolean {
  const s = new URL(start);
  const folder = s.pathname.replace(/[^/]*$/, '');
  return (u) => {
    const x = new URL(u);
    return x.origin === s.origin && x.pathname.startsWith(folder);
  };
}

export class KnowledgeSites {
  private timer: NodeJS.Timeout | undefined;
  /** Looks for due sources, one look at a time (lib/passes.ts). */
  private readonly passes: Passes;
  private readonly running = new Map<string, { ctl: AbortController; done: Promise<void> }>();

  constructor(
    private readonly store: KnowledgeSiteStore,
    private readonly knowledge: KnowledgeService,
    private readonly extractor: Extractor,
    private readonly dispatchers: DispatcherPool,
    private readonly clock: Clock,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
    readonly limits: SiteLimits,
  ) {
    this.passes = new Passes(
      () => this.poll(),
      (err) => this.log.warn({ err }, 'knowledge sync: looking for due sources failed'),
    );
  }

  /** Sets a web source (it syncs at once); over a quota, 422 and nothing stored. */
  async put(tenantId: string, name: string, body: SiteBody): Promise<KnowledgeSource> {
    const max = body.max_pages ?? Math.min(100, this.limits.maxSitePages);
    if (max > this.limits.maxSitePages) {
      throw new LimitError(`A web source may keep at most ${this.limits.maxSitePages} pages (KNOWLEDGE_MAX_SITE_PAGES); max_pages is ${max}`, 'body.max_pages');
    }
    const site: SiteSettings = { url: new URL(body.url).href, crawl: body.crawl, depth: body.depth, max_pages: body.crawl === 'page' ? 1 : max };
    const row = await this.store.put(
      tenantId,
      { name, title: body.title ?? null, language: body.language ?? null, tags: [...new Set(body.tags)], site, schedule: body.schedule },
      iso(this.clock.now()),
      (others, existing) => this.knowledge.admit(others, existing, 0),
    );
    this.kick();
    return this.knowledge.view(row);
  }

  /** Queues a web source's sync now (a running one goes on); 422 once the tenant's syncs of the day are used. */
  async syncNow(tenantId: string, name: string): Promise<KnowledgeSource> {
    const now = iso(this.clock.now());
    const used = await this.store.syncsOn(tenantId, now);
    if (used >= this.limits.maxSyncsPerDay) {
      throw new LimitError(`The tenant has started ${used} syncs today, the most it may (KNOWLEDGE_MAX_SYNCS_PER_DAY); sync again tomorrow (UTC)`);
    }
    const row = await this.store.requestSync(tenantId, name, now);
    if (!row) throw new NotFoundError('not_found', `No knowledge source ${name}`);
    this.kick();
    return this.knowledge.view(row);
  }

  async pages(tenantId: string, name: string, q: { limit: number; cursor?: string }) {
    await this.knowledge.get(tenantId, name);
    const rows = await this.store.listPages(tenantId, name, { limit: q.limit + 1, after: decodeCursor(q.cursor, isUrl) });
    const { page, next_cursor } = pageOf(rows, q.limit, (last) => last.url);
    const data = page.map((p) => ({
      url: p.url,
      title: p.title,
      state: p.failures > 0 ? ('failed' as const) : ('ok' as const),
      error: p.error,
      failures: p.failures,
      bytes: p.bytes,
      passages: p.passages,
      fetched_at: p.fetchedAt,
      changed_at: p.changedAt,
    }));
    return { data, next_cursor };
  }

  /** The tenant's syncs of today beside its limit. */
  async syncsToday(tenantId: string): Promise<Usage['knowledge']['syncs_today']> {
    return { used: await this.store.syncsOn(tenantId, iso(this.clock.now())), limit: this.limits.maxSyncsPerDay };
  }

  /** Looks for due sources now and every `pollMs`. */
  start(): void {
    this.timer = setInterval(() => this.kick(), this.limits.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Looks for due sources now (once more after a look under way). */
  kick(): void {
    this.passes.kick();
  }

  private async poll(): Promise<void> {
    let free = this.limits.workers - this.running.size;
    if (free <= 0) return;
    const now = this.clock.now();
    for (const d of await this.store.due(iso(now), free * 4)) {
      if (free <= 0) break;
      if (this.running.has(`${d.tenantId}\n${d.name}`)) continue;
      const claim = await this.store.claim(d.tenantId, d.name, iso(now), iso(new Date(now.getTime() + LEASE_MS)), this.limits.maxSyncsPerDay);
      if (claim === 'quota') this.log.warn({ tenant: d.tenantId, source: d.name }, "knowledge sync skipped: the tenant's syncs of today are used");
      if (typeof claim !== 'object') continue;
      free--;
      this.run(claim.row, claim.lease);
    }
  }

  private run(row: SourceRow, lease: string): void {
    const key = `${row.tenantId}\n${row.name}`;
    const entry = { ctl: new AbortController(), done: Promise.resolve() };
    this.running.set(key, entry);
    entry.done = new SiteSync(this, row, lease, entry.ctl.signal)
      .run()
      .catch((err: unknown) => this.log.warn({ err, tenant: row.tenantId, source: row.name }, 'knowledge sync failed'))
      .finally(() => {
        this.running.delete(key);
        this.kick();
      });
  }

  /** Waits for the syncs this process runs, and the search indexes they started (tests, the demo). */
  async idle(): Promise<void> {
    while (this.running.size || this.passes.running) await Promise.all([...[...this.running.values()].map((r) => r.done), this.passes.running]);
    await this.knowledge.idle();
  }

  /** Stops looking and stops the syncs under way: each gives its lease up, due again at once for another server. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.passes.stop();
    for (const r of this.running.values()) r.ctl.abort();
    await this.idle();
  }

  /** What one sync uses of the service (SiteSync below). */
  get deps() {
    return { store: this.store, extractor: this.extractor, dispatchers: this.dispatchers, clock: this.clock, log: this.log, knowledge: this.knowledge };
  }
}

/** One sync of one web source, under its lease. */
class SiteSync {
  private readonly d: KnowledgeSites['deps'];
  private lease: string;
  /** The sync's writes and lease renewals, one after another (a renewal changes the lease a write checks). */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly problems: string[] = [];
  private changed = false;
  private readonly fetchOpts: FetchOptions;
  private readonly settingsChanged: boolean;

  constructor(
    sites: KnowledgeSites,
    private readonly row: SourceRow,
    lease: string,
    private readonly signal: AbortSignal,
  ) {
    this.d = sites.deps;
    this.lease = lease;
    const k = this.d.knowledge.limits;
    this.fetchOpts = { dispatcher: this.d.dispatchers.for(row.tenantId), timeoutMs: sites.limits.fetchTimeoutMs, maxBytes: k.maxFileBytes, signal };
    this.settingsChanged = row.syncedRevision !== row.revision;
  }

  private now(): string {
    return iso(this.d.clock.now());
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const p = this.tail.then(f, f);
    this.tail = p.catch(() => undefined);
    return p;
  }

  private async write(f: (lease: string) => Promise<boolean>): Promise<void> {
    if (!(await this.serial(() => f(this.lease)))) throw new LeaseLost();
  }

  async run(): Promise<void> {
    const { row } = this;
    const started = performance.now();
    const renewer = setInterval(() => {
      void this.serial(async () => {
        const until = iso(new Date(this.d.clock.now().getTime() + LEASE_MS));
        if (await this.d.store.renew(row.tenantId, row.name, this.lease, until)) this.lease = until;
      });
    }, LEASE_MS / 3);
    try {
      const summary = await this.sync();
      if (summary.changed) this.d.knowledge.refresh(row.tenantId);
      this.d.log.info({ tenant: row.tenantId, source: row.name, ...summary, ms: Math.round(performance.now() - started) }, 'knowledge source synced');
    } catch (err) {
      if (err instanceof LeaseLost) {
        this.d.log.info({ tenant: row.tenantId, source: row.name }, 'knowledge sync stopped: the source was changed, deleted or taken over');
        return;
      }
      if (this.signal.aborted) {
        await this.serial(() => this.d.store.release(row.tenantId, row.name, this.lease, this.now()));
        return;
      }
      throw err;
    } finally {
      clearInterval(renewer);
    }
  }

  private async finish(o: { failed?: string; docTitle?: string | null }): Promise<void> {
    const { row } = this;
    const every = EVERY[row.schedule ?? 'never'] ?? null;
    const now = this.d.clock.now();
    const problems = o.failed ? [o.failed, ...this.problems] : this.problems;
    const error = problems.length ? problems.slice(0, 3).join('; ') + (problems.length > 3 ? ` (and ${problems.length - 3} more: see its pages)` : '') : null;
    const fresh = await this.d.store.pages(row.tenantId, row.name);
    const answering = [...fresh.values()].some((p) => p.passages > 0);
    await this.write((lease) =>
      this.d.store.finish(row.tenantId, row.name, lease, {
        state: o.failed || !answering ? 'failed' : 'indexed',
        error: error ?? (answering ? null : 'no page of the site gave any text'),
        docTitle: o.docTitle ?? row.docTitle,
        changed: this.changed,
        revision: row.revision,
        nextSyncAt: every === null ? null : iso(new Date(now.getTime() + every)),
        now: iso(now),
      }),
    );
  }

  private async sync(): Promise<{ pages: number; changed: boolean; problems: number }> {
    const { row } = this;
    const site = row.site!;
    const stored = await this.d.store.pages(row.tenantId, row.name);
    const robots = await robotsFor(site.url, this.fetchOpts);
    this.checkStop();
    if (robots.refusal) return this.end({ failed: robots.refusal }, 0);
    if (!robots.allowed(site.url)) return this.end({ failed: `robots.txt forbids ${new URL(site.url).pathname}` }, 0);

    let queue: { url: string; depth: number }[] = [];
    if (site.crawl === 'sitemap') {
      try {
        const listed = await sitemapUrls(site.url, site.max_pages, this.fetchOpts, robots.allowed);
        queue = listed.urls.map((url) => ({ url, depth: 0 }));
        if (listed.more) this.problems.push(`the sitemap lists more than ${site.max_pages} pages: the first ${site.max_pages} are kept (max_pages)`);
      } catch (err) {
        this.checkStop();
        if (!(err instanceof FetchError)) throw err;
        return this.end({ failed: err.message }, 0);
      }
    } else queue = [{ url: site.url, depth: 0 }];

    const inScope = scopeOf(site.url);
    const seen = new Set(queue.map((q) => q.url));
    const delayMs = Math.min(robots.delayMs, MAX_CRAWL_DELAY_MS);
    let docTitle: string | null = null;
    for (let i = 0; i < queue.length; i++) {
      this.checkStop();
      if (i > 0 && delayMs) await sleep(delayMs, undefined, { signal: this.signal }).catch(() => this.checkStop());
      const { url, depth } = queue[i];
      const got = await this.page(url, stored.get(url), robots);
      if (i === 0 && site.crawl !== 'sitemap') docTitle = got.title;
      if (site.crawl !== 'links' || depth >= site.depth) continue;
      for (const link of got.links) {
        if (seen.size >= site.max_pages) break;
        if (seen.has(link) || !inScope(link)) continue;
        seen.add(link);
        queue.push({ url: link, depth: depth + 1 });
      }
    }
    // Pages the site no longer lists (or links to): gone after DROP_AFTER syncs, at once after a change of settings.
    for (const [url, prev] of stored) {
      if (seen.has(url)) continue;
      this.checkStop();
      if (this.settingsChanged || prev.failures + 1 >= DROP_AFTER) await this.drop(url);
      else await this.failed(url, prev, site.crawl === 'sitemap' ? 'no longer in the sitemap' : 'no longer linked from the site', false);
    }
    return this.end({ docTitle: site.crawl === 'sitemap' ? null : docTitle }, seen.size);
  }

  private async end(o: { failed?: string; docTitle?: string | null }, pages: number) {
    await this.finish(o);
    return { pages, changed: this.changed, problems: this.problems.length + (o.failed ? 1 : 0) };
  }

  private checkStop(): void {
    if (this.signal.aborted) throw new Error('the server is stopping');
  }

  private async drop(url: string): Promise<void> {
    await this.write((lease) => this.d.store.dropPage(this.row.tenantId, this.row.name, lease, this.now(), url));
    this.changed = true;
  }

  /** A page whose fetch failed: it keeps its last good text, and is dropped after DROP_AFTER failures in a row. */
  private async failed(url: string, prev: PageRow | undefined, reason: string, say = true): Promise<void> {
    const failures = (prev?.failures ?? 0) + 1;
    if (say) this.problems.push(`${url}: ${reason}${prev?.passages ? ' (its last good text keeps answering)' : ''}`);
    if (prev && failures >= DROP_AFTER) return this.drop(url);
    const page: PageRow = {
      url,
      title: prev?.title ?? null,
      etag: prev?.etag ?? null,
      lastModified: prev?.lastModified ?? null,
      sha256: prev?.sha256 ?? null,
      bytes: prev?.bytes ?? 0,
      passages: prev?.passages ?? 0,
      links: prev?.links ?? null,
      failures,
      error: reason,
      fetchedAt: this.now(),
      changedAt: prev?.changedAt ?? null,
    };
    await this.write((lease) => this.d.store.savePage(this.row.tenantId, this.row.name, lease, this.now(), page, null, () => undefined));
  }

  /** Fetches, reads and stores one page; answers its links and title (a failure's: the last ones known). */
  private async page(url: string, prev: PageRow | undefined, robots: Robots): Promise<{ links: string[]; title: string | null }> {
    const { row } = this;
    const known = { links: prev?.links ?? [], title: prev?.title ?? null };
    if (!robots.allowed(url)) {
      // robots.txt now forbids it: not fetched, and its text leaves at once.
      this.problems.push(`robots.txt forbids ${new URL(url).pathname}`);
      if (prev) await this.drop(url);
      return { links: [], title: null };
    }
    try {
      const got = await fetchUrl(url, { ...this.fetchOpts, etag: prev?.etag, lastModified: prev?.lastModified });
      this.checkStop();
      if (got.status === 304 && prev) {
        await this.keep(prev, got);
        return known;
      }
      if (!got.body) {
        await this.failed(url, prev, `HTTP ${got.status}`);
        return known;
      }
      const sha256 = createHash('sha256').update(got.body).digest('hex');
      const mediaType = got.contentType?.split(';')[0]!.trim().toLowerCase() || null;
      const html = mediaType === 'text/html' || mediaType === 'application/xhtml+xml';
      const seen = html ? await linksOf(Buffer.from(got.body).toString('utf8'), got.url) : { links: [], noindex: false, nofollow: false };
      const links = seen.nofollow ? [] : seen.links;
      if (prev && prev.sha256 === sha256) {
        await this.keep({ ...prev, links }, got);
        return { links, title: prev.title };
      }
      if (seen.noindex) {
        this.problems.push(`${url} asks not to be indexed (meta robots noindex)`);
        if (prev) await this.drop(url);
        return { links, title: null };
      }
      const x = await this.d.extractor.extract(row.tenantId, got.body, null, mediaType);
      this.checkStop();
      const passages = passagesOf(x);
      const page: PageRow = {
        url,
        title: x.title,
        etag: got.etag,
        lastModified: got.lastModified,
        sha256,
        bytes: got.body.length,
        passages: passages.length,
        links,
        failures: 0,
        error: null,
        fetchedAt: this.now(),
        changedAt: this.now(),
      };
      const { maxBytes, maxPassages } = this.d.knowledge.limits;
      await this.write((lease) =>
        this.d.store.savePage(row.tenantId, row.name, lease, this.now(), page, passages, (others) => {
          if (others.passages + passages.length > maxPassages) {
            throw new ExtractError(
              `the page gives ${passages.length} passages and the tenant's sources hold ${others.passages}: more than the ${maxPassages} allowed (KNOWLEDGE_MAX_PASSAGES)`,
            );
          }
          if (others.bytes + page.bytes > maxBytes) {
            throw new ExtractError(
              `the page's ${page.bytes} bytes would take the tenant's knowledge past the ${maxBytes} bytes allowed (KNOWLEDGE_MAX_BYTES_MB)`,
            );
          }
        }),
      );
      this.changed = true;
      return { links, title: x.title };
    } catch (err) {
      if (err instanceof LeaseLost) throw err;
      this.checkStop();
      if (!(err instanceof FetchError || err instanceof ExtractError)) {
        this.d.log.warn({ err, tenant: row.tenantId, source: row.name, url }, 'knowledge page could not be read');
      }
      await this.failed(
        url,
        prev,
        err instanceof FetchError || err instanceof ExtractError ? err.message : 'the page could not be read (an internal error; the operator log has it)',
      );
      return known;
    }
  }

  /** An unchanged page: fetched now, its failures forgotten, its passages as they are. */
  private async keep(prev: PageRow, got: { etag: string | null; lastModified: string | null }): Promise<void> {
    const page: PageRow = {
      ...prev,
      etag: got.etag ?? prev.etag,
      lastModified: got.lastModified ?? prev.lastModified,
      failures: 0,
      error: null,
      fetchedAt: this.now(),
    };
    await this.write((lease) => this.d.store.savePage(this.row.tenantId, this.row.name, lease, this.now(), page, null, () => undefined));
  }
}
