// Opaque page cursors: a position encoded as base64url JSON, checked on the way back in.
import { InputError } from '../errors.js';

export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

export function decodeCursor<T>(cursor: string | undefined, check: (v: unknown) => v is T): T | null {
  if (!cursor) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (check(v)) return v;
  } catch {
    /* reported below */
  }
  throw new InputError('Invalid cursor', [{ path: 'query.cursor', message: 'not a cursor this endpoint returned' }]);
}

/** A timestamp as the stores write them (ISO 8601, UTC or with an offset), of a real instant. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A (created_at, id) position, as list endpoints page newest first: a timestamp and a UUID, as
 * every such list's rows have. A cursor is the client's to send back, so anything else (which a
 * database would refuse to compare, or compare meaninglessly) is an invalid cursor, never a query.
 */
export const isTimeAndId = (v: unknown): v is [string, string] =>
  Array.isArray(v) &&
  v.length === 2 &&
  typeof v[0] === 'string' &&
  TIMESTAMP.test(v[0]) &&
  Number.isFinite(Date.parse(v[0])) &&
  typeof v[1] === 'string' &&
  UUID.test(v[1]);

/** A page of at most `limit` rows from `rows` (fetched with one more), with the cursor of the next page: null on the last. */
export function pageOf<T>(rows: T[], limit: number, position: (last: T) => unknown): { page: T[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { page, next_cursor: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null };
}
