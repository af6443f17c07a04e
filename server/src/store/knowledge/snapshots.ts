// Knowledge snapshots (migration 031). Every change of a tenant's passages takes the tenant's next
// snapshot number under its knowledge lock; the passages of snapshot n are those added at or
// before n and not removed by then. A version that takes knowledge through releases pins the
// snapshot it was made at with a digest of its sources' passages then. Replaced passages are kept
// while a version in use pins a snapshot that sees them: each agent's current version, its split
// candidate and its newest version (the draft awaiting release). `kept_from` is the oldest
// snapshot still whole; a version pinned before it cannot be released again.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { ConflictError } from '../../errors.js';
import type { Database } from '../db.js';

/** A version's pinned knowledge: the snapshot and the digest of its sources' passages then. */
export interface Pin {
  snapshot: number;
  digest: string;
}

/** Which sources a pin covers: names, and every source with one of the tags. */
export interface PinSelector {
  names: string[];
  tags: string[];
}

/** The lock every change of a tenant's knowledge takes (the sources' quotas are checked under it too). */
export const knowledgeLock = (tenantId: string) => `knowledge_sources:${tenantId}`;

/** The tenant's newest snapshot and the oldest one still whole (0 and 0 before any change). */
export async function snapshotOf(knex: Knex, tenantId: string): Promise<{ snapshot: number; keptFrom: number }> {
  const r: { snapshot: number | string; kept_from: number | string } | undefined = await knex('knowledge_snapshots')
    .where({ tenant_id: tenantId })
    .first('snapshot', 'kept_from');
  return { snapshot: Number(r?.snapshot ?? 0), keptFrom: Number(r?.kept_from ?? 0) };
}

/** Takes the tenant's next snapshot number (the caller holds the tenant's knowledge lock). */
export async function nextSnapshot(trx: Knex.Transaction, tenantId: string, now: string): Promise<number> {
  const { snapshot } = await snapshotOf(trx, tenantId);
  const next = snapshot + 1;
  if (snapshot === 0 && !(await trx('knowledge_snapshots').where({ tenant_id: tenantId }).first('tenant_id'))) {
    await trx('knowledge_snapshots').insert({ tenant_id: tenantId, snapshot: next, kept_from: 0, changed_at: now });
  } else {
    await trx('knowledge_snapshots').where({ tenant_id: tenantId }).update({ snapshot: next, changed_at: now });
  }
  return next;
}

/** Passages visible at `snapshot` (null: now). */
export function visibleAt(q: Knex.QueryBuilder, snapshot: number | null): Knex.QueryBuilder {
  if (snapshot === null) return q.whereNull('removed');
  return q.where('added', '<=', snapshot).where((w) => void w.whereNull('removed').orWhere('removed', '>', snapshot));
}

/**
 * Marks the passages of a source (those of one page when `url` is given) replaced at `snapshot`
 * and answers the number after the source's last, from which new passages are numbered (never
 * reusing a number a kept passage has).
 */
export async function replacePassages(trx: Knex.Transaction, tenantId: string, source: string, snapshot: number, url?: string): Promise<number> {
  const q = trx('knowledge_passages').where({ tenant_id: tenantId, source }).whereNull('removed');
  if (url !== undefined) q.where({ url });
  await q.update({ removed: snapshot });
  const last = (await trx('knowledge_passages').where({ tenant_id: tenantId, source }).max({ n: 'seq' }).first()) as { n: number | string | null };
  return Number(last.n ?? 0) + 1;
}

/** How many replaced passages the tenant keeps for the versions that pin them (they count against its passages quota). */
export async function keptPassages(knex: Knex, tenantId: string): Promise<number> {
  const r = (await knex('knowledge_passages').where({ tenant_id: tenantId }).whereNotNull('removed').count({ n: '*' }).first()) as { n: number | string };
  return Number(r.n);
}

/**
 * Deletes the replaced passages no version in use sees, and moves `kept_from` up to the oldest
 * snapshot a version in use pins (or the newest, when none does). The caller holds the lock.
 */
export async function prune(trx: Knex.Transaction, tenantId: string): Promise<void> {
  const r = (await trx.raw(
    `select min(v.knowledge_snapshot) as n from agent_versions v join agents a on a.id = v.agent_id
      where v.tenant_id = ? and a.tenant_id = ? and v.knowledge_snapshot is not null
        and (v.version = a.current_version or v.version = a.split_version
             or v.version = (select max(w.version) from agent_versions w where w.agent_id = v.agent_id))`,
    [tenantId, tenantId],
  )) as unknown;
  const rows = Array.isArray(r) ? (r as { n: number | string | null }[]) : (r as { rows: { n: number | string | null }[] }).rows;
  const n = rows.at(0)?.n;
  const oldest = n === null || n === undefined ? null : Number(n);
  const { snapshot, keptFrom } = await snapshotOf(trx, tenantId);
  const from = oldest ?? snapshot;
  const gone = trx('knowledge_passages').where({ tenant_id: tenantId }).whereNotNull('removed');
  if (oldest !== null) gone.where('removed', '<=', oldest);
  await gone.delete();
  if (from > keptFrom) await trx('knowledge_snapshots').where({ tenant_id: tenantId }).update({ kept_from: from });
}

/** The pin of the tenant's sources chosen by `selector` as they are now (the caller holds the lock). */
export async function pinNow(trx: Knex.Transaction, tenantId: string, selector: PinSelector): Promise<Pin> {
  const { snapshot } = await snapshotOf(trx, tenantId);
  const sources: { name: string; tags: string }[] = await trx('knowledge_sources').where({ tenant_id: tenantId }).select('name', 'tags');
  const names = sources
    .filter((s) => selector.names.includes(s.name) || (JSON.parse(s.tags) as string[]).some((t) => selector.tags.includes(t)))
    .map((s) => s.name)
    .sort();
  const hash = createHash('sha256');
  // The passages by identity (a passage's text never changes under its source, number and snapshot), a few hundred at a time.
  for (let i = 0; i < names.length; i += 100) {
    const rows: { source: string; seq: number | string; added: number | string }[] = await trx('knowledge_passages')
      .where({ tenant_id: tenantId })
      .whereIn('source', names.slice(i, i + 100))
      .whereNull('removed')
      .orderBy(['source', 'seq'])
      .select('source', 'seq', 'added');
    for (const p of rows) hash.update(`${p.source}\t${p.seq}\t${p.added}\n`);
  }
  return { snapshot, digest: hash.digest('hex') };
}

/** Refuses (409) to release a version whose pinned snapshot is no longer whole. */
export async function checkWhole(
  trx: Knex.Transaction,
  adapter: Database['adapter'],
  tenantId: string,
  version: number,
  snapshot: number | null,
): Promise<void> {
  if (snapshot === null) return;
  await adapter.lockKey(trx, knowledgeLock(tenantId));
  const { keptFrom } = await snapshotOf(trx, tenantId);
  if (snapshot < keptFrom) {
    throw new ConflictError(
      'knowledge_snapshot_gone',
      `Version ${version} answers from knowledge snapshot ${snapshot}, whose replaced passages are no longer kept (every snapshot from ${keptFrom} is): store its definition again (agents apply) for a version of the knowledge as it is now`,
    );
  }
}
