// Web knowledge sources' rows (migration 030): a page or a site, its pages with what a conditional
// request needs, and the sync lease. A sync is claimed by one server (`sync_until`, a lease it
// renews; `next_sync_at` moves with it, so a sync whose server stopped is due again when the
// lease runs out), one source of a tenant at a time across every replica, and counted against the
// tenant's syncs of the day, all under the tenant's lock. Every write of a sync checks that the
// lease is still the one it holds: a source deleted, changed or taken over meanwhile is not written.
import type { Knex } from 'knex';
import { createHash } from 'node:crypto';
import { ConflictError } from '../../errors.js';
import type { Database } from '../db.js';
import { INSERT_BATCH, toRow, type KnowledgeTotals, type PassageRow, type SiteSettings, type SourceRow } from './source-store.js';
import { KnowledgeSourceStore } from './source-store.js';
import { knowledgeLock, nextSnapshot, prune, replacePassages } from './snapshots.js';

export interface PageRow {
  url: string;
  title: string | null;
  etag: string | null;
  lastModified: string | null;
  sha256: string | null;
  bytes: number;
  passages: number;
  /** The page's links (a `links` crawl follows them again when the page is unchanged). */
  links: string[] | null;
  failures: number;
  error: string | null;
  fetchedAt: string | null;
  changedAt: string | null;
}

function toPage(r: Record<string, unknown>): PageRow {
  return {
    url: r.url as string,
    title: (r.title as string | null) ?? null,
    etag: (r.etag as string | null) ?? null,
    lastModified: (r.last_modified as string | null) ?? null,
    sha256: (r.sha256 as string | null) ?? null,
    bytes: Number(r.bytes),
    passages: Number(r.passages),
    links: r.links ? (JSON.parse(r.links as string) as string[]) : null,
    failures: Number(r.failures),
    error: (r.error as string | null) ?? null,
    fetchedAt: (r.fetched_at as string | null) ?? null,
    changedAt: (r.changed_at as string | null) ?? null,
  };
}

function pageColumns(p: PageRow) {
  return {
    title: p.title,
    etag: p.etag,
    last_modified: p.lastModified,
    sha256: p.sha256,
    bytes: p.bytes,
    passages: p.passages,
    links: p.links ? JSON.stringify(p.links) : null,
    failures: p.failures,
    error: p.error,
    fetched_at: p.fetchedAt,
    changed_at: p.changedAt,
  };
}

/** What a web source is set to. */
export interface SiteInput {
  name: string;
  title: string | null;
  language: string | null;
  tags: string[];
  site: SiteSettings;
  schedule: string;
}

/** A claim's outcome: the source (now `fetching` under the lease), or why not. */
export type Claim = { row: SourceRow; lease: string } | 'busy' | 'quota' | 'gone';

const day = (iso: string) => iso.slice(0, 10);

export class KnowledgeSiteStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];
  private readonly sources: KnowledgeSourceStore;

  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
    this.sources = new KnowledgeSourceStore(db);
  }

  private async rowIn(trx: Knex, tenantId: string, name: string): Promise<SourceRow | null> {
    const r = (await trx('knowledge_sources').where({ tenant_id: tenantId, name }).first()) as Record<string, unknown> | undefined;
    return r ? toRow(r) : null;
  }

  /**
   * Sets a web source (a new one at revision 1, `queued` and due now; a changed one at its next
   * revision, due now); `admit` sees the tenant's totals without it and throws to refuse.
   */
  async put(tenantId: string, s: SiteInput, now: string, admit: (others: KnowledgeTotals, existing: SourceRow | null) => void): Promise<SourceRow> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      const existing = await this.rowIn(trx, tenantId, s.name);
      if (existing && !existing.site)
        throw new ConflictError('source_kind_mismatch', `The knowledge source ${s.name} is a file: delete it first to sync a site under its name`);
      const all = await this.sources.totals(tenantId, trx);
      admit(existing ? { sources: all.sources - 1, bytes: all.bytes - existing.bytes, passages: all.passages - existing.passages } : all, existing);
      const fields = {
        title: s.title,
        language: s.language,
        tags: JSON.stringify(s.tags),
        site: JSON.stringify(s.site),
        schedule: s.schedule,
        kind: 'web',
        state: 'queued',
        error: null,
        next_sync_at: now,
        // A sync under way with the settings before stops at its next write (its lease is gone).
        sync_until: null,
        updated_at: now,
      };
      if (existing) {
        await trx('knowledge_sources')
          .where({ tenant_id: tenantId, name: s.name })
          .update({ ...fields, revision: existing.revision + 1 });
      } else {
        await trx('knowledge_sources').insert({
          tenant_id: tenantId,
          name: s.name,
          ...fields,
          bytes: 0,
          passages: 0,
          chars: 0,
          sha256: '',
          revision: 1,
          created_at: now,
        });
      }
      return (await this.rowIn(trx, tenantId, s.name))!;
    });
  }

  /** Makes a web source due now (`queued`), unless its sync is running; null when there is no such source. */
  async requestSync(tenantId: string, name: string, now: string): Promise<SourceRow | null> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      const row = await this.rowIn(trx, tenantId, name);
      if (!row) return null;
      if (!row.site) throw new ConflictError('source_kind_mismatch', `The knowledge source ${name} is a file: upload it again to change it`);
      if (row.syncUntil && row.syncUntil >= now) return row;
      await trx('knowledge_sources').where({ tenant_id: tenantId, name }).update({ state: 'queued', next_sync_at: now, updated_at: now });
      return (await this.rowIn(trx, tenantId, name))!;
    });
  }

  /**
   * Due sources, the earliest of each tenant that has none syncing now, earliest first: a tenant
   * with a thousand sources due stands beside another with one, not in front of it.
   */
  async due(now: string, limit: number): Promise<{ tenantId: string; name: string }[]> {
    const k = this.knex;
    const ranked = k('knowledge_sources as s')
      .select('s.tenant_id', 's.name', 's.next_sync_at', k.raw('row_number() over (partition by s.tenant_id order by s.next_sync_at, s.name) as n'))
      .where('s.next_sync_at', '<=', now)
      .where((q) => void q.whereNull('s.sync_until').orWhere('s.sync_until', '<', now))
      .whereNotExists(k('knowledge_sources as o').select(k.raw('1')).whereRaw('o.tenant_id = s.tenant_id').where('o.sync_until', '>=', now));
    const rows: { tenant_id: string; name: string }[] = await k
      .from(ranked.as('r'))
      .where('n', 1)
      .orderBy('next_sync_at')
      .limit(limit)
      .select('tenant_id', 'name');
    return rows.map((r) => ({ tenantId: r.tenant_id, name: r.name }));
  }

  /**
   * Takes a due source's sync until `until`: refused while another source of the tenant syncs
   * (`busy`), and past the tenant's `perDay` syncs of the day (`quota`: due again tomorrow, saying so).
   */
  async claim(tenantId: string, name: string, now: string, until: string, perDay: number): Promise<Claim> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      const row = await this.rowIn(trx, tenantId, name);
      if (!row?.site || !row.nextSyncAt || row.nextSyncAt > now || (row.syncUntil && row.syncUntil >= now)) return 'gone';
      const busy: { name: string } | undefined = await trx('knowledge_sources').where({ tenant_id: tenantId }).where('sync_until', '>=', now).first('name');
      if (busy) return 'busy';
      const today: { syncs: number | string } | undefined = await trx('knowledge_sync_days')
        .where({ tenant_id: tenantId, day: day(now) })
        .first('syncs');
      const used = Number(today?.syncs ?? 0);
      if (used >= perDay) {
        const tomorrow = new Date(Date.parse(`${day(now)}T00:00:00.000Z`) + 86_400_000).toISOString();
        await trx('knowledge_sources')
          .where({ tenant_id: tenantId, name })
          .update({
            next_sync_at: tomorrow,
            error: `the tenant's ${perDay} syncs of today are used (KNOWLEDGE_MAX_SYNCS_PER_DAY): the next sync is at ${tomorrow}`,
            state: row.passages > 0 ? 'indexed' : 'failed',
            updated_at: now,
          });
        return 'quota';
      }
      if (today)
        await trx('knowledge_sync_days')
          .where({ tenant_id: tenantId, day: day(now) })
          .update({ syncs: used + 1 });
      else await trx('knowledge_sync_days').insert({ tenant_id: tenantId, day: day(now), syncs: 1 });
      await trx('knowledge_sync_days')
        .where({ tenant_id: tenantId })
        .where('day', '<', day(new Date(Date.parse(now) - 7 * 86_400_000).toISOString()))
        .delete();
      await trx('knowledge_sources')
        .where({ tenant_id: tenantId, name })
        .update({ state: 'fetching', sync_until: until, next_sync_at: until, updated_at: now });
      return { row: (await this.rowIn(trx, tenantId, name))!, lease: until };
    });
  }

  /** Extends the lease `lease` to `until`; false when it is no longer held (the source was deleted, changed or taken over). */
  async renew(tenantId: string, name: string, lease: string, until: string): Promise<boolean> {
    return (
      (await this.knex('knowledge_sources').where({ tenant_id: tenantId, name, sync_until: lease }).update({ sync_until: until, next_sync_at: until })) > 0
    );
  }

  /** Gives the lease up (a server stopping): the source is due again at once, for any server. */
  async release(tenantId: string, name: string, lease: string, now: string): Promise<void> {
    await this.knex('knowledge_sources')
      .where({ tenant_id: tenantId, name, sync_until: lease })
      .update({ sync_until: null, next_sync_at: now, state: 'queued', updated_at: now });
  }

  /** Syncs the tenant started on the UTC day of `now`. */
  async syncsOn(tenantId: string, now: string): Promise<number> {
    const r: { syncs: number | string } | undefined = await this.knex('knowledge_sync_days')
      .where({ tenant_id: tenantId, day: day(now) })
      .first('syncs');
    return Number(r?.syncs ?? 0);
  }

  /** Every page of a source, by URL. */
  async pages(tenantId: string, name: string): Promise<Map<string, PageRow>> {
    const rows = (await this.knex('knowledge_pages').where({ tenant_id: tenantId, source: name })) as Record<string, unknown>[];
    return new Map(rows.map((r) => [r.url as string, toPage(r)]));
  }

  /** A source's pages by URL after `after`, at most `limit`. */
  async listPages(tenantId: string, name: string, q: { limit: number; after: string | null }): Promise<PageRow[]> {
    const query = this.knex('knowledge_pages').where({ tenant_id: tenantId, source: name }).orderBy('url').limit(q.limit);
    if (q.after !== null) query.where('url', '>', q.after);
    return ((await query) as Record<string, unknown>[]).map(toPage);
  }

  private async held(trx: Knex.Transaction, tenantId: string, name: string, lease: string): Promise<boolean> {
    await this.adapter.lockKey(trx, knowledgeLock(tenantId));
    return !!(await trx('knowledge_sources').where({ tenant_id: tenantId, name, sync_until: lease }).first('name'));
  }

  /** The source's passages and bytes as its pages now hold them. */
  private async recount(trx: Knex.Transaction, tenantId: string, name: string): Promise<void> {
    const p = (await trx('knowledge_passages').where({ tenant_id: tenantId, source: name }).whereNull('removed').count({ n: '*' }).first()) as {
      n: number | string;
    };
    const b = (await trx('knowledge_pages').where({ tenant_id: tenantId, source: name }).sum({ n: 'bytes' }).first()) as { n: number | string | null };
    const n = (await trx('knowledge_pages').where({ tenant_id: tenantId, source: name }).count({ n: '*' }).first()) as { n: number | string };
    await trx('knowledge_sources')
      .where({ tenant_id: tenantId, name })
      .update({ passages: Number(p.n), bytes: Number(b.n ?? 0), pages: Number(n.n) });
  }

  /**
   * Stores a page fetched under `lease`: with `passages`, they replace the page's own (numbered
   * after the source's last); `admit` sees the tenant's totals without this page's and throws to
   * refuse. Answers false when the lease is no longer held (nothing written).
   */
  async savePage(
    tenantId: string,
    name: string,
    lease: string,
    now: string,
    page: PageRow,
    passages: Omit<PassageRow, 'source' | 'seq' | 'url'>[] | null,
    admit: (others: KnowledgeTotals) => void,
  ): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      if (!(await this.held(trx, tenantId, name, lease))) return false;
      const before = (await trx('knowledge_pages').where({ tenant_id: tenantId, source: name, url: page.url }).first()) as Record<string, unknown> | undefined;
      if (passages) {
        // The page's old passages are replaced in the tenant's next snapshot (kept while a version in use pins one that sees them).
        const snapshot = await nextSnapshot(trx, tenantId, now);
        const from = await replacePassages(trx, tenantId, name, snapshot, page.url);
        await prune(trx, tenantId);
        const all = await this.sources.totals(tenantId, trx);
        const old = before ? toPage(before) : null;
        admit({ sources: all.sources, bytes: all.bytes - (old?.bytes ?? 0), passages: all.passages - (old?.passages ?? 0) });
        const rows = passages.map((p, i) => ({
          added: snapshot,
          tenant_id: tenantId,
          source: name,
          seq: from + i,
          page: p.page,
          heading: p.heading,
          url: page.url,
          text: p.text,
        }));
        for (let i = 0; i < rows.length; i += INSERT_BATCH) await trx('knowledge_passages').insert(rows.slice(i, i + INSERT_BATCH));
      }
      if (before) await trx('knowledge_pages').where({ tenant_id: tenantId, source: name, url: page.url }).update(pageColumns(page));
      else await trx('knowledge_pages').insert({ tenant_id: tenantId, source: name, url: page.url, ...pageColumns(page) });
      // An unchanged page (the most common write of a sync) changes no total.
      if (passages || !before) await this.recount(trx, tenantId, name);
      return true;
    });
  }

  /** Drops a page and its passages under `lease`; false when the lease is no longer held. */
  async dropPage(tenantId: string, name: string, lease: string, now: string, url: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      if (!(await this.held(trx, tenantId, name, lease))) return false;
      await replacePassages(trx, tenantId, name, await nextSnapshot(trx, tenantId, now), url);
      await prune(trx, tenantId);
      await trx('knowledge_pages').where({ tenant_id: tenantId, source: name, url }).delete();
      await this.recount(trx, tenantId, name);
      return true;
    });
  }

  /**
   * Ends a sync under `lease`: the source's state, its pages' count and hash, when it was fetched
   * (and changed, and indexed, when a page changed), and its next sync. False when the lease is
   * no longer held.
   */
  async finish(
    tenantId: string,
    name: string,
    lease: string,
    r: {
      state: 'indexed' | 'failed';
      error: string | null;
      docTitle: string | null;
      changed: boolean;
      revision: number;
      nextSyncAt: string | null;
      now: string;
    },
  ): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      if (!(await this.held(trx, tenantId, name, lease))) return false;
      const pages: { url: string; sha256: string | null }[] = await trx('knowledge_pages')
        .where({ tenant_id: tenantId, source: name })
        .orderBy('url')
        .select('url', 'sha256');
      const hash = createHash('sha256');
      for (const p of pages) hash.update(`${p.url}\n${p.sha256 ?? ''}\n`);
      await trx('knowledge_sources')
        .where({ tenant_id: tenantId, name })
        .update({
          state: r.state,
          error: r.error,
          doc_title: r.docTitle,
          pages: pages.length,
          sha256: hash.digest('hex'),
          fetched_at: r.now,
          ...(r.changed ? { changed_at: r.now, indexed_at: r.now } : {}),
          synced_revision: r.revision,
          sync_until: null,
          next_sync_at: r.nextSyncAt,
          updated_at: r.now,
        });
      return true;
    });
  }
}
