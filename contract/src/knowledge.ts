// Knowledge sources: a tenant's documents (PDF, DOCX, HTML, Markdown, text) read into passages
// that agents answer from and cite (docs/knowledge.md).
import { z } from 'zod';
import { Page, Timestamp } from './common.js';

export const SourceName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}')
  .describe("A source's name, unique in the tenant");
/**
 * A source name made from a file's name (its folders and extension left out): lower case, runs
 * of other characters as one dash, at most 64 characters; empty when none can be made. The CLI
 * and the console name an upload by it.
 */
export function sourceNameOf(filename: string): string {
  return (filename.split(/[\\/]/).pop() ?? '')
    .replace(/\.[^.]*$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, 64);
}
/**
 * A source name made from a web URL's host and path (an extension left out): lower case, runs of
 * other characters as one dash, at most 64 characters; empty for what is not a URL. The CLI and
 * the console name a web source by it.
 */
export function siteNameOf(url: string): string {
  if (!URL.canParse(url)) return '';
  const u = new URL(url);
  return `${u.hostname}${u.pathname.replace(/\.[a-z0-9]+$/i, '')}`
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}
/** How a citation names where it points: the title, then the page, or the heading where it is not the title. */
export function citationName(c: { source: string; title: string | null; page: number | null; heading: string | null }): string {
  const title = c.title ?? c.source;
  const where = c.page !== null ? `page ${c.page}` : c.heading !== title ? c.heading : null;
  return where ? `${title}, ${where}` : title;
}
export const SourceTag = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}');

export const KnowledgeSnapshot = z
  .object({
    snapshot: z
      .number()
      .int()
      .describe("The tenant's knowledge snapshot: every change of its passages (a file read, a page synced, a source deleted) is the next number"),
    digest: z.string().describe('SHA-256 of the passages the selected sources had at that snapshot (each by source, number and the snapshot it came in)'),
  })
  .describe('The passages a version answers from, pinned when it was made (`knowledge_updates: release`)');
export type KnowledgeSnapshot = z.infer<typeof KnowledgeSnapshot>;

export const SourceState = z
  .enum(['queued', 'fetching', 'parsing', 'indexed', 'failed'])
  .describe(
    '`queued`: a web source waiting for its sync; `fetching`: its pages are being fetched and read; `parsing`: the file is being read; `indexed`: its passages answer; `failed`: see `error` (a replaced file, or a site that could not be synced, keeps answering with its last good text)',
  );
export const FileKind = z.enum(['pdf', 'docx', 'html', 'markdown', 'text']);
export const SourceKind = z.enum([...FileKind.options, 'web']).describe('What the file was read as, told from its content (`web`: a page or a site)');

export const SyncSchedule = z
  .enum(['hourly', 'daily', 'weekly', 'never'])
  .describe('How often a web source is synced (`never`: only when asked, `POST …/sync`)');
export const CrawlMode = z
  .enum(['page', 'sitemap', 'links'])
  .describe(
    '`page`: the one page at `url`; `sitemap`: the pages `url` (a sitemap or sitemap index) lists; `links`: the pages reached from `url` by links, on its host and under its path, `depth` links deep',
  );

const SiteSchema = z.object({
  url: z
    .string()
    .url()
    .max(2000)
    .refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL')
    .describe('The page, the sitemap, or the page the links are followed from'),
  crawl: CrawlMode.default('page'),
  depth: z.number().int().min(0).max(5).default(2).describe('Links followed from `url` (`links` only)'),
  max_pages: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .describe(
      'Pages kept at most (default 100, or KNOWLEDGE_MAX_SITE_PAGES when lower); a site listing more keeps the first, and says so. At most KNOWLEDGE_MAX_SITE_PAGES',
    ),
});
export const Site = SiteSchema.describe('What a web source fetches');
export type Site = z.output<typeof SiteSchema>;

const SourceSchema = z
  .object({
    name: SourceName,
    title: z.string().nullable().describe("The title given at upload, else the document's own (its metadata or first heading)"),
    url: z.string().nullable().describe('Where readers find the document: the link citations give'),
    language: z.string().nullable(),
    tags: z.array(SourceTag),
    filename: z.string().nullable(),
    kind: SourceKind.nullable().describe('What the file was read as, told from its content (`web`: a page or a site); null until read'),
    site: z
      .object({ url: z.string(), crawl: CrawlMode, depth: z.number().int(), max_pages: z.number().int() })
      .nullable()
      .describe('What a web source fetches; null for a file'),
    schedule: SyncSchedule.nullable().describe("A web source's sync schedule; null for a file"),
    state: SourceState,
    error: z
      .string()
      .nullable()
      .describe(
        "Why the last upload could not be read, or what went wrong in a web source's last sync (pages that could not be fetched), for a person to act on",
      ),
    bytes: z.number().int().describe("The file's size, or the bytes of a web source's pages"),
    pages: z.number().int().nullable().describe('Pages of a PDF, or the pages a web source holds'),
    passages: z.number().int().describe('Passages that answer now'),
    sha256: z.string().describe("The file's SHA-256 (hex)"),
    revision: z.number().int().describe('1 for the first file, one more for each replacement'),
    created_at: Timestamp,
    updated_at: Timestamp,
    indexed_at: Timestamp.nullable().describe('When the passages that answer now were indexed'),
    fetched_at: Timestamp.nullable().describe("When a web source's pages were last fetched"),
    changed_at: Timestamp.nullable().describe('When a sync last found a page new, changed or gone'),
    next_sync_at: Timestamp.nullable().describe("When a web source's next sync is due (null: none is scheduled)"),
  })
  .describe('A knowledge source');
export type KnowledgeSource = z.infer<typeof SourceSchema>;
export const KnowledgeSource: z.ZodType<KnowledgeSource> = SourceSchema;

/** The form fields of an upload beside `file`. */
export const SourceUpload = z.object({
  file: z
    .custom<File>((v) => v !== undefined && v !== null && typeof v !== 'string')
    .describe('The document: PDF, DOCX, HTML, Markdown or UTF-8 text (a file part; its name and type must agree with its content)'),
  title: z.string().trim().min(1).max(300).optional().describe("Shown in citations; default the document's own title"),
  url: z
    .string()
    .url()
    .max(2000)
    .refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL')
    .optional()
    .describe('Where readers find the document (the link in citations)'),
  language: z
    .string()
    .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'a BCP 47 language tag, e.g. en or pt-BR')
    .optional(),
  tags: z.string().max(1000).optional().describe('Comma-separated tags agents may select sources by (`knowledge_sources: [{ tag: … }]`)'),
});

/** A web source: a page, or a site by sitemap or by links, and its schedule. */
export const SiteBody = SiteSchema.extend({
  schedule: SyncSchedule.default('daily'),
  title: z.string().trim().min(1).max(300).optional().describe("Shown in citations; default the first page's title"),
  language: z
    .string()
    .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'a BCP 47 language tag, e.g. en or pt-BR')
    .optional(),
  tags: z.array(SourceTag).max(20).default([]).describe('Tags agents may select sources by'),
}).describe('A web page or a site to sync as a knowledge source');
export type SiteBody = z.output<typeof SiteBody>;

export const PageState = z.enum(['ok', 'failed']).describe('`failed`: its last fetch failed (its last good text keeps answering until it is dropped)');
export const SitePage = z
  .object({
    url: z.string(),
    title: z.string().nullable(),
    state: PageState,
    error: z.string().nullable().describe('Why the last fetch failed'),
    failures: z.number().int().describe('Syncs in a row whose fetch of it failed: at 3 it is dropped'),
    bytes: z.number().int(),
    passages: z.number().int(),
    fetched_at: Timestamp.nullable(),
    changed_at: Timestamp.nullable().describe('When its text last changed'),
  })
  .describe('A page of a web source');
export const SitePagePage = Page(SitePage).describe("A web source's pages by URL");

export const SourcesQuery = z.object({
  tag: SourceTag.optional().describe('Only sources with this tag'),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(500).optional(),
});

export const Passage = z
  .object({
    id: z.string().describe('`source#n`, n from 1 in document order'),
    source: SourceName,
    page: z.number().int().nullable().describe('The PDF page the passage is on'),
    heading: z.string().nullable().describe('The heading the passage stands under'),
    url: z.string().nullable().describe("The web page the passage is on (a web source's), else null"),
    text: z.string(),
  })
  .describe('A passage of a source');
export type Passage = z.infer<typeof Passage>;

export const SourcePage = Page(KnowledgeSource).describe("The tenant's sources by name");
export const PassagePage = Page(Passage).describe("A source's passages in document order");

export const PassagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
});

export const KnowledgeSearchQuery = z.object({
  q: z.string().trim().min(1).max(4000).describe('The question'),
  sources: z.string().max(2000).optional().describe('Comma-separated source names and `tag:` selectors (as an agent names them); default every source'),
  limit: z.coerce.number().int().min(1).max(20).default(5),
});

export const Citation = z
  .object({
    source: SourceName,
    title: z.string().nullable(),
    url: z.string().nullable(),
    page: z.number().int().nullable(),
    heading: z.string().nullable(),
    passage_id: z.string(),
    snippet: z.string().describe('The sentences of the passage the answer used'),
  })
  .describe('A passage an answer came from');
export type Citation = z.infer<typeof Citation>;

export const SearchHit = Passage.extend({
  title: z.string().nullable().describe("The source's title"),
  url: z.string().nullable(),
  score: z.number().describe('BM25 score'),
  confidence: z
    .number()
    .describe("Share of the question's terms (weighted by rarity) the passage holds, 0–1: what answer phases compare with `min_confidence`"),
});
export const SearchResult = z.object({ data: z.array(SearchHit) }).describe('Passages, best first');
