// Format 1 ("SBR1"), the first stored layout: full-precision weights and example vectors,
// vocabulary keys in no order. Read (with every check format 3 gets) and encoded anew.
import { allFinite, readSections, SectionsError } from '../../lib/sections.js';
import { exampleIndex, Header, MAGIC_V1, type Trained } from './layout.js';

/** Format 1: full-precision weights and example vectors (checked as format 3's are, then encoded anew). */
export function readV1(bytes: Buffer): Trained {
  const l = readSections(bytes, MAGIC_V1, Header, 'stored router');
  const h = l.header;
  const lengths = l.view('lengths', 'i32');
  const idx = l.view('idx', 'i32');
  const val = l.view('val', 'f32');
  const { offsets, classStart } = exampleIndex(h.perClass, lengths, idx.length);
  if (val.length !== idx.length) throw new SectionsError('stored router: examples do not add up');
  const keys = l.view('keys', 'f64');
  const cols = l.view('cols', 'i32');
  const idf = l.view('idf', 'f32');
  const w = l.view('w', 'f32');
  const b = l.view('b', 'f32');
  if (cols.length !== keys.length || w.length !== idf.length * b.length || b.length !== h.names.length + (h.background > 0 ? 1 : 0)) {
    throw new SectionsError('stored router: weights do not match its vocabulary and classes');
  }
  for (let k = 0; k < cols.length; k++)
    if (!(cols[k] >= 0 && cols[k] < idf.length)) throw new SectionsError('stored router: a vocabulary column outside its weights');
  for (let k = 0; k < idx.length; k++)
    if (!(idx[k] >= 0 && idx[k] < idf.length)) throw new SectionsError('stored router: an example feature outside its vocabulary');
  if (!allFinite(w) || !allFinite(b) || !allFinite(idf) || !allFinite(val)) throw new SectionsError('stored router: weights that are not numbers');
  return {
    names: h.names,
    tfidf: { keys, cols, idf },
    w,
    b,
    examples: h.perClass.map((_, c) =>
      Array.from({ length: classStart[c + 1] - classStart[c] }, (_, k) => {
        const e = classStart[c] + k;
        return { idx: idx.subarray(offsets[e], offsets[e + 1]), val: val.subarray(offsets[e], offsets[e + 1]) };
      }),
    ),
    dense: null,
    part: null,
    calibration: h.calibration,
    outOfScope: h.outOfScope,
    background: h.background,
  };
}
