// Seals of hash chains (migration 025, lib/audit-chain.ts): the current AUDIT_CHAIN_KEY's word that
// a chain, up to a named entry, is the one the service wrote before that key took over.
import type { Knex } from 'knex';
import type { ChainSeal } from '../../lib/audit-chain.js';
import type { Database } from '../db.js';

export type ChainKind = 'conversation' | 'release';

/** Where each kind of chain keeps its length and head: the table, and its two columns. */
const HEADS: Record<ChainKind, { table: string; sequence: string; hash: string }> = {
  conversation: { table: 'conversations', sequence: 'audit_seq', hash: 'audit_hash' },
  release: { table: 'agents', sequence: 'release_seq', hash: 'release_hash' },
};

/** The seal of a chain, if it has one. */
export async function readSeal(knex: Knex, kind: ChainKind, chainId: string): Promise<ChainSeal | null> {
  const r: { sequence: number | string; hash: string; seal: string } | undefined = await knex('chain_seals')
    .where({ kind, chain_id: chainId })
    .first('sequence', 'hash', 'seal');
  return r ? { sequence: Number(r.sequence), hash: r.hash, seal: r.seal } : null;
}

export class ChainSealStore {
  private readonly knex: Knex;

  constructor(db: Database) {
    this.knex = db.knex;
  }

  /** Stores (or replaces) a chain's seal. */
  async put(kind: ChainKind, chainId: string, tenantId: string, seal: ChainSeal, now: string): Promise<void> {
    await this.knex('chain_seals')
      .insert({ kind, chain_id: chainId, tenant_id: tenantId, sequence: seal.sequence, hash: seal.hash, seal: seal.seal, created_at: now })
      .onConflict(['kind', 'chain_id'])
      .merge(['tenant_id', 'sequence', 'hash', 'seal', 'created_at']);
  }

  /** Counts the chains with a head: conversations, or agents' release records. */
  async count(kind: ChainKind): Promise<number> {
    const h = HEADS[kind];
    const r = (await this.knex(h.table).whereNotNull(h.hash).count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(r?.n ?? 0);
  }

  /** A page of chains with a head, by id, with the head: conversations, or agents for their release records. */
  async chains(kind: ChainKind, after: string | null, limit: number): Promise<{ id: string; tenantId: string; sequence: number; hash: string }[]> {
    const h = HEADS[kind];
    const q = this.knex(h.table).whereNotNull(h.hash);
    if (after !== null) q.where('id', '>', after);
    const rows: Record<string, string | number>[] = await q
      .orderBy('id')
      .limit(limit)
      .select('id', 'tenant_id', `${h.sequence} as sequence`, `${h.hash} as hash`);
    return rows.map((r) => ({ id: String(r.id), tenantId: String(r.tenant_id), sequence: Number(r.sequence), hash: String(r.hash) }));
  }
}
