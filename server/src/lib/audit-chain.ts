// The hash chain of a conversation's audit log (docs/security.md, "Tamper-evident audit log").
//   data_hash = SHA-256(the entry's data exactly as stored, JSON text)
//   hash      = SHA-256(previous hash, or "" for the first entry, + "\n" + JSON of the array
//               [id, conversation_id, sequence, turn_index, type, request_id, timestamp, duration_ms, data_hash])
// Turn texts are chained too: the entry written with a turn (turn_timing, operator_message)
// lists each turn's hash (turnHash) in its data.
// With an operator key (AUDIT_CHAIN_KEY) `hash` is HMAC-SHA-256 under that key instead of SHA-256:
// then only a holder of the key can write an entry that verifies. Keyed means keyed: under a key,
// an entry that is unkeyed (or keyed under an older key, AUDIT_CHAIN_PREVIOUS_KEYS) verifies only
// before a point the current key fixed: a later entry under the current key, which chains it, or
// the chain's seal (`npm run audit -- seal`, store/chain-seals.ts), an HMAC under the current key
// of the chain's id, a sequence and the hash there. A database writer can move neither, so a chain
// rebuilt without the key (or under a leaked older one) never verifies; a chain's keys only ever
// get newer along it.
// Erasure replaces some entries' data by a skeleton and keeps both hashes; such an entry is
// accepted only when its erased_at column is set and a later chained `erasure` entry records
// that erasure (same time, sequence covered). Writing `erased: true` into data proves nothing.
import { createHmac } from 'node:crypto';
import { canonicalJson, sha256 } from './canonical.js';

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

/** What a conversation decides by, as a turn leaves it. */
export interface ChainedState {
  agentVersion: number;
  userId: string | null;
  status: string;
  outcome: string | null;
  capability: string | null;
  capabilityId?: string | null;
  phase: string | null;
  awaitingInput: boolean;
  flow: unknown;
  context: unknown;
  channel: { kind: string; origin: string; pageUrl: string | null } | null;
}

/**
 * Hash of a conversation's state (chained in its turn's turn_timing entry as `state`), over a
 * canonical JSON of the fields (keys sorted, undefined left out as JSON leaves it out), so that a
 * read back from either database hashes the same.
 */
export function stateHash(c: ChainedState): string {
  const fields = [
    c.agentVersion,
    c.userId ?? null,
    c.status,
    c.outcome ?? null,
    c.capability ?? null,
    c.capabilityId ?? null,
    c.phase ?? null,
    c.awaitingInput,
    c.flow ?? null,
    c.context ?? null,
    c.channel && [c.channel.kind, c.channel.origin, c.channel.pageUrl ?? null],
  ];
  return sha256(canonicalJson(fields));
}

/** Hash of one turn as stored, bound to its conversation and place. */
export function turnHash(conversationId: string, t: HashedTurn): string {
  return sha256(JSON.stringify([conversationId, t.idx, t.role, t.message, t.timestamp, t.author ?? null]));
}

export type BrokenReason =
  | 'sequence_gap'
  | 'missing_hash'
  | 'data_mismatch'
  | 'hash_mismatch'
  | 'unkeyed_after_keyed'
  | 'not_keyed'
  | 'head_mismatch'
  | 'turn_mismatch'
  | 'turn_unchained'
  | 'state_mismatch';

/**
 * The operator's keys: `current` writes and seals, `previous` (oldest first) only verify entries
 * written before the current key took over.
 */
export interface ChainKeys {
  current: Buffer;
  previous: readonly Buffer[];
}

/** A chain's seal (store/chain-seals.ts): the current key's word that the chain up to `sequence` ended in `hash`. */
export interface ChainSeal {
  sequence: number;
  hash: string;
  seal: string;
}

/** The seal of a chain's entry: HMAC-SHA-256 under the current key of [kind, chain id, sequence, hash]. */
export function sealOf(key: Buffer, kind: string, chainId: string, sequence: number, hash: string): string {
  return createHmac('sha256', key)
    .update(JSON.stringify(['seal', kind, chainId, sequence, hash]))
    .digest('hex');
}

export interface ChainReport {
  entries: number;
  /** Entries whose hash is keyed under the current operator key. */
  keyed_entries: number;
  /**
   * Under a key: the sequence from which every entry is keyed under the current key (null when
   * none is). Entries before it verified because a point the key fixed vouches for them (a later
   * keyed entry or the seal): they prove what they proved when written, consistency only if unkeyed.
   */
  keyed_from?: number | null;
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
export function verifyChain(
  entries: StoredEntry[],
  head: string | null,
  turns?: HashedTurn[],
  keys?: ChainKeys,
  truncated = false,
  seal?: { kind: string; chainId: string; seal: ChainSeal | null },
): ChainReport {
  let previous: string | null = null;
  let expectedSeq = 1;
  let keyed = 0;
  // Under keys: each entry's rank (0 unkeyed, 1… the previous keys, the current key last), never
  // falling along the chain; the first entry under the current key, and the newest entry below it.
  const ranked = keys ? [...keys.previous, keys.current] : [];
  let rank = 0;
  let keyedFrom: number | null = null;
  let firstBelow: number | null = null;
  const start = truncated && entries.length > 0 && entries[0].sequence > 1 ? entries[0].sequence : null;
  const broken = (sequence: number, reason: BrokenReason, turnIndex?: number): ChainReport => ({
    entries: entries.length,
    keyed_entries: keyed,
    valid: false,
    first_broken: { sequence, reason, ...(turnIndex !== undefined ? { turn_index: turnIndex } : {}) },
    ...(keys ? { keyed_from: keyedFrom } : {}),
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
    } else if (!keys) {
      if (entryHash(previous, e, e.data_hash) !== e.hash) return broken(e.sequence, 'hash_mismatch');
    } else {
      const dh = e.data_hash;
      const r = [undefined, ...ranked].findIndex((k) => entryHash(previous, e, dh, k) === e.hash);
      if (r < 0) return broken(e.sequence, 'hash_mismatch');
      if (r < rank) return broken(e.sequence, 'unkeyed_after_keyed');
      rank = r;
      if (r === ranked.length) {
        keyed++;
        keyedFrom ??= e.sequence;
      } else firstBelow ??= e.sequence;
    }
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
  if (keys && firstBelow !== null && keyedFrom === null) {
    // Checked last, so that `not_keyed` says the chain is otherwise intact (what sealing needs).
    // No entry under the current key chains the older ones: only the chain's seal may vouch for
    // them, up to the entry it names.
    const sl = seal?.seal;
    const at = sl ? entries.find((e) => e.sequence === sl.sequence) : undefined;
    const vouchedThrough =
      sl && at && at.hash === sl.hash && sl.seal === sealOf(keys.current, seal.kind, seal.chainId, sl.sequence, sl.hash) ? sl.sequence : null;
    if (vouchedThrough === null) return broken(firstBelow, 'not_keyed');
    if (vouchedThrough < expectedSeq - 1) return broken(Math.max(vouchedThrough + 1, firstBelow), 'not_keyed');
  }
  return {
    entries: entries.length,
    keyed_entries: keyed,
    ...(keys ? { keyed_from: keyedFrom } : {}),
    valid: true,
    first_broken: null,
    ...(start !== null ? { first_sequence: start } : {}),
  };
}
