// The binary container of stored routers and converted word-vectors files:
//
//   magic (u32) · length of the header (u32) · header (JSON) · sections of typed arrays, each at
//   an offset from the end of the header (rounded up to 8) that is a multiple of 8.
//
// A router's header lists its sections by name (type, offset, length); a word-vectors file's are
// in a fixed order, their lengths given by its header's counts. Written by hand rather than with
// v8.serialize or a schema'd format: the arrays are then views on the very bytes read, not
// copies, and large routers are loaded without a second copy. What is read comes from a
// database or a file, so nothing in it is trusted: the header must parse and match its schema,
// and every section must lie inside the bytes, aligned, before any view or array is made.
import { z } from 'zod';

const ARRAYS = {
  f32: Float32Array,
  f64: Float64Array,
  i32: Int32Array,
  u32: Uint32Array,
  u16: Uint16Array,
  u8: Uint8Array,
  i8: Int8Array,
} as const;
export type SectionType = keyof typeof ARRAYS;
export type AnyArray = Float32Array | Float64Array | Int32Array | Uint32Array | Uint16Array | Uint8Array | Int8Array;
export type ArrayOf<T extends SectionType> = InstanceType<(typeof ARRAYS)[T]>;

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Section = z.object({ type: z.enum(['f32', 'f64', 'i32', 'u32', 'u16', 'u8', 'i8']), offset: count, length: count });
type Section = z.infer<typeof Section>;

/** Thrown for bytes that are not a well-formed container: the caller treats them as unreadable. */
export class SectionsError extends Error {}

const typeOf = (a: AnyArray): SectionType => {
  for (const [name, Ctor] of Object.entries(ARRAYS)) if (a instanceof Ctor) return name as SectionType;
  throw new SectionsError('not a typed array');
};

const align8 = (n: number) => Math.ceil(n / 8) * 8;

/**
 * Writes a container. With `table`, the header gets a `sections` entry naming each array's type,
 * offset and length; without, the arrays follow each other in the order given and the reader
 * takes them in that order (sequence()).
 */
export function writeSections(magic: number, header: Record<string, unknown>, arrays: Record<string, AnyArray>, opts: { table: boolean }): Buffer {
  const sections: Record<string, Section> = {};
  let offset = 0;
  for (const [name, a] of Object.entries(arrays)) {
    sections[name] = { type: typeOf(a), offset, length: a.length };
    offset += align8(a.byteLength);
  }
  const json = Buffer.from(JSON.stringify(opts.table ? { ...header, sections } : header));
  const start = align8(8 + json.length);
  const out = Buffer.alloc(start + offset);
  out.writeUInt32LE(magic, 0);
  out.writeUInt32LE(json.length, 4);
  json.copy(out, 8);
  for (const [name, a] of Object.entries(arrays)) out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), start + sections[name].offset);
  return out;
}

/** The magic of stored bytes (0 for fewer than 8 bytes). */
export function magicOf(bytes: Uint8Array): number {
  return bytes.length < 8 ? 0 : new DataView(bytes.buffer, bytes.byteOffset, 8).getUint32(0, true);
}

/**
 * Bytes in a buffer of their own, starting at its first byte: typed views need aligned offsets,
 * and a small Buffer (a decoded string, a driver's answer) may share Node's pool with other
 * requests' data, which a view must never be able to reach.
 */
function ownBytes(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}

export interface Container<H> {
  header: H;
  /** The bytes the views are on (a buffer of their own). */
  data: Buffer;
  /** Bytes after the header, where the sections are. */
  body: number;
  /** A view on the named section of the header's table, of this type (SectionsError: none such). */
  view<T extends SectionType>(name: string, type: T | T[]): ArrayOf<T>;
  /** The next section of a container without a table: `length` elements of `type`. */
  next<T extends SectionType>(type: T, length: number): ArrayOf<T>;
}

/**
 * Reads a container's header with `schema` and checks its section table, if it has one (every
 * section inside the bytes, aligned, none overlapping another), before anything is allocated.
 */
export function readSections<H>(bytes: Buffer, magic: number, schema: z.ZodType<H>, what: string): Container<H> {
  if (magicOf(bytes) !== magic) throw new SectionsError(`not a ${what}`);
  const data = ownBytes(bytes);
  const headerLength = data.readUInt32LE(4);
  if (headerLength > data.length - 8) throw new SectionsError(`${what}: the header is cut short`);
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString('utf8', 8, 8 + headerLength));
  } catch {
    throw new SectionsError(`${what}: the header is not JSON`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SectionsError(`${what}: the header is not valid (${issue.path.join('.') || 'header'}: ${issue.message})`);
  }
  const header = parsed.data;
  const body = align8(8 + headerLength);
  const room = data.length - body;
  if (room < 0) throw new SectionsError(`${what}: the header is cut short`);
  const table = (raw as { sections?: unknown }).sections;
  const sections = new Map<string, Section>();
  if (table !== undefined) {
    const checked = z.record(z.string(), Section).safeParse(table);
    if (!checked.success) throw new SectionsError(`${what}: the section table is not valid`);
    const spans: [number, number][] = [];
    for (const [name, sec] of Object.entries(checked.data)) {
      const size = sec.length * ARRAYS[sec.type].BYTES_PER_ELEMENT;
      if (sec.offset % 8 !== 0) throw new SectionsError(`${what}: section ${name} is not aligned`);
      if (sec.offset > room || size > room - sec.offset) throw new SectionsError(`${what}: section ${name} lies outside the bytes`);
      sections.set(name, sec);
      if (size > 0) spans.push([sec.offset, sec.offset + size]);
    }
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) if (spans[i][0] < spans[i - 1][1]) throw new SectionsError(`${what}: sections overlap`);
  }
  let at = body;
  return {
    header,
    data,
    body,
    view: <T extends SectionType>(name: string, type: T | T[]) => {
      const sec = sections.get(name);
      const types: SectionType[] = Array.isArray(type) ? type : [type];
      if (!sec || !types.includes(sec.type)) throw new SectionsError(`${what}: no ${types.join(' or ')} section ${name}`);
      const Ctor = ARRAYS[sec.type];
      return new Ctor(data.buffer as ArrayBuffer, data.byteOffset + body + sec.offset, sec.length) as ArrayOf<T>;
    },
    next: <T extends SectionType>(type: T, length: number) => {
      const Ctor = ARRAYS[type];
      if (!Number.isSafeInteger(length) || length < 0) throw new SectionsError(`${what}: a section of ${length} elements`);
      const size = length * Ctor.BYTES_PER_ELEMENT;
      if (size > data.length - at) throw new SectionsError(`${what} is cut short`);
      const view = new Ctor(data.buffer as ArrayBuffer, data.byteOffset + at, length) as ArrayOf<T>;
      at += align8(size);
      return view;
    },
  };
}

/** Whether every element of a float array is a finite number. */
export function allFinite(a: Float32Array | Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}
