// The hash chain of a conversation's audit log (docs/security.md, "Tamper-evident audit log").
//   data_hash = SHA-256(the entry's data exactly as stored, JSON text)
//   hash      = SHA-256(previous hash, or "" for the first entry, + "\n" + JSON of the array
//               [id, conversation_id, sequence, turn_index, type, request_id, timestamp, duration_ms, data_hash])
// Erasure replaces an entry's data by a skeleton marked `erased: true` but keeps both hashes, so
// the chain still verifies and only the erased payload can no longer be checked.
import { sha256 } from './canonical.js';

export interface ChainedFields {
  id: string;
  conversation_id: string;
  sequence: number;
  turn_index: number | null;
  type: string;
  request_id: string;
  timestamp: string;
  duration_ms: number | null;
}

/** Hash of an entry's data as stored: the JSON text itself, so no re-serialisation can differ. */
export const dataHash = (dataText: string) => sha256(dataText);

export function entryHash(previous: string | null, e: ChainedFields, dataHashValue: string): string {
  const fields = [e.id, e.conversation_id, e.sequence, e.turn_index, e.type, e.request_id, e.timestamp, e.duration_ms, dataHashValue];
  return sha256(`${previous ?? ''}\n${JSON.stringify(fields)}`);
}

export interface ChainReport {
  entries: number;
  valid: boolean;
  first_broken: { sequence: number; reason: 'sequence_gap' | 'missing_hash' | 'data_mismatch' | 'hash_mismatch' | 'head_mismatch' } | null;
}

/** Recomputes a conversation's chain (entries in sequence order) and reports the first broken link. */
export function verifyChain(
  entries: (ChainedFields & { data: string; data_hash: string | null; hash: string | null })[],
  head: string | null,
): ChainReport {
  let previous: string | null = null;
  let expectedSeq = 1;
  const broken = (sequence: number, reason: NonNullable<ChainReport['first_broken']>['reason']): ChainReport => ({
    entries: entries.length,
    valid: false,
    first_broken: { sequence, reason },
  });
  for (const e of entries) {
    if (e.sequence !== expectedSeq) return broken(expectedSeq, 'sequence_gap');
    if (!e.hash || !e.data_hash) return broken(e.sequence, 'missing_hash');
    const parsed = JSON.parse(e.data) as { erased?: unknown } | null;
    const erased = typeof parsed === 'object' && parsed !== null && parsed.erased === true;
    if (!erased && dataHash(e.data) !== e.data_hash) return broken(e.sequence, 'data_mismatch');
    if (entryHash(previous, e, e.data_hash) !== e.hash) return broken(e.sequence, 'hash_mismatch');
    previous = e.hash;
    expectedSeq++;
  }
  if (previous !== head) return broken(expectedSeq, 'head_mismatch');
  return { entries: entries.length, valid: true, first_broken: null };
}
