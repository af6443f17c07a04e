// The search index over knowledge passages: BM25 over a passage's title and text, with the
// confidence an answer phase abstains by. It is written here rather than taken from a library:
// MiniSearch, used before, keeps a map per term and per document and materialises and sorts every
// matching document (418 ms a search at 100,000 passages that all hold the query's terms), while
// here a term's postings are two typed arrays, a search adds into one score array and keeps the
// best k, and what a search may read is bounded (POSTINGS_READ). The postings can be built in a
// worker thread (PostingsBuilder) and sent back without a copy (KnowledgeIndex.from).
// bench/knowledge.ts measures it beside MiniSearch and the databases' full-text search.
import { stemmer } from 'stemmer';
import type { AgentDefinition } from '@switchboard/contract';
import { words } from './text-features.js';
import { queryStems, splitPassages, STOP, type Found, type Passage } from './knowledge.js';

/**
 * Postings a search reads in full: the rarest terms' postings up to this many (the rarest term's
 * always); the commoner terms only re-rank the best RESCORED passages the rarer ones found.
 */
const POSTINGS_READ = 300_000;
const RESCORED = 512;
/** Passages indexed between two turns of the event loop while an index is built. */
const INDEX_CHUNK = 50;
/** BM25's parameters, and the weight of a term in a passage's title against one in its text. */
const K1 = 1.2;
const B = 0.75;
const TITLE_BOOST = 2;
/**
 * Bytes V8 holds for a passage beyond its strings (the object, its source object, its place in
 * the id map) and for a vocabulary entry beyond its string: what `bytes` adds to the strings and
 * typed arrays it counts exactly, checked against the heap in test/engine/knowledge.test.ts.
 */
const PASSAGE_OVERHEAD = 220;
const TERM_OVERHEAD = 60;

/** Bytes of a string in V8: one a character when every one is Latin-1, else two; a header. */
function stringBytes(s: string): number {
  // eslint-disable-next-line no-control-regex
  return 16 + (/[^\u0000-\u00ff]/.test(s) ? 2 : 1) * s.length;
}

/** Postings as built: the stems in term-number order, and typed arrays a worker can transfer. */
export interface PostingsData {
  terms: string[];
  offsets: Int32Array;
  docs: Int32Array;
  impacts: Float32Array;
}

/** A term's postings: the passages holding it (ascending) and its BM25 weight in each. */
interface Postings {
  /** Stem → term number. */
  terms: Map<string, number>;
  /** Term t's postings are docs[offsets[t]] … docs[offsets[t + 1] - 1]. */
  offsets: Int32Array;
  docs: Int32Array;
  impacts: Float32Array;
}

/** BM25's idf: never negative, highest for a term no passage holds. */
function idf(passages: number, df: number): number {
  return Math.log(1 + (passages - df + 0.5) / (df + 0.5));
}

/** The first of docs[from … to) that is ≥ d, by binary search. */
function lowerBound(docs: Int32Array, from: number, to: number, d: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (docs[mid] < d) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** What a search did: the query's terms searched, and the postings it read (its work). */
export interface SearchWork {
  terms: number;
  postings: number;
}

/**
 * The postings of passages added one by one (title and text, in passage order), then finished:
 * the build an index makes, in the process between turns of the event loop (KnowledgeIndex.of)
 * or in a worker thread whose result is sent back (KnowledgeIndex.from).
 */
export class PostingsBuilder {
  // Each passage's (term, title count, text count), in passage order. A word is looked up once
  // (its term number, or -1 for a stop word): stemming and the stem's lookup happen once a word.
  private readonly termOfWord = new Map<string, number>();
  private readonly terms = new Map<string, number>();
  private readonly pairTerm: number[] = [];
  private readonly pairTitle: number[] = [];
  private readonly pairText: number[] = [];
  private readonly pairStart: Int32Array;
  private readonly titleLength: Float32Array;
  private readonly textLength: Float32Array;
  // For each term, the passage it was last seen in and its pair there.
  private seenIn = new Int32Array(1024).fill(-1);
  private pairOf = new Int32Array(1024);

  constructor(private readonly count: number) {
    this.pairStart = new Int32Array(count + 1);
    this.titleLength = new Float32Array(count);
    this.textLength = new Float32Array(count);
  }

  /** Adds passage `i` (from 0, in order). */
  add(i: number, title: string | null, text: string): void {
    this.pairStart[i] = this.pairTerm.length;
    this.titleLength[i] = title ? this.countTerms(i, title, this.pairTitle) : 0;
    this.textLength[i] = this.countTerms(i, text, this.pairText);
    this.pairStart[i + 1] = this.pairTerm.length;
  }

  /** Counts the text's terms into the passage's pairs (`counts`: the field's); answers how many it holds. */
  private countTerms(i: number, text: string, counts: number[]): number {
    let n = 0;
    for (const w of words(text)) {
      let t = this.termOfWord.get(w);
      if (t === undefined) {
        const stem = STOP.has(w) ? null : stemmer(w);
        if (stem !== null && !this.terms.has(stem)) {
          this.terms.set(stem, this.terms.size);
          if (this.terms.size > this.seenIn.length) {
            const seen = new Int32Array(this.seenIn.length * 2).fill(-1);
            seen.set(this.seenIn);
            this.seenIn = seen;
            const pairs = new Int32Array(this.pairOf.length * 2);
            pairs.set(this.pairOf);
            this.pairOf = pairs;
          }
        }
        this.termOfWord.set(w, (t = stem === null ? -1 : this.terms.get(stem)!));
      }
      if (t < 0) continue;
      n++;
      if (this.seenIn[t] !== i) {
        this.seenIn[t] = i;
        this.pairOf[t] = this.pairTerm.length;
        this.pairTerm.push(t);
        this.pairTitle.push(0);
        this.pairText.push(0);
      }
      counts[this.pairOf[t]]++;
    }
    return n;
  }

  /** The postings: term by term, passages ascending within each (a counting sort of the pairs), weighed by BM25. */
  finish(): PostingsData {
    const { terms, pairTerm, pairTitle, pairText, pairStart, titleLength, textLength } = this;
    const offsets = new Int32Array(terms.size + 1);
    for (const t of pairTerm) offsets[t + 1]++;
    for (let t = 0; t < terms.size; t++) offsets[t + 1] += offsets[t];
    const docs = new Int32Array(pairTerm.length);
    const impacts = new Float32Array(pairTerm.length);
    const next = offsets.slice(0, terms.size);
    const n = this.count;
    const mean = (xs: Float32Array) => Math.max(1, xs.reduce((a, x) => a + x, 0) / Math.max(1, n));
    const avgTitle = mean(titleLength);
    const avgText = mean(textLength);
    const weights = new Float64Array(terms.size);
    for (let t = 0; t < terms.size; t++) weights[t] = idf(n, offsets[t + 1] - offsets[t]);
    const part = (tf: number, length: number, avg: number) => (tf === 0 ? 0 : (tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / avg)));
    for (let i = 0; i < n; i++) {
      for (let j = pairStart[i]; j < pairStart[i + 1]; j++) {
        const t = pairTerm[j];
        const at = next[t]++;
        docs[at] = i;
        impacts[at] = weights[t] * (TITLE_BOOST * part(pairTitle[j], titleLength[i], avgTitle) + part(pairText[j], textLength[i], avgText));
      }
    }
    return { terms: [...terms.keys()], offsets, docs, impacts };
  }
}

export class KnowledgeIndex {
  /** Approximate bytes held: the passages' strings, the postings and the vocabulary (stringBytes, the overheads). */
  readonly bytes: number;
  /** Scores of one search by passage, and the passages scored: reused, as a search runs to its end without yielding. */
  private scratch: Float32Array | null = null;
  private touched: Int32Array | null = null;

  private constructor(
    private readonly passages: Passage[],
    private readonly postings: Postings,
    private readonly prior: (word: string) => number,
  ) {
    let bytes = postings.offsets.byteLength + postings.docs.byteLength + postings.impacts.byteLength;
    for (const p of passages) bytes += PASSAGE_OVERHEAD + stringBytes(p.id) + stringBytes(p.text) + (p.title ? stringBytes(p.title) : 0);
    for (const t of postings.terms.keys()) bytes += TERM_OVERHEAD + stringBytes(t);
    // The scratch arrays a search allocates once.
    this.bytes = bytes + 8 * passages.length;
  }

  /** Splits and indexes the documents, a few passages at a time so the event loop keeps turning. */
  static build(docs: NonNullable<AgentDefinition['knowledge']>): Promise<KnowledgeIndex> {
    return KnowledgeIndex.of(docs.flatMap(splitPassages));
  }

  /**
   * Indexes passages, a few at a time so the event loop keeps turning. `prior` weighs a query's
   * word by how rare it is in the language at large (0–1; the word vectors' SIF weight): without
   * it, every word weighs 1 and only the documents say which words are rare.
   */
  static async of(passages: Passage[], prior: (word: string) => number = () => 1): Promise<KnowledgeIndex> {
    const builder = new PostingsBuilder(passages.length);
    for (let i = 0; i < passages.length; i++) {
      if (i > 0 && i % INDEX_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
      builder.add(i, passages[i].title, passages[i].text);
    }
    return KnowledgeIndex.from(passages, builder.finish(), prior);
  }

  /** The index of passages whose postings were built elsewhere (a worker thread), from the same passages in the same order. */
  static from(passages: Passage[], data: PostingsData, prior: (word: string) => number = () => 1): KnowledgeIndex {
    let fits = data.offsets.length === data.terms.length + 1 && data.docs.length === data.impacts.length;
    for (let j = 0; fits && j < data.docs.length; j++) fits = data.docs[j] >= 0 && data.docs[j] < passages.length;
    if (!fits) throw new Error('the postings do not fit the passages');
    return new KnowledgeIndex(
      passages,
      { terms: new Map(data.terms.map((t, i) => [t, i])), offsets: data.offsets, docs: data.docs, impacts: data.impacts },
      prior,
    );
  }

  get size(): number {
    return this.passages.length;
  }

  /**
   * The best `k` passages for a query (its first QUERY_TERMS distinct terms), best first, with
   * their BM25 scores and confidence: the share of the query's terms that the passage holds, each
   * term weighed by how rare it is in the documents (BM25's idf) and in the language (the prior),
   * so that "how long does … take" weighs little and "warranty" much. A question in words the
   * documents never use scores low however well its common words match: that is what lets an
   * answer phase abstain. `work`, when given, is told the terms searched and postings read;
   * `keep`, when given, leaves out the passages it refuses.
   */
  search(query: string, k = 4, work?: SearchWork, keep?: (p: Passage) => boolean): Found[] {
    const { stems, words: kept } = queryStems(query);
    const n = this.passages.length;
    if (work) Object.assign(work, { terms: stems.length, postings: 0 });
    if (kept.length === 0 || n === 0) return [];
    const { terms, offsets, docs, impacts } = this.postings;
    const wanted = stems.map((stem, i) => {
      const t = terms.get(stem);
      const df = t === undefined ? 0 : offsets[t + 1] - offsets[t];
      return { t, df, weight: idf(n, df) * this.prior(kept[i]) };
    });
    const total = wanted.reduce((a, q) => a + q.weight, 0);
    /** Term t's BM25 weight in passage d (0 when d does not hold it), by binary search. */
    const impactIn = (t: number, d: number) => {
      const end = offsets[t + 1];
      const at = lowerBound(docs, offsets[t], end, d);
      return at < end && docs[at] === d ? impacts[at] : 0;
    };

    // The rarer terms are read in full, rarest first, while their postings fit POSTINGS_READ (the
    // rarest always); the passages they find are the candidates. The commoner terms only add to
    // the best RESCORED candidates' scores (Lucene's common-terms query does the same), so a search
    // reads at most one term's postings beyond POSTINGS_READ whatever the passages hold.
    const present = wanted.filter((q): q is { t: number; df: number; weight: number } => q.t !== undefined).sort((a, b) => a.df - b.df);
    let read = 0;
    let split = 0;
    while (split < present.length && (split === 0 || read + present[split].df <= POSTINGS_READ)) read += present[split++].df;
    const common = present.slice(split);
    if (work) work.postings = read;

    const scores = (this.scratch ??= new Float32Array(n));
    // Sparse (few postings): the passages scored are listed as they are first met, and only they
    // are ranked and cleared. Dense: every passage is ranked and the scores cleared at once, which
    // spares a test and a write a posting where most passages are met anyway.
    const dense = read > n / 4;
    const touched = dense ? null : (this.touched ??= new Int32Array(n));
    let scored = 0;
    for (const { t } of present.slice(0, split)) {
      const end = offsets[t + 1];
      if (touched)
        for (let j = offsets[t]; j < end; j++) {
          const d = docs[j];
          if (scores[d] === 0) touched[scored++] = d;
          scores[d] += impacts[j];
        }
      else for (let j = offsets[t]; j < end; j++) scores[docs[j]] += impacts[j];
    }
    const top = new Best(common.length ? Math.max(k, RESCORED) : k);
    const offer = (d: number) => {
      const score = scores[d];
      if (score !== 0 && top.takes(d, score) && (!keep || keep(this.passages[d]))) top.add(d, score);
    };
    if (touched) for (let i = 0; i < scored; i++) offer(touched[i]);
    else for (let d = 0; d < n; d++) offer(d);
    if (touched) for (let i = 0; i < scored; i++) scores[touched[i]] = 0;
    else scores.fill(0);

    let ranked = top.sorted();
    if (common.length) {
      const rescored = new Best(k);
      for (const { d, score } of ranked)
        rescored.add(
          d,
          common.reduce((a, q) => a + impactIn(q.t, d), score),
        );
      ranked = rescored.sorted();
    }
    return ranked.map(({ d, score }) => {
      const held = present.reduce((a, q) => (impactIn(q.t, d) > 0 ? a + q.weight : a), 0);
      return {
        passage: this.passages[d],
        score: Math.round(score * 1000) / 1000,
        confidence: total > 0 ? Math.round((held / total) * 1000) / 1000 : 0,
      };
    });
  }
}

/** The best m passages offered (a binary heap whose root is the worst kept): higher score first, then the earlier passage. */
class Best {
  private readonly ds: number[] = [];
  private readonly ss: number[] = [];

  constructor(private readonly m: number) {}

  /** Whether (d, score) would be kept: the heap is not full, or it beats the worst kept. */
  takes(d: number, score: number): boolean {
    return this.ds.length < this.m || score > this.ss[0] || (score === this.ss[0] && d < this.ds[0]);
  }

  add(d: number, score: number): void {
    if (!this.takes(d, score)) return;
    const { ds, ss } = this;
    let i: number;
    if (ds.length < this.m) {
      i = ds.length;
      ds.push(d);
      ss.push(score);
      // Up: while worse than the parent.
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(i, parent)) break;
        this.swap(i, parent);
        i = parent;
      }
      return;
    }
    ds[0] = d;
    ss[0] = score;
    // Down: while a child is worse.
    i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < ds.length && this.worse(l, worst)) worst = l;
      if (r < ds.length && this.worse(r, worst)) worst = r;
      if (worst === i) break;
      this.swap(i, worst);
      i = worst;
    }
  }

  /** The kept passages, best first. */
  sorted(): { d: number; score: number }[] {
    return this.ds.map((d, i) => ({ d, score: this.ss[i] })).sort((a, b) => b.score - a.score || a.d - b.d);
  }

  private worse(i: number, j: number): boolean {
    return this.ss[i] < this.ss[j] || (this.ss[i] === this.ss[j] && this.ds[i] > this.ds[j]);
  }

  private swap(i: number, j: number): void {
    [this.ds[i], this.ds[j]] = [this.ds[j], this.ds[i]];
    [this.ss[i], this.ss[j]] = [this.ss[j], this.ss[i]];
  }
}
