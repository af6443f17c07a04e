// Sealing hash chains under the operator's current AUDIT_CHAIN_KEY (`npm run audit -- seal`), run
// once when the key is set or rotated. Under a key an entry not keyed with it verifies only
// before a point the key fixed (lib/audit-chain.ts): a later keyed entry, or this seal. A chain
// whose newest entry predates the key (a conversation nobody has written to since, an agent not
// released since) is sealed at its head here, and only when it is otherwise intact; a broken one
// is reported and left unsealed.
import { sealOf, type ChainKeys } from '../../lib/audit-chain.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { ChainKind, ChainSealStore } from '../../store/conversations/chain-seals.js';
import type { ConversationStore } from '../../store/conversations/conversation-store.js';
import type { ReleaseStore } from '../../store/release-store.js';

export interface SealProgress {
  kind: ChainKind;
  total: number;
  checked: number;
  /** Chains sealed by this run. */
  sealed: number;
  /** Chains every entry of which is keyed under the current key, or sealed before: nothing to do. */
  keyed: number;
  /** Chains that fail verification otherwise: left unsealed, with where they broke. */
  broken: { id: string; tenantId: string; sequence: number; reason: string }[];
}

const PAGE = 200;

export async function sealChains(
  deps: { conversations: ConversationStore; releases: ReleaseStore; seals: ChainSealStore; keys: ChainKeys; clock: Clock },
  onProgress: (p: SealProgress) => void,
): Promise<SealProgress[]> {
  const done: SealProgress[] = [];
  for (const kind of ['release', 'conversation'] as const) {
    const p: SealProgress = { kind, total: await deps.seals.count(kind), checked: 0, sealed: 0, keyed: 0, broken: [] };
    let after: string | null = null;
    for (;;) {
      const page = await deps.seals.chains(kind, after, PAGE);
      if (!page.length) break;
      for (const c of page) {
        const r = kind === 'release' ? await deps.releases.verify(c.tenantId, c.id) : await deps.conversations.verifyAudit(c.tenantId, c.id);
        p.checked++;
        if (r.valid) p.keyed++;
        else if (r.first_broken?.reason === 'not_keyed') {
          await deps.seals.put(
            kind,
            c.id,
            c.tenantId,
            { sequence: c.sequence, hash: c.hash, seal: sealOf(deps.keys.current, kind, c.id, c.sequence, c.hash) },
            iso(deps.clock.now()),
          );
          p.sealed++;
        } else if (r.first_broken) p.broken.push({ id: c.id, tenantId: c.tenantId, sequence: r.first_broken.sequence, reason: r.first_broken.reason });
      }
      after = page[page.length - 1].id;
      onProgress(p);
    }
    done.push(p);
  }
  return done;
}
