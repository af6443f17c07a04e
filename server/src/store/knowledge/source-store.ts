// Knowledge sources and their passages (migration 028). Every query filters by tenant. A new
// file's passages replace the old ones in one transaction, and only while the source still holds
// the revision that was read (a later upload of the same name wins over a slower earlier one);
// replaced passages stay while a pinned version sees them (snapshots.ts).
import type { Knex } from 'knex';
import { ConflictError } from '../../errors.js';
import type { Database } from '../db.js';
import { keptPassages, knowledgeLock, nextSnapshot, prune, replacePassages, snapshotOf, visibleAt } from './snapshots.js';

export interface SourceRow {
  tenantId: string;
  name: string;
  title: string | null;
  docTitle: string | null;
  url: string | null;
  language: string | null;
  tags: string[];
  filename: string | null;
  kind: string | null;
  state: 'queued' | 'fetching' | 'parsing' | 'indexed' | 'failed';
  error: string | null;
  bytes: number;
  pages: number | null;
  passages: number;
  chars: number;
  sha256: string;
  revision: number;
  createdAt: string;
  updatedAt: string;
  indexedAt: string | null;
  /** A web source's page or site (null for a file). */
  site: SiteSettings | null;
  schedule: string | null;
  nextSyncAt: string | null;
  /** Until when a server holds the source's sync (renewed while it works). */
  syncUntil: string | null;
  fetchedAt: string | null;
  changedAt: string | null;
  /** The revision a sync last finished at: a sync of a later one has new settings. */
  syncedRevision: number | null;
}

/** What a web source fetches (contract Site). */
export interface SiteSettings {
  url: string;
  crawl: 'page' | 'sitemap' | 'links';
  depth: number;
  max_pages: number;
}

export interface PassageRow {
  source: string;
  seq: number;
  page: number | null;
  heading: string | null;
  /** The web page it is on (a web source's). */
  url: string | null;
  text: string;
}

/** What an upload sets on its source. */
export interface Upload {
  name: string;
  title: string | null;
  url: string | null;
  language: string | null;
  tags: string[];
  filename: string | null;
  bytes: number;
  sha256: string;
}

/** A tenant's totals, for its quotas. */
export interface KnowledgeTotals {
  sources: number;
  bytes: number;
  passages: number;
}

export function toRow(r: Record<string, unknown>): SourceRow {
  return {
    tenantId: r.tenant_id as string,
    name: r.name as string,
    title: (r.title as string | null) ?? null,
    docTitle: (r.doc_title as string | null) ?? null,
    url: (r.url as string | null) ?? null,
    language: (r.language as string | null) ?? null,
    tags: JSON.parse(r.tags as string) as string[],
    filename: (r.filename as string | null) ?? null,
    kind: (r.kind as string | null) ?? null,
    state: r.state as SourceRow['state'],
    error: (r.error as string | null) ?? null,
    bytes: Number(r.bytes),
    pages: r.pages === null || r.pages === undefined ? null : Number(r.pages),
    passages: Number(r.passages),
    chars: Number(r.chars),
    sha256: r.sha256 as string,
    revision: Number(r.revision),
    createdAt: r.created_at as string,
    updatedAt: r.updated_at as string,
    indexedAt: (r.indexed_at as string | null) ?? null,
    site: r.site ? (JSON.parse(r.site as string) as SiteSettings) : null,
    schedule: (r.schedule as string | null) ?? null,
    nextSyncAt: (r.next_sync_at as string | null) ?? null,
    syncUntil: (r.sync_until as string | null) ?? null,
    fetchedAt: (r.fetched_at as string | null) ?? null,
    changedAt: (r.changed_at as string | null) ?? null,
    syncedRevision: r.synced_revision === null || r.synced_revision === undefined ? null : Number(r.synced_revision),
  };
}

function toPassage(r: Record<string, unknown>): PassageRow {
  return {
    source: r.source as string,
    seq: Number(r.seq),
    page: r.page === null || r.page === undefined ? null : Number(r.page),
    heading: (r.heading as string | null) ?? null,
    url: (r.url as string | null) ?? null,
    text: r.text as string,
  };
}

/** Passages inserted a batch at a time: well under SQLite's bound-variable limit. */
export const INSERT_BATCH = 100;

export class KnowledgeSourceStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];

  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
  }

  async get(tenantId: string, name: string): Promise<SourceRow | null> {
    const r = (await this.knex('knowledge_sources').where({ tenant_id: tenantId, name }).first()) as Record<string, unknown> | undefined;
    return r ? toRow(r) : null;
  }

  /** Sources by name after `after`, at most `limit`, those with `tag` only when given. */
  async list(tenantId: string, q: { limit: number; after: string | null; tag?: string }): Promise<SourceRow[]> {
    const query = this.knex('knowledge_sources').where({ tenant_id: tenantId }).orderBy('name').limit(q.limit);
    if (q.after !== null) query.where('name', '>', q.after);
    // Tags are few and short: matched here rather than in a JSON query each database spells differently.
    const rows = ((await query) as Record<string, unknown>[]).map(toRow);
    return q.tag ? rows.filter((r) => r.tags.includes(q.tag!)) : rows;
  }

  /**
   * Every source that has passages answering now (every source, when not `withPassages`): its
   * name, title, link, tags, when its passages were indexed and when it was made.
   */
  async answering(
    tenantId: string,
    withPassages = true,
  ): Promise<Pick<SourceRow, 'name' | 'title' | 'docTitle' | 'url' | 'tags' | 'indexedAt' | 'revision' | 'createdAt'>[]> {
    const q = this.knex('knowledge_sources').where({ tenant_id: tenantId });
    if (withPassages) q.where('passages', '>', 0);
    const rows: Record<string, unknown>[] = await q.orderBy('name').select('name', 'title', 'doc_title', 'url', 'tags', 'indexed_at', 'revision', 'created_at');
    return rows.map((r) => ({
      name: r.name as string,
      title: (r.title as string | null) ?? null,
      docTitle: (r.doc_title as string | null) ?? null,
      url: (r.url as string | null) ?? null,
      tags: JSON.parse(r.tags as string) as string[],
      indexedAt: (r.indexed_at as string | null) ?? null,
      revision: Number(r.revision),
      createdAt: r.created_at as string,
    }));
  }

  async totals(tenantId: string, knex: Knex = this.knex): Promise<KnowledgeTotals> {
    const r = (await knex('knowledge_sources')
      .where({ tenant_id: tenantId })
      .select(knex.raw('count(*) as n'), knex.raw('coalesce(sum(bytes), 0) as bytes'), knex.raw('coalesce(sum(passages), 0) as passages'))
      .first()) as { n: number | string; bytes: number | string; passages: number | string } | undefined;
    // Replaced passages kept for the versions that pin them count too (snapshots.ts).
    return { sources: Number(r?.n ?? 0), bytes: Number(r?.bytes ?? 0), passages: Number(r?.passages ?? 0) + (await keptPassages(knex, tenantId)) };
  }

  /**
   * Stores an upload as the source's next revision (a new source at revision 1), `parsing`,
   * keeping the passages that answer now; `admit` sees the tenant's totals without this source
   * under the tenant's lock, and throws to refuse; the file it holds already (`unchanged`, read
   * and indexed) changes only its fields. Answers the stored row.
   */
  async upload(
    tenantId: string,
    u: Upload,
    now: string,
    admit: (others: KnowledgeTotals, existing: SourceRow | null) => void,
    o: { unchanged: (existing: SourceRow) => boolean },
  ): Promise<SourceRow> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      const before = (await trx('knowledge_sources').where({ tenant_id: tenantId, name: u.name }).first()) as Record<string, unknown> | undefined;
      const existing = before ? toRow(before) : null;
      if (existing?.site)
        throw new ConflictError('source_kind_mismatch', `The knowledge source ${u.name} is a web source: delete it first to upload a file under its name`);
      const all = await this.totals(tenantId, trx);
      admit(existing ? { sources: all.sources - 1, bytes: all.bytes - existing.bytes, passages: all.passages - existing.passages } : all, existing);
      const fields = {
        title: u.title,
        url: u.url,
        language: u.language,
        tags: JSON.stringify(u.tags),
        filename: u.filename,
        state: 'parsing',
        error: null,
        bytes: u.bytes,
        sha256: u.sha256,
        updated_at: now,
      };
      if (existing && o.unchanged(existing)) {
        // The file it holds already: only the fields given with it change.
        await trx('knowledge_sources')
          .where({ tenant_id: tenantId, name: u.name })
          .update({ title: u.title, url: u.url, language: u.language, tags: fields.tags, updated_at: now });
      } else if (existing) {
        await trx('knowledge_sources')
          .where({ tenant_id: tenantId, name: u.name })
          .update({ ...fields, revision: existing.revision + 1 });
      } else {
        await trx('knowledge_sources').insert({ tenant_id: tenantId, name: u.name, ...fields, passages: 0, chars: 0, revision: 1, created_at: now });
      }
      return toRow((await trx('knowledge_sources').where({ tenant_id: tenantId, name: u.name }).first()) as Record<string, unknown>);
    });
  }

  /**
   * Replaces the source's passages with `passages` and marks it indexed, if it still holds
   * `revision`; `admit` sees the tenant's passages of its other sources and throws to refuse.
   * Answers whether it was applied.
   */
  async index(
    tenantId: string,
    name: string,
    revision: number,
    r: { kind: string; docTitle: string | null; pages: number | null; chars: number; passages: Omit<PassageRow, 'source' | 'url'>[]; now: string },
    admit: (otherPassages: number) => void,
  ): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      const cur: { revision: number | string; passages: number | string } | undefined = await trx('knowledge_sources')
        .where({ tenant_id: tenantId, name })
        .first('revision', 'passages');
      if (!cur || Number(cur.revision) !== revision) return false;
      // The old passages are replaced in the tenant's next snapshot (kept while a version in use pins one that sees them).
      const snapshot = await nextSnapshot(trx, tenantId, r.now);
      const from = await replacePassages(trx, tenantId, name, snapshot);
      await prune(trx, tenantId);
      admit((await this.totals(tenantId, trx)).passages - Number(cur.passages));
      const rows = r.passages.map((p) => ({
        tenant_id: tenantId,
        source: name,
        seq: from + p.seq - 1,
        page: p.page,
        heading: p.heading,
        text: p.text,
        added: snapshot,
      }));
      for (let i = 0; i < rows.length; i += INSERT_BATCH) await trx('knowledge_passages').insert(rows.slice(i, i + INSERT_BATCH));
      await trx('knowledge_sources').where({ tenant_id: tenantId, name }).update({
        kind: r.kind,
        doc_title: r.docTitle,
        pages: r.pages,
        chars: r.chars,
        passages: rows.length,
        state: 'indexed',
        error: null,
        updated_at: r.now,
        indexed_at: r.now,
      });
      return true;
    });
  }

  /** Marks the source's `revision` failed with why; its passages (an earlier file's) keep answering. */
  async fail(tenantId: string, name: string, revision: number, error: string, now: string): Promise<void> {
    await this.knex('knowledge_sources').where({ tenant_id: tenantId, name, revision }).update({ state: 'failed', error, updated_at: now });
  }

  /**
   * Deletes the source and its passages, those kept for pinned versions too (a deleted source
   * leaves every snapshot at once); answers whether there was one.
   */
  async delete(tenantId: string, name: string, now: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      await this.adapter.lockKey(trx, knowledgeLock(tenantId));
      await nextSnapshot(trx, tenantId, now);
      await trx('knowledge_passages').where({ tenant_id: tenantId, source: name }).delete();
      await trx('knowledge_pages').where({ tenant_id: tenantId, source: name }).delete();
      return (await trx('knowledge_sources').where({ tenant_id: tenantId, name }).delete()) > 0;
    });
  }

  /** A source's passages in document order after `after`, at most `limit`. */
  async passages(tenantId: string, name: string, q: { limit: number; after: number | null }): Promise<PassageRow[]> {
    const query = this.knex('knowledge_passages').where({ tenant_id: tenantId, source: name }).whereNull('removed').orderBy('seq').limit(q.limit);
    if (q.after !== null) query.where('seq', '>', q.after);
    return ((await query) as Record<string, unknown>[]).map(toPassage);
  }

  /** The tenant's newest knowledge snapshot and the oldest one still whole. */
  snapshot(tenantId: string): Promise<{ snapshot: number; keptFrom: number }> {
    return snapshotOf(this.knex, tenantId);
  }

  /** Every passage of the named sources, now or at a snapshot, for building a search index. */
  async passagesOf(tenantId: string, names: string[], snapshot: number | null = null): Promise<PassageRow[]> {
    if (!names.length) return [];
    const out: PassageRow[] = [];
    for (let i = 0; i < names.length; i += INSERT_BATCH) {
      const rows: Record<string, unknown>[] = await visibleAt(
        this.knex('knowledge_passages')
          .where({ tenant_id: tenantId })
          .whereIn('source', names.slice(i, i + INSERT_BATCH)),
        snapshot,
      )
        .orderBy(['source', 'seq'])
        .select('source', 'seq', 'page', 'heading', 'url', 'text');
      for (const r of rows) out.push(toPassage(r));
    }
    return out;
  }
}
