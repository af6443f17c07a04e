// Canonical JSON (keys sorted) and its SHA-256, for definition digests and idempotency checks.
import { hash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- undefined for undefined, functions and symbols, whatever the type says
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}

/** SHA-256 in hex. The one-shot `hash` costs half of a `createHash` object on the short texts hashed here (the audit chain hashes several per turn). */
export function sha256(text: string): string {
  return hash('sha256', text, 'hex');
}
