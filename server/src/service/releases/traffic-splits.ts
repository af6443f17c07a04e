// Which version a new conversation starts on while a traffic split runs (the split itself is
// made, ended and promoted in releases.ts).
import { createHash } from 'node:crypto';
import type { SplitRow } from '../../store/agents/agent-store.js';

/**
 * The version a new conversation starts on: under a split, the candidate when the user (or, for
 * an anonymous one, the conversation) hashes into its share, else the current version. The hash
 * is of the agent, the candidate and the user, so every replica sends a user to the same version,
 * a larger share keeps those already sent, and each candidate samples users afresh.
 */
export function startVersion(agentId: string, current: number, split: SplitRow | null, who: string): number {
  if (!split || split.share <= 0) return current;
  if (split.share >= 10_000) return split.version;
  const bucket = createHash('sha256').update(`${agentId}\n${split.version}\n${who}`).digest().readUInt32BE(0) % 10_000;
  return bucket < split.share ? split.version : current;
}
