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
/** How a citation names where it points: the title, then the page, or the heading where it is not the title. */
export function citationName(c: { source: string; title: string | null; page: number | null; heading: string | null }): string {
  const title = c.title ?? c.source;
  const where = c.page !== null ? `page ${c.page}` : c.heading !== title ? c.heading : null;
  return where ? `${title}, ${where}` : title;
}
export const SourceTag = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}');

export const SourceState = z
  .enum(['parsing', 'indexed', 'failed'])
  .describe(
    '`parsing`: the file is being read; `indexed`: its passages answer; `failed`: see `error` (a replaced file keeps answering with its last good text)',
  );
export const FileKind = z.enum(['pdf', 'docx', 'html', 'markdown', 'text']);

const SourceSchema = z
  .object({
    name: SourceName,
    title: z.string().nullable().describe("The title given at upload, else the document's own (its metadata or first heading)"),
    url: z.string().nullable().describe('Where readers find the document: the link citations give'),
    language: z.string().nullable(),
    tags: z.array(SourceTag),
    filename: z.string().nullable(),
    kind: FileKind.nullable().describe('What the file was read as, told from its content; null until read'),
    state: SourceState,
    error: z.string().nullable().describe('Why the last upload could not be read, for a person to act on'),
    bytes: z.number().int().describe("The file's size"),
    pages: z.number().int().nullable().describe('Pages of a PDF'),
    passages: z.number().int().describe('Passages that answer now'),
    sha256: z.string().describe("The file's SHA-256 (hex)"),
    revision: z.number().int().describe('1 for the first file, one more for each replacement'),
    created_at: Timestamp,
    updated_at: Timestamp,
    indexed_at: Timestamp.nullable().describe('When the passages that answer now were indexed'),
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
