// The hash chain of a conversation's audit log (docs/security.md, "Tamper-evident audit log").
//   data_hash = SHA-256(the entry's data exactly as stored, JSON text)
//   hash      = SHA-256(previous hash, or "" for the first entry, + "\n" + JSON of the array
//               [id, conversation_id, sequence, turn_index, type, request_id, timestamp, duration_ms, data_hash])
// Turn texts are chained too: the entry written with a turn (turn_timing, operator_message)
// lists each turn's hash (turnHash) in its data.
// With an operator key (AUDIT_CHAIN_KEY) `hash` is HMAC-SHA-256 under that key instead of SHA-256:
// then only a holder of the key can write an entry that verifies. A chain may begin unkeyed
// (written before the key was set) but, once an entry is keyed, every later one must be too, so a
// forger cannot rewrite the end of a chain unkeyed.
// Erasure replaces some entries' data by a skeleton and keeps both hashes; such an entry is
// accepted only when its erased_at column is set and a later chained `erasure` entry records
// that erasure (same time, sequence covered). Writing `erased: true` into data proves nothing.
import { createHmac } from 'node:crypto';
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

/** An entry's chained hash: SHA-256, or HMAC-SHA-256 under the operator's key when one is given. */
export function entryHash(previous: string | null, e: ChainedFields, dataHashValue: string, key?: Buffer): string {
  const fields = [e.id, e.conversation_id, e.sequence, e.turn_index, e.type, e.request_id, e.timestamp, e.duration_ms, dataHashValue];
  const text = `${previous ?? ''}\n${JSON.stringify(fields)}`;
  return key ? createHmac('sha256', key).update(text).digest('hex') : sha256(text);
}

export interface HashedTurn {
  idx: number;
  role: string;
  message: string;
  timestamp: string;
  author?: string | null;
}

/** Hash of one turn as stored, bound to its conversation and place. */
export function turnHash(conversationId: string, t: HashedTurn): string {
  return sha256(JSON.stringify([conversationId, t.idx, t.role, t.message, t.timestamp, t.author ?? null]));
}

type BrokenReason =
  'sequence_gap' | 'missing_hash' | 'data_mismatch' | 'hash_mismatch' | 'unkeyed_after_keyed' | 'head_mismatch' | 'turn_mismatch' | 'turn_unchained';

export interface ChainReport {
  entries: number;
  /** Entries whose hash is keyed (HMAC under the operator's key). */
  keyed_entries: number;
  valid: boolean;
  first_broken: { sequence: number; reason: BrokenReason; turn_index?: number } | null;
  /** Set when the chain was verified from a later entry than the first (`truncated`). */
  first_sequence?: number;
}

export interface StoredEntry extends ChainedFields {
  data: string;
  data_hash: string | null;
  hash: string | null;
  erased_at: string | null;
}

/**
 * Recomputes a conversation's chain (entries in sequence order) and reports the first broken
 * link; then checks every stored turn against the hash the chain holds for it (`turns` is
 * omitted for an erased conversation, whose turns are gone). Without `key`, keyed entries do not
 * verify (hash_mismatch).
 * `truncated`: the history horizon has dropped old entries (store/partitions.ts), so the chain may
 * start later than sequence 1. Its first kept entry's link to the dropped one cannot be
 * recomputed; its data is checked, and the chain is verified from it on. Turns older than the
 * first kept turn may be gone with it.
 */
export function verifyChain(entries: StoredEntry[], head: string | null, turns?: HashedTurn[], key?: Buffer, truncated = false): ChainReport {
  let previous: string | null = null;
  let expectedSeq = 1;
  let keyed = 0;
  const start = truncated && entries.length > 0 && entries[0].sequence > 1 ? entries[0].sequence : null;
  const broken = (sequence: number, reason: BrokenReason, turnIndex?: number): ChainReport => ({
    entries: entries.length,
    keyed_entries: keyed,
    valid: false,
    first_broken: { sequence, reason, ...(turnIndex !== undefined ? { turn_index: turnIndex } : {}) },
    ...(start !== null ? { first_sequence: start } : {}),
  });
  // Erasures the chain itself records: erased_at → the last sequence it covered.
  const erasures = new Map<string, number>();
  for (const e of entries) {
    if (e.type !== 'erasure') continue;
    const d = JSON.parse(e.data) as { erased_at?: unknown; through_sequence?: unknown };
    if (typeof d.erased_at === 'string' && typeof d.through_sequence === 'number' && dataHash(e.data) === e.data_hash) {
      erasures.set(d.erased_at, Math.max(erasures.get(d.erased_at) ?? 0, d.through_sequence));
    }
  }
  const chainedTurns = new Map<number, { hash: string; sequence: number }>();
  if (start !== null) expectedSeq = start;
  for (const e of entries) {
    if (e.sequence !== expectedSeq) return broken(expectedSeq, 'sequence_gap');
    if (!e.hash || !e.data_hash) return broken(e.sequence, 'missing_hash');
    const intact = dataHash(e.data) === e.data_hash;
    if (!intact) {
      const covered = e.erased_at !== null && (erasures.get(e.erased_at) ?? 0) >= e.sequence;
      if (!covered) return broken(e.sequence, 'data_mismatch');
    }
    if (e.sequence === start) {
      // Its link to the entry before, which was dropped, cannot be recomputed: the chain is checked from it on.
    } else if (key && entryHash(previous, e, e.data_hash, key) === e.hash) keyed++;
    else if (entryHash(previous, e, e.data_hash) !== e.hash) return broken(e.sequence, 'hash_mismatch');
    else if (keyed > 0) return broken(e.sequence, 'unkeyed_after_keyed');
    if (intact && (e.type === 'turn_timing' || e.type === 'operator_message')) {
      const listed = (JSON.parse(e.data) as { turns?: { index: number; hash: string }[] }).turns;
      if (Array.isArray(listed)) for (const t of listed) chainedTurns.set(t.index, { hash: t.hash, sequence: e.sequence });
    }
    previous = e.hash;
    expectedSeq++;
  }
  if (previous !== head) return broken(expectedSeq, 'head_mismatch');
  if (turns && chainedTurns.size) {
    // Turns from the first chained one on must each match (older conversations began unchained).
    const first = Math.min(...chainedTurns.keys());
    for (const t of turns) {
      if (t.idx < first) continue;
      const c = chainedTurns.get(t.idx);
      if (!c) return broken(expectedSeq, 'turn_unchained', t.idx);
      if (c.hash !== turnHash(entries[0].conversation_id, t)) return broken(c.sequence, 'turn_mismatch', t.idx);
    }
    const stored = new Set(turns.map((t) => t.idx));
    // Where the horizon dropped history, a turn older than every kept one went with it.
    const oldestKept = start === null ? -Infinity : Math.min(...stored);
    for (const [idx, c] of chainedTurns) if (!stored.has(idx) && idx >= oldestKept) return broken(c.sequence, 'turn_mismatch', idx);
  }
  return { entries: entries.length, keyed_entries: keyed, valid: true, first_broken: null, ...(start !== null ? { first_sequence: start } : {}) };
}
