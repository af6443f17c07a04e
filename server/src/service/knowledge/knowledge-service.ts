// Knowledge sources (docs/knowledge.md): uploads stored and read in the background (extractor.ts,
// in worker threads), their passages swapped in when read, the tenant's quotas, and the search
// answer and generative phases make over the passages of the sources an agent names. A search
// index is built per tenant and selection of sources from the stored passages, in a worker thread,
// and kept (bounded by bytes) until one of the sources changes, so every replica answers from the
// same passages without a shared index. A search waits up to FRESH_MS for a changed selection's
// new index, then answers from the one before it while the build goes on (never with a deleted
// source's passages); only a selection's first search waits for its index to the end.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { SourceName, type KnowledgeSource, type Usage } from '@switchboard/contract';
import { InputError, LimitError, NotFoundError, RateLimitedError, UnavailableError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { decodeCursor, pageOf } from '../../lib/cursor.js';
import { rarity, splitPassages, type Found, type Passage } from '../../engine/knowledge.js';
import { KnowledgeIndex } from '../../engine/knowledge-index.js';
import type { KnowledgeSourceStore, KnowledgeTotals, PassageRow, SourceRow } from '../../store/knowledge/source-store.js';
import { ExtractError, type Extracted } from './extract.js';
import type { Extractor } from './extractor.js';
import type { WordVectors } from '../../engine/word-vectors.js';

/** A source whose passages answer, as the store lists them. */
type AnsweringSource = Awaited<ReturnType<KnowledgeSourceStore['answering']>>[number];

export interface KnowledgeLimits {
  /** Bytes one file may have. */
  maxFileBytes: number;
  /** Sources a tenant may have. */
  maxSources: number;
  /** Bytes of files a tenant's sources may hold together. */
  maxBytes: number;
  /** Passages a tenant's sources may hold together. */
  maxPassages: number;
  /** Bytes of search indexes kept in memory, all tenants together. */
  cacheBytes: number;
}

/** Which sources an agent (or a search) reads: names, and every source with one of the tags. */
export interface SourceSelector {
  names: string[];
  tags: string[];
}

/**
 * Files of one tenant this process holds waiting to be read or being read: each is in memory
 * until it is read, so a tenant uploading faster than its files are read is asked to wait (429)
 * past this many files, or past twice the largest file's bytes (one file is always taken).
 */
const PENDING_PER_TENANT = 16;

/** A source still `parsing` whose row has not moved for this long belonged to a process that stopped. */
const STALE_MS = 10 * 60 * 1000;
const STOPPED = 'the server reading the file stopped before it finished: upload it again';
/** How long a search waits for a changed selection's new index before it answers from the one before. */
const FRESH_MS = 2_000;
/** How long an index that could not be built is not tried again. */
const FAILED_MS = 60_000;

/** A source name or tag, as the contract spells them (SourceName). */
const isName = (v: unknown): v is string => SourceName.safeParse(v).success;
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/**
 * The passages of an extracted file: each section cut at headings and paragraphs, numbered from 1
 * in document order; a passage before any heading stands under the document's title.
 */
export function passagesOf(x: Extracted): Omit<PassageRow, 'source' | 'url'>[] {
  const out: Omit<PassageRow, 'source' | 'url'>[] = [];
  for (const s of x.sections) {
    for (const p of splitPassages({ id: 'p', title: s.heading ?? undefined, text: s.text })) {
      out.push({ seq: out.length + 1, page: s.page, heading: p.title ?? x.title, text: p.text });
    }
  }
  return out;
}

/** The promise's value if it settles well within `ms`, else null (it goes on; a failure is its own to report). */
function settledWithin<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)));
  return Promise.race([p.catch(() => null), late]).finally(() => clearTimeout(timer));
}

export class KnowledgeService {
  /** Ingestions this process runs, by tenant and source, with the bytes each holds. */
  private readonly running = new Map<string, { done: Promise<void>; bytes: number }>();
  private readonly indexes: LRUCache<
    string,
    { key: string; index: KnowledgeIndex; tenantId: string; selector: SourceSelector | null; snapshot: number | null }
  >;
  /** Indexes being built, by cache key and sources' revisions, with when each started: turns that miss at once share one build. */
  private readonly building = new Map<string, { done: Promise<KnowledgeIndex>; started: number }>();
  /** Refreshes under way (refresh): what `idle` waits for beside ingestions. */
  private readonly refreshing = new Set<Promise<void>>();
  /** Builds that failed, for a while (FAILED_MS): a search does not start the same failing work again each turn. */
  private readonly failed = new LRUCache<string, { error: Error }>({ max: 10_000, ttl: FAILED_MS });

  constructor(
    private readonly store: KnowledgeSourceStore,
    private readonly extractor: Extractor,
    /** The worker pool search indexes are built in (its own, so an index never waits behind a file being read). */
    private readonly indexer: Extractor,
    private readonly clock: Clock,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
    readonly limits: KnowledgeLimits,
    /** The app's word vectors: how rare each word of a question is in English (null: the documents alone say). */
    private readonly words: WordVectors | null = null,
  ) {
    this.indexes = new LRUCache({ maxSize: limits.cacheBytes, sizeCalculation: (v) => Math.max(1, v.index.bytes) });
  }

  get maxFileBytes(): number {
    return this.limits.maxFileBytes;
  }

  view(r: SourceRow): KnowledgeSource {
    const now = this.clock.now();
    const stopped = r.state === 'parsing' && !this.running.has(`${r.tenantId}\n${r.name}`) && Date.parse(r.updatedAt) < now.getTime() - STALE_MS;
    // A sync whose server stopped: due again when its lease ran out.
    const orphan = r.state === 'fetching' && (!r.syncUntil || Date.parse(r.syncUntil) < now.getTime());
    return {
      name: r.name,
      title: r.title ?? r.docTitle,
      url: r.url,
      language: r.language,
      tags: r.tags,
      filename: r.filename,
      kind: r.kind as KnowledgeSource['kind'],
      site: r.site,
      schedule: r.schedule as KnowledgeSource['schedule'],
      state: stopped ? 'failed' : orphan ? 'queued' : r.state,
      error: stopped ? STOPPED : r.error,
      bytes: r.bytes,
      pages: r.pages,
      passages: r.passages,
      sha256: r.sha256,
      revision: r.revision,
      created_at: r.createdAt,
      updated_at: r.updatedAt,
      indexed_at: r.indexedAt,
      fetched_at: r.fetchedAt,
      changed_at: r.changedAt,
      next_sync_at: r.nextSyncAt,
    };
  }

  admit(others: KnowledgeTotals, existing: SourceRow | null, bytes: number): void {
    const { maxSources, maxBytes } = this.limits;
    if (!existing && others.sources + 1 > maxSources) {
      throw new LimitError(`The tenant has ${others.sources} knowledge sources, the most it may have (KNOWLEDGE_MAX_SOURCES=${maxSources})`, 'path.source');
    }
    if (others.bytes + bytes > maxBytes) {
      throw new LimitError(
        `The tenant's knowledge files would hold ${others.bytes + bytes} bytes, more than the ${maxBytes} allowed (KNOWLEDGE_MAX_BYTES_MB); delete a source or upload a smaller file`,
        'body.file',
      );
    }
  }

  /**
   * Stores an upload and reads it in the background (answered `parsing`); the same file again,
   * already read, changes only the fields given with it. Over a quota: 422 and nothing stored.
   */
  async upload(
    tenantId: string,
    name: string,
    fields: { title?: string; url?: string; language?: string; tags?: string },
    file: { bytes: Uint8Array; filename: string | null; mediaType: string | null },
  ): Promise<KnowledgeSource> {
    if (file.bytes.length === 0) throw new InputError('The file is empty', [{ path: 'body.file', message: 'empty' }]);
    const pending = [...this.running.entries()].filter(([k]) => k.startsWith(`${tenantId}\n`)).map(([, v]) => v.bytes);
    const held = pending.reduce((n, b) => n + b, 0);
    if (pending.length >= PENDING_PER_TENANT || (pending.length > 0 && held + file.bytes.length > 2 * this.limits.maxFileBytes)) {
      throw new RateLimitedError(5, `${pending.length} of the tenant's files (${held} bytes) are waiting to be read; upload more once one of them is indexed`);
    }
    const tags = [
      ...new Set(
        (fields.tags ?? '')
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      ),
    ];
    const bad = tags.find((t): boolean => !isName(t));
    if (bad !== undefined) throw new InputError('Invalid tag', [{ path: 'body.tags', message: `"${bad.slice(0, 64)}" must match [a-z0-9][a-z0-9_-]{0,63}` }]);
    if (tags.length > 20) throw new InputError('Too many tags', [{ path: 'body.tags', message: 'at most 20' }]);
    const sha256 = createHash('sha256').update(file.bytes).digest('hex');
    const now = iso(this.clock.now());
    const upload = {
      name,
      title: fields.title ?? null,
      url: fields.url ?? null,
      language: fields.language ?? null,
      tags,
      filename: file.filename,
      bytes: file.bytes.length,
      sha256,
    };
    const row = await this.store.upload(tenantId, upload, now, (others, existing) => this.admit(others, existing, file.bytes.length), {
      // The same file, already read: nothing to read again.
      unchanged: (existing) => existing.sha256 === sha256 && existing.state === 'indexed',
    });
    if (row.state === 'parsing') this.start(row, file);
    return this.view(row);
  }

  private start(row: SourceRow, file: { bytes: Uint8Array; filename: string | null; mediaType: string | null }): void {
    const key = `${row.tenantId}\n${row.name}`;
    const entry = { bytes: file.bytes.length, done: Promise.resolve() };
    entry.done = this.ingest(row, file)
      .catch((err: unknown) => this.log.warn({ err, tenant: row.tenantId, source: row.name }, 'knowledge ingestion failed'))
      .finally(() => {
        if (this.running.get(key) === entry) this.running.delete(key);
      });
    this.running.set(key, entry);
  }

  private async ingest(row: SourceRow, file: { bytes: Uint8Array; filename: string | null; mediaType: string | null }): Promise<void> {
    const started = performance.now();
    try {
      const x = await this.extractor.extract(row.tenantId, file.bytes, file.filename, file.mediaType);
      const passages = passagesOf(x);
      const applied = await this.store.index(
        row.tenantId,
        row.name,
        row.revision,
        { kind: x.kind, docTitle: x.title, pages: x.pages, chars: x.chars, passages, now: iso(this.clock.now()) },
        (others) => {
          if (others + passages.length > this.limits.maxPassages) {
            throw new ExtractError(
              `the file gives ${passages.length} passages and the tenant's other sources hold ${others}: more than the ${this.limits.maxPassages} allowed (KNOWLEDGE_MAX_PASSAGES)`,
            );
          }
        },
      );
      this.log.info(
        {
          tenant: row.tenantId,
          source: row.name,
          revision: row.revision,
          kind: x.kind,
          pages: x.pages,
          passages: passages.length,
          ms: Math.round(performance.now() - started),
          applied,
        },
        applied ? 'knowledge source indexed' : 'knowledge source read, but a newer file of it came first',
      );
      if (applied) this.refresh(row.tenantId);
    } catch (err) {
      const reason = err instanceof ExtractError ? err.message : 'the file could not be read (an internal error; the operator log has it)';
      if (!(err instanceof ExtractError)) this.log.warn({ err, tenant: row.tenantId, source: row.name }, 'knowledge file could not be read');
      await this.store.fail(row.tenantId, row.name, row.revision, reason, iso(this.clock.now()));
    }
  }

  async get(tenantId: string, name: string): Promise<KnowledgeSource> {
    return this.view(await this.row(tenantId, name));
  }

  private async row(tenantId: string, name: string): Promise<SourceRow> {
    const r = await this.store.get(tenantId, name);
    if (!r) throw new NotFoundError('not_found', `No knowledge source ${name}`);
    return r;
  }

  async list(tenantId: string, q: { limit: number; cursor?: string; tag?: string }): Promise<{ data: KnowledgeSource[]; next_cursor: string | null }> {
    const after = decodeCursor(q.cursor, isName);
    const rows = await this.store.list(tenantId, { limit: q.limit + 1, after, tag: q.tag });
    const { page, next_cursor } = pageOf(rows, q.limit, (last) => last.name);
    return { data: page.map((r) => this.view(r)), next_cursor };
  }

  async delete(tenantId: string, name: string): Promise<void> {
    if (!(await this.store.delete(tenantId, name, iso(this.clock.now())))) throw new NotFoundError('not_found', `No knowledge source ${name}`);
    this.refresh(tenantId);
  }

  async passages(tenantId: string, name: string, q: { limit: number; cursor?: string }) {
    await this.row(tenantId, name);
    const after = decodeCursor(q.cursor, isSeq);
    const rows = await this.store.passages(tenantId, name, { limit: q.limit + 1, after });
    const { page, next_cursor } = pageOf(rows, q.limit, (last) => last.seq);
    return {
      data: page.map((p) => ({ id: `${p.source}#${p.seq}`, source: p.source, page: p.page, heading: p.heading, url: p.url, text: p.text })),
      next_cursor,
    };
  }

  /**
   * The best `k` passages of the selected sources for `query`, with the names of the sources
   * searched: as they are now, or at a pinned `snapshot` (a version's). The index of a selection
   * is built once and kept until one of its sources changes (a snapshot's, until one is deleted);
   * meanwhile the index before answers, without the passages of sources no longer there.
   */
  async search(
    tenantId: string,
    selector: SourceSelector | null,
    query: string,
    k: number,
    snapshot: number | null = null,
  ): Promise<{ found: Found[]; sources: string[] }> {
    const { chosen, names, key, cacheKey } = await this.selection(tenantId, selector, snapshot);
    if (!chosen.length) return { found: [], sources: [] };
    const entry = this.indexes.get(cacheKey);
    let index: KnowledgeIndex;
    if (entry?.key === key) index = entry.index;
    else if (entry) {
      // The new index, if it is ready within FRESH_MS of its build's start (not of this search's):
      // during a long build, every search after the first answers at once from the one before.
      const build = this.rebuild(cacheKey, key, tenantId, chosen, selector, snapshot);
      const waited = performance.now() - (this.building.get(`${cacheKey}\n${key}`)?.started ?? performance.now());
      index = (await settledWithin(build, Math.max(0, FRESH_MS - waited))) ?? entry.index;
    } else
      index = await this.rebuild(cacheKey, key, tenantId, chosen, selector, snapshot).catch((err: unknown) => {
        throw new UnavailableError(`The knowledge index could not be built: ${(err as Error).message}`, { cause: err });
      });
    const current = new Set(names);
    return { found: index.search(query, k, undefined, (p) => current.has(p.source?.name ?? '')), sources: names };
  }

  /**
   * The sources a selector chooses now, and the keys of its index: the cache's (tenant, selector
   * and snapshot) and its content's (each source's revision; at a snapshot, each source's
   * creation, since only a deletion changes what a snapshot holds).
   */
  private async selection(tenantId: string, selector: SourceSelector | null, snapshot: number | null, answering?: AnsweringSource[]) {
    // At a snapshot, a source with no passages now may have had some then.
    const all = answering ?? (await this.store.answering(tenantId, snapshot === null));
    const chosen = selector ? all.filter((s) => selector.names.includes(s.name) || s.tags.some((t) => selector.tags.includes(t))) : all;
    const selected = `${tenantId}\n${selector ? JSON.stringify([[...selector.names].sort(), [...selector.tags].sort()]) : '*'}`;
    return {
      chosen,
      names: chosen.map((s) => s.name),
      key: snapshot === null ? chosen.map((s) => `${s.name}@${s.revision}:${s.indexedAt}`).join(',') : chosen.map((s) => `${s.name}@${s.createdAt}`).join(','),
      cacheKey: snapshot === null ? selected : `${selected}\n@${snapshot}`,
    };
  }

  /**
   * Starts building, for each of the tenant's selections this process keeps an index of, the
   * index of its sources as they are now: called when one of them changed here, so that the
   * next question finds its index ready (other servers build theirs when next asked).
   */
  refresh(tenantId: string): void {
    // A snapshot's index changes only when a source is deleted: it is built again when next asked.
    const kept = [...this.indexes.values()].filter((e) => e.tenantId === tenantId && e.snapshot === null);
    if (!kept.length) return;
    // The tenant's sources read once for all its selections.
    const all = this.store
      .answering(tenantId)
      .then((answering) =>
        Promise.all(
          kept.map(async (e) => {
            const { chosen, key, cacheKey } = await this.selection(tenantId, e.selector, null, answering);
            if (chosen.length && key !== e.key) await this.rebuild(cacheKey, key, tenantId, chosen, e.selector, null);
          }),
        ).then(() => undefined),
      )
      .catch(() => undefined);
    this.refreshing.add(all);
    void all.finally(() => this.refreshing.delete(all));
  }

  /** Builds (or joins the build of) a selection's index at these revisions, and keeps it. */
  private rebuild(
    cacheKey: string,
    key: string,
    tenantId: string,
    chosen: AnsweringSource[],
    selector: SourceSelector | null,
    snapshot: number | null,
  ): Promise<KnowledgeIndex> {
    const id = `${cacheKey}\n${key}`;
    const failed = this.failed.get(id);
    if (failed) return Promise.reject(failed.error);
    let pending = this.building.get(id)?.done;
    if (!pending) {
      pending = this.build(tenantId, chosen, snapshot)
        .then(
          (index) => {
            this.indexes.set(cacheKey, { key, index, tenantId, selector, snapshot });
            return index;
          },
          (err: unknown) => {
            const error = err instanceof Error ? err : new Error(String(err));
            this.failed.set(id, { error });
            this.log.warn({ tenantId, sources: chosen.map((s) => s.name), err: error.message }, 'knowledge index not built');
            throw error;
          },
        )
        .finally(() => this.building.delete(id));
      this.building.set(id, { done: pending, started: performance.now() });
    }
    return pending;
  }

  /** A selection's index: its passages read from the store, their postings built in the indexer's worker. */
  private async build(tenantId: string, chosen: AnsweringSource[], snapshot: number | null): Promise<KnowledgeIndex> {
    if (snapshot !== null) {
      const { keptFrom } = await this.store.snapshot(tenantId);
      if (snapshot < keptFrom) throw new Error(`knowledge snapshot ${snapshot} is no longer kept (every snapshot from ${keptFrom} is)`);
    }
    const meta = new Map(chosen.map((s) => [s.name, s]));
    const rows = await this.store.passagesOf(
      tenantId,
      chosen.map((s) => s.name),
      snapshot,
    );
    const passages: Passage[] = rows.map((p) => {
      const s = meta.get(p.source)!;
      return {
        id: `${p.source}#${p.seq}`,
        title: p.heading,
        text: p.text,
        source: { name: p.source, title: s.title ?? s.docTitle, url: p.url ?? s.url, page: p.page },
      };
    });
    const postings = await this.indexer.index(
      tenantId,
      passages.map((p) => p.title),
      passages.map((p) => p.text),
    );
    const words = this.words;
    const index = KnowledgeIndex.from(passages, postings, words ? (w) => rarity(words.probabilityOf(w)) : undefined);
    // One the cache could not hold would be built again on every search: refused instead.
    if (index.bytes > this.limits.cacheBytes)
      throw new Error(
        `the index of ${index.size} passages needs ${Math.ceil(index.bytes / 2 ** 20)} MiB, more than KNOWLEDGE_CACHE_MB (${Math.floor(this.limits.cacheBytes / 2 ** 20)})`,
      );
    return index;
  }

  /** What the tenant's sources use of its quotas, beside the limits (the syncs of the day are the sites' to say). */
  async usage(tenantId: string): Promise<Omit<Usage['knowledge'], 'syncs_today'>> {
    const t = await this.store.totals(tenantId);
    const { maxSources, maxBytes, maxPassages } = this.limits;
    return { sources: { used: t.sources, limit: maxSources }, bytes: { used: t.bytes, limit: maxBytes }, passages: { used: t.passages, limit: maxPassages } };
  }

  /** Parses a search's `sources` parameter: names and `tag:` selectors, comma-separated. */
  static selector(param: string | undefined): SourceSelector | null {
    if (!param?.trim()) return null;
    const sel: SourceSelector = { names: [], tags: [] };
    for (const raw of param
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const tag = raw.startsWith('tag:') ? raw.slice(4) : null;
      const name = tag ?? raw;
      if (!isName(name))
        throw new InputError('Invalid sources', [{ path: 'query.sources', message: `"${raw.slice(0, 70)}" is neither a source name nor tag:<tag>` }]);
      (tag !== null ? sel.tags : sel.names).push(name);
    }
    return sel;
  }

  /** Waits for the ingestions this process runs (tests, the demo). */
  async idle(): Promise<void> {
    while (this.running.size || this.refreshing.size) {
      await Promise.all([...[...this.running.values()].map((r) => r.done), ...this.refreshing]);
    }
  }

  /** Stops reading files: those being read fail, saying the server stopped, and are recorded so. */
  async close(): Promise<void> {
    await Promise.all([this.extractor.close(), this.indexer.close()]);
    await this.idle();
  }
}
