// Knowledge passages: documents cut into passages near 800 characters at headings, paragraphs
// and sentences; the terms a question and a passage are compared by (lower case, stop words out,
// Porter stems from the stemmer package); the rarity prior that weighs a question's words; and
// the sentences an answer quotes. The search index over passages is knowledge-index.ts.
import { stemmer } from 'stemmer';
import { words } from './text-features.js';

/** Passages are cut at headings and paragraphs, and long paragraphs at sentences, near this size. */
const PASSAGE_CHARS = 800;
/** Characters of knowledge one definition may bring (all documents' text and titles together). */
export const MAX_KNOWLEDGE_CHARS = 2_000_000;
/** Distinct terms of a query searched (the first ones of the message, then of the turn before). */
const QUERY_TERMS = 32;
/**
 * The prior weight of a word of English probability p in a question is PRIOR_A / (PRIOR_A + p):
 * SIF's form with a hundred times smaller a, so that the words questions are framed with ("how
 * long", "take", "get") weigh a few hundredths and content words ("refund", "warranty") most of 1.
 */
const PRIOR_A = 1e-5;

/** The prior weight of a word (0–1) from its probability in English; a word the vocabulary lacks is rare and weighs 1. */
export function rarity(probability: number | null): number {
  return probability === null ? 1 : PRIOR_A / (PRIOR_A + probability);
}

export interface Passage {
  /** `document-id#n`, n from 1 in document order. */
  id: string;
  /** The heading it stands under (the document's title before any). */
  title: string | null;
  text: string;
  /** Of a knowledge source's passage: the source, its title and link, and the PDF page. */
  source?: { name: string; title: string | null; url: string | null; page: number | null };
}

/** A passage found for a query: its BM25 score, and how much of the query it holds (0–1, terms weighted by rarity). */
export interface Found {
  passage: Passage;
  score: number;
  confidence: number;
}

export const STOP = new Set(
  'a an and are as at be by can could did do does for from had has have how i if in into is it its me my of on or our please so that the their them then there these they this to was we were what when where which who why will with would you your'.split(
    ' ',
  ),
);

export function terms(text: string): string[] {
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

/** The distinct stems of a query, at most QUERY_TERMS of them, with the words they came from. */
export function queryStems(query: string): { stems: string[]; words: string[] } {
  const stems: string[] = [];
  const kept: string[] = [];
  for (const w of words(query)) {
    if (kept.length === QUERY_TERMS) break;
    const stem = stemmer(w);
    if (STOP.has(w) || stems.includes(stem)) continue;
    stems.push(stem);
    kept.push(w);
  }
  return { stems, words: kept };
}

/**
 * The passage's sentences that hold the most of the query's terms (at most `max`, in the
 * passage's order; those holding none are left out): what an answer quotes rather than the
 * whole passage. A passage whose sentences hold none of them gives its first.
 */
export function matchingSentences(text: string, query: string, max = 2): string {
  const wanted = new Set(queryStems(query).stems);
  const sentences = text
    .replace(/\s*\n+\s*/g, ' ')
    .split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(])/u)
    .map((t) => t.trim())
    .filter(Boolean);
  const scored = sentences.map((t, i) => ({ i, hits: new Set(terms(t).filter((x) => wanted.has(x))).size }));
  const best = scored
    .filter((x) => x.hits > 0)
    .sort((a, b) => b.hits - a.hits || a.i - b.i)
    .slice(0, max)
    .sort((a, b) => a.i - b.i);
  return (best.length ? best : scored.slice(0, 1)).map((x) => sentences[x.i]).join(' ');
}
