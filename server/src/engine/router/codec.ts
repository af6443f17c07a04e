// The stored layout of a router (layout.ts), written and read: encode turns a trained router's
// arrays into it, decode reads stored bytes of any format back into checked views. Nothing is
// built from stored bytes until every count, offset and length in them has been checked
// (lib/sections.ts): the bytes come from a database.
import { allFinite, magicOf, readSections, SectionsError, writeSections, type AnyArray } from '../../lib/sections.js';
import { TfIdf } from '../text-features.js';
import { SERVER_EMBEDDINGS } from './embedder.js';
import { readV1 } from './format1.js';
import type { VectorPart } from './fusion.js';
import { exampleIndex, Header, MAGIC, MAGIC_V1, MAGIC_V2, ROUTER_STATE_FORMAT, type Trained } from './layout.js';
import type { Calibration } from './model.js';
import type { Examples } from './similarity.js';

export { ROUTER_STATE_FORMAT };

/** A trained router in the current layout: weights as int8 per feature row, example values as u8. */
export function encode(t: Trained): Buffer {
  const C = t.b.length;
  const F = t.tfidf.idf.length;
  const rows = F + (t.part?.dims ?? 0);
  const w = new Int8Array(rows * C);
  const scale = new Float32Array(rows);
  for (let f = 0; f < rows; f++) {
    const base = f * C;
    let max = 0;
    for (let c = 0; c < C; c++) max = Math.max(max, Math.abs(t.w[base + c]));
    if (max === 0) continue;
    scale[f] = max / 127;
    const inv = 127 / max;
    for (let c = 0; c < C; c++) w[base + c] = Math.round(t.w[base + c] * inv);
  }
  const flat = t.examples.flat();
  const exampleScale = t.exampleScale ?? 1;
  const lengths = Int32Array.from(flat, (e) => e.idx.length);
  const total = lengths.reduce((a, n) => a + n, 0);
  const idx = F <= 65536 ? new Uint16Array(total) : new Int32Array(total);
  const val = new Uint8Array(total);
  let at = 0;
  for (const e of flat) {
    idx.set(e.idx, at);
    for (let k = 0; k < e.val.length; k++) val[at + k] = Math.round(Math.min(1, e.val[k] * exampleScale) * 255);
    at += e.idx.length;
  }
  // Vocabulary keys ascending (TfIdf.fromState searches them); format 1 kept them unordered.
  const order = Array.from(t.tfidf.keys.keys()).sort((a, b) => t.tfidf.keys[a] - t.tfidf.keys[b]);
  const keys = Float64Array.from(order, (i) => t.tfidf.keys[i]);
  const cols = Int32Array.from(order, (i) => t.tfidf.cols[i]);
  const arrays: Record<string, AnyArray> = { w, scale, b: t.b, keys, cols, idf: t.tfidf.idf, lengths, idx, val };
  let part = t.part;
  if (part && t.dense) {
    const dims = part.dims;
    const flatDense = t.dense.flat();
    // Word vectors are quantised × 127 (their components are large enough); a server's
    // embeddings spread over many more dimensions, so theirs are scaled to their largest component.
    let quant = 127;
    if (part.id.startsWith(SERVER_EMBEDDINGS)) {
      let max = 0;
      for (const e of flatDense) for (let d = 0; d < dims; d++) max = Math.max(max, Math.abs(e[d]));
      quant = max > 0 ? 127 / max : 127;
      part = { ...part, quant };
    }
    const dense = new Int8Array(flatDense.length * dims);
    flatDense.forEach((e, i) => {
      for (let d = 0; d < dims; d++) dense[i * dims + d] = Math.round(e[d] * quant);
    });
    arrays.dense = dense;
  }
  return writeSections(
    MAGIC,
    {
      names: t.names,
      calibration: t.calibration,
      outOfScope: t.outOfScope,
      background: t.background,
      perClass: t.examples.map((l) => l.length),
      // The table goes here: the header's keys keep the order every stored router has.
      sections: undefined,
      ...(part ? { vectors: part } : {}),
    },
    arrays,
    { table: true },
  );
}

/** A stored router's parts, checked against each other: views on `stored`, a buffer of its own. */
export interface Decoded {
  names: string[];
  tfidf: TfIdf;
  w: Int8Array;
  scale: Float32Array;
  b: Float32Array;
  examples: Examples;
  calibration: Calibration;
  outOfScope: string | null;
  background: number;
  part: VectorPart | null;
  stored: Buffer;
}

/**
 * Bytes of the current layout or format 2, checked and viewed (format 1 is first read by readV1
 * and encoded anew). Throws SectionsError for bytes that are not a whole, consistent router.
 */
export function decode(bytes: Buffer): Decoded {
  if (magicOf(bytes) === MAGIC_V1) bytes = encode(readV1(bytes));
  if (magicOf(bytes) === MAGIC_V2) {
    // Format 2 is format 3 without vectors: the same bytes under the current magic, which is what the router stores again.
    const copy = Buffer.alloc(bytes.length);
    bytes.copy(copy);
    copy.writeUInt32LE(MAGIC, 0);
    bytes = copy;
  }
  const l = readSections(bytes, MAGIC, Header, 'stored router');
  const h = l.header;
  const part = h.vectors ?? null;
  // Every count is checked against the bytes before anything is built from it.
  const lengths = l.view('lengths', 'i32');
  const idx = l.view('idx', ['u16', 'i32']);
  const val = l.view('val', 'u8');
  const examples = exampleIndex(h.perClass, lengths, idx.length);
  if (val.length !== idx.length) throw new SectionsError('stored router: examples do not add up');
  const dense = part ? l.view('dense', 'i8') : null;
  if (dense && dense.length !== lengths.length * part!.dims) throw new SectionsError('stored router: example vectors do not add up');
  const tfidf = TfIdf.fromState({ keys: l.view('keys', 'f64'), cols: l.view('cols', 'i32'), idf: l.view('idf', 'f32') });
  for (let k = 0; k < idx.length; k++)
    if (idx[k] >= tfidf.size || idx[k] < 0) throw new SectionsError('stored router: an example feature outside its vocabulary');
  const b = l.view('b', 'f32');
  const w = l.view('w', 'i8');
  const scale = l.view('scale', 'f32');
  const rows = tfidf.size + (part?.dims ?? 0);
  if (w.length !== rows * b.length || scale.length !== rows || b.length !== h.names.length + (h.background > 0 ? 1 : 0)) {
    throw new SectionsError('stored router: weights do not match its vocabulary and classes');
  }
  if (!allFinite(b) || !allFinite(scale)) throw new SectionsError('stored router: weights that are not numbers');
  return {
    names: h.names,
    tfidf,
    w,
    scale,
    b,
    examples: { idx, val, ...examples, dense },
    calibration: h.calibration,
    outOfScope: h.outOfScope,
    background: h.background,
    part,
    stored: l.data,
  };
}

/** The format of stored bytes (0: none this process reads). */
export function storedFormat(bytes: Buffer): number {
  const magic = magicOf(bytes);
  return magic === MAGIC ? ROUTER_STATE_FORMAT : magic === MAGIC_V2 ? 2 : magic === MAGIC_V1 ? 1 : 0;
}
