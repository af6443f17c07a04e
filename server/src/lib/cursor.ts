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

/** A (created_at, id) position, as list endpoints page newest first. */
export const isTimeAndId = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'string');
