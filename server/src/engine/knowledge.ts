// An agent's knowledge (its `knowledge` documents) as passages indexed for BM25 search, built
// once per compiled version. Search and scoring are MiniSearch's (BM25+); this splits documents
// into passages and chooses the terms: lower case, stop words out, Porter stems. What it may
// cost is bounded: the documents' size (MAX_KNOWLEDGE_CHARS, at PUT), the index built a few
// passages at a time between other work, and a query of at most QUERY_TERMS terms, since a
// 4,000-character message of common words walks most of the index (3 s on 10 MB of text).
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import type { AgentDefinition } from '@switchboard/contract';
import { words } from './text-features.js';

/** Passages are cut at headings and paragraphs, and long paragraphs at sentences, near this size. */
const PASSAGE_CHARS = 800;
/** Characters of knowledge one definition may bring (all documents' text and titles together). */
export const MAX_KNOWLEDGE_CHARS = 2_000_000;
/** Distinct terms of a query searched (the first ones of the message, then of the turn before). */
const QUERY_TERMS = 32;
/** Passages indexed between two turns of the event loop while an index is built. */
const INDEX_CHUNK = 50;
/**
 * Bytes the index holds per character of text, measured with `bench/memory.ts`-style heap deltas
 * (5.6–9.4 over varied corpora): the estimate the compiled-version cache is charged.
 */
const BYTES_PER_CHAR = 10;

export interface Passage {
  /** `document-id#n`, n from 1 in document order. */
  id: string;
  title: string | null;
  text: string;
}

const STOP = new Set(
  'a an and are as at be by can could did do does for from had has have how i if in into is it its me my of on or our please so that the their them then there these they this to was we were what when where which who why will with would you your'.split(
    ' ',
  ),
);

function terms(text: string): string[] {
  return words(text)
    .filter((w) => !STOP.has(w))
    .map((w) => stemmer(w));
}

/** Pieces of at most `max` characters, cut after sentence ends where there are any. */
function cutLong(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max);
    const end = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '), window.lastIndexOf('\n'));
    const at = end > max / 3 ? end + 1 : window.lastIndexOf(' ') > max / 3 ? window.lastIndexOf(' ') : max;
    out.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/** A document's passages: a heading starts a new one; paragraphs join while they fit. */
export function splitPassages(doc: { id: string; title?: string; text: string }): Passage[] {
  const blocks: { heading: string | null; text: string }[] = [];
  let heading: string | null = doc.title ?? null;
  for (const raw of doc.text.replace(/\r\n?/g, '\n').split(/\n\s*\n/)) {
    const para = raw.trim();
    if (!para) continue;
    const h = /^#{1,6}\s+(.+?)\s*#*\s*(\n|$)/.exec(para);
    if (h) {
      heading = h[1];
      const body = para.slice(h[0].length).trim();
      blocks.push({ heading, text: '' });
      if (body) blocks.push({ heading, text: body });
      continue;
    }
    blocks.push({ heading, text: para });
  }
  const passages: Passage[] = [];
  let cur: { heading: string | null; parts: string[]; size: number } | null = null;
  const flush = () => {
    if (cur && cur.parts.length) passages.push({ id: `${doc.id}#${passages.length + 1}`, title: cur.heading, text: cur.parts.join('\n\n') });
    cur = null;
  };
  for (const b of blocks) {
    if (!b.text) {
      flush();
      cur = { heading: b.heading, parts: [], size: 0 };
      continue;
    }
    for (const piece of cutLong(b.text, PASSAGE_CHARS)) {
      if (!cur || cur.heading !== b.heading || cur.size + piece.length > PASSAGE_CHARS) {
        flush();
        cur = { heading: b.heading, parts: [], size: 0 };
      }
      cur.parts.push(piece);
      cur.size += piece.length + 2;
    }
  }
  flush();
  return passages;
}

export class KnowledgeIndex {
  private readonly byId: Map<string, Passage>;
  /** Approximate bytes held: the passages' text and the index over them (BYTES_PER_CHAR). */
  readonly bytes: number;

  private constructor(
    passages: Passage[],
    private readonly index: MiniSearch<Passage>,
  ) {
    this.byId = new Map(passages.map((p) => [p.id, p]));
    this.bytes = BYTES_PER_CHAR * passages.reduce((n, p) => n + p.text.length + (p.title?.length ?? 0), 0);
  }

  /** Splits and indexes the documents, a few passages at a time so the event loop keeps turning. */
  static async build(docs: NonNullable<AgentDefinition['knowledge']>): Promise<KnowledgeIndex> {
    const passages = docs.flatMap(splitPassages);
    const index = new MiniSearch<Passage>({
      fields: ['title', 'text'],
      idField: 'id',
      extractField: (p, field) => (field === 'title' ? (p.title ?? '') : field === 'id' ? p.id : p.text),
      tokenize: terms,
      processTerm: (t) => t,
      searchOptions: { boost: { title: 2 }, combineWith: 'OR', tokenize: terms, processTerm: (t) => t },
    });
    await index.addAllAsync(passages, { chunkSize: INDEX_CHUNK });
    return new KnowledgeIndex(passages, index);
  }

  get size(): number {
    return this.byId.size;
  }

  /** The best `k` passages for a query (its first QUERY_TERMS distinct terms), best first, with their BM25 scores. */
  search(query: string, k = 4): { passage: Passage; score: number }[] {
    const stems = new Set<string>();
    const kept: string[] = [];
    for (const w of words(query)) {
      if (kept.length === QUERY_TERMS) break;
      const stem = stemmer(w);
      if (STOP.has(w) || stems.has(stem)) continue;
      stems.add(stem);
      kept.push(w);
    }
    if (kept.length === 0 || this.byId.size === 0) return [];
    return this.index
      .search(kept.join(' '))
      .slice(0, k)
      .map((r) => ({ passage: this.byId.get(String(r.id))!, score: Math.round(r.score * 1000) / 1000 }));
  }
}
