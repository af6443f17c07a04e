// The stored layout of a router: its formats, the header every format writes (checked with a
// schema on the way in), what training hands the encoder, and the check that a header's counts
// add up to the sections they index.
import { z } from 'zod';
import { SectionsError } from '../../lib/sections.js';
import type { SparseVector, TfIdf } from '../text-features.js';
import type { VectorPart } from './fusion.js';
import type { Calibration } from './model.js';

/**
 * Layout of a stored router (storeRouter/loadRouter). A new layout bumps it; loadRouter reads the
 * layouts before it too (converting them), and the service stores such a router again in the
 * current one.
 *
 * Written by hand rather than with v8.serialize: a router is a few typed arrays, and this layout
 * lets a router's arrays be views on the very bytes read from the database. Deserialising copied
 * them once more, and the copies of routers loaded at once piled up as garbage until V8 collected
 * them.
 *
 *   magic · u32 length of the header · header (JSON: names, calibration, outOfScope, background,
 *   examples per class, and each section's type, offset and length) · sections, each at an
 *   offset that is a multiple of 8.
 *
 * Format 2 ("SBR2"): w (int8, features × classes), scale (f32 per feature row), b, tfidf
 * keys (ascending)/cols/idf, example lengths, example indexes (u16 when the vocabulary fits, else
 * i32), example values (u8, the value × 255). A 150-capability router (CLINC150) is 8.5 MiB
 * instead of the 26.2 MiB of format 1 ("SBR1": f32 weights, i32 indexes, f32 values, keys in no
 * order), and routes the same (docs/routing.md, "Stored once, loaded everywhere").
 *
 * Format 3 ("SBR3"): format 2, and for a router trained with word vectors, the header's `vectors`
 * (their id, dimensions and the two parts' norms), weight rows for the vector dimensions after
 * the vocabulary's, and `dense` (int8, examples × dimensions, the example's unit vector × 127).
 * Format 2 bytes are read as a lexical router of format 3.
 */
export const ROUTER_STATE_FORMAT = 3;
export const MAGIC = 0x33524253; // "SBR3", little-endian
export const MAGIC_V2 = 0x32524253; // "SBR2"
export const MAGIC_V1 = 0x31524253; // "SBR1"

const finite = z.number().finite();
/** A stored router's header, as every format writes it (format 1 has no `vectors`). */
export const Header = z
  .object({
    names: z.array(z.string()),
    calibration: z.object({ threshold: finite, minSimilarity: finite, method: z.enum(['held_out', 'default']) }),
    outOfScope: z.string().nullable(),
    background: finite.min(0),
    perClass: z.array(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)),
    vectors: z
      .object({
        id: z.string().min(1).max(300),
        dims: z.number().int().min(1).max(4096),
        lexical: finite,
        dense: finite,
        quant: finite.positive().optional(),
      })
      .nullable()
      .optional(),
  })
  .refine((h) => h.perClass.length === h.names.length, 'examples per class for every capability')
  .refine((h) => h.outOfScope === null || h.names.includes(h.outOfScope), 'an out-of-scope capability among its capabilities');

/** What training produces, at full precision. */
export interface Trained {
  names: string[];
  tfidf: ReturnType<TfIdf['toState']>;
  w: Float32Array;
  b: Float32Array;
  examples: SparseVector[][];
  /** What the examples' values are multiplied by before they are stored (1 when absent). */
  exampleScale?: number;
  /** With word vectors: each kept example's unit vector, as `examples`. */
  dense: Float32Array[][] | null;
  part: VectorPart | null;
  calibration: Calibration;
  outOfScope: string | null;
  background: number;
}

/**
 * Where each kept example starts (`offsets`, from their lengths) and each class's first example
 * (`classStart`, from the examples per class), after checking that the counts add up to the
 * sections they index: a header cannot make the loader build more than its bytes hold.
 */
export function exampleIndex(perClass: number[], lengths: Int32Array, entries: number): { offsets: Int32Array; classStart: Int32Array } {
  let examples = 0;
  for (const n of perClass) examples += n;
  if (examples !== lengths.length) throw new SectionsError('stored router: examples do not add up');
  const offsets = new Int32Array(lengths.length + 1);
  for (let e = 0; e < lengths.length; e++) {
    const len = lengths[e];
    if (len < 0 || offsets[e] + len > entries) throw new SectionsError('stored router: examples do not add up');
    offsets[e + 1] = offsets[e] + len;
  }
  if (offsets[lengths.length] !== entries) throw new SectionsError('stored router: examples do not add up');
  const classStart = new Int32Array(perClass.length + 1);
  perClass.forEach((n, c) => (classStart[c + 1] = classStart[c] + n));
  return { offsets, classStart };
}
