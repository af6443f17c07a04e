// The review inbox's reads and its actions (agents' stored test conversations are
// test-suite-store.ts's, evaluations evaluation-store.ts's).
// Every query filters by tenant and agent and is bounded by an index of its table: the inbox
// pages review_groups by (agent, status[, reason], last seen) and reads the occurrences of one
// page's groups only (migration 018).
import type { Knex } from 'knex';
import type { Database } from '../db.js';
import { newestFirst } from '../keyset.js';

export interface ReviewGroupRow {
  id: string;
  reason: string;
  groupKey: string;
  count: number;
  firstSeenAt: string;
  lastSeenAt: string;
  status: string;
  action: Record<string, unknown> | null;
  actedBy: string | null;
  actedAt: string | null;
}

export interface ReviewOccurrenceRow {
  groupKey: string;
  actedGroup: string | null;
  conversationId: string;
  turnIndex: number;
  auditSequence: number | null;
  version: number;
  reason: string;
  message: string;
  capability: string;
  detail: Record<string, unknown>;
  createdAt: string;
}

interface GroupTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  reason: string;
  group_key: string;
  open_key: string | null;
  count: number | string;
  first_seen_at: string;
  last_seen_at: string;
  status: string;
  action: string | null;
  acted_by: string | null;
  acted_at: string | null;
}

interface OccurrenceTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  group_key: string;
  acted_group: string | null;
  conversation_id: string;
  turn_index: number | string;
  audit_sequence: number | string | null;
  agent_version: number | string;
  reason: string;
  message: string;
  capability: string;
  detail: string;
  created_at: string;
}

const toGroup = (r: GroupTableRow): ReviewGroupRow => ({
  id: r.id,
  reason: r.reason,
  groupKey: r.group_key,
  count: Number(r.count),
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  status: r.status,
  action: r.action ? (JSON.parse(r.action) as Record<string, unknown>) : null,
  actedBy: r.acted_by,
  actedAt: r.acted_at,
});

const toOccurrence = (r: OccurrenceTableRow): ReviewOccurrenceRow => ({
  groupKey: r.group_key,
  actedGroup: r.acted_group,
  conversationId: r.conversation_id,
  turnIndex: Number(r.turn_index),
  auditSequence: r.audit_sequence === null ? null : Number(r.audit_sequence),
  version: Number(r.agent_version),
  reason: r.reason,
  message: r.message,
  capability: r.capability,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
  createdAt: r.created_at,
});

export interface ReviewFilter {
  status: string;
  reason?: string;
  since?: string;
  until?: string;
}

export class ReviewStore {
  private readonly knex: Knex;

  constructor(db: Database) {
    this.knex = db.knex;
  }

  private groups(tenantId: string, agentId: string, f: ReviewFilter) {
    const q = this.knex<GroupTableRow>('review_groups').where({ tenant_id: tenantId, agent_id: agentId, status: f.status });
    if (f.reason) void q.where('reason', f.reason);
    if (f.since) void q.where('last_seen_at', '>=', f.since);
    if (f.until) void q.where('last_seen_at', '<', f.until);
    return q;
  }

  /** A page of groups, the most recently seen first, after a (last_seen_at, id) position. */
  async list(tenantId: string, agentId: string, f: ReviewFilter, page: { limit: number; after: [string, string] | null }): Promise<ReviewGroupRow[]> {
    return (await newestFirst(this.groups(tenantId, agentId, f), 'last_seen_at', page.after, page.limit)).map(toGroup);
  }

  /** Groups and messages by reason, under the status and time filters. */
  async counts(tenantId: string, agentId: string, f: Omit<ReviewFilter, 'reason'>): Promise<{ reason: string; items: number; messages: number }[]> {
    const rows: { reason: string; items: number | string; messages: number | string | null }[] = await this.groups(tenantId, agentId, f)
      .select('reason')
      .count({ items: '*' })
      .sum({ messages: 'count' })
      .groupBy('reason');
    return rows.map((r) => ({ reason: r.reason, items: Number(r.items), messages: Number(r.messages ?? 0) }));
  }

  /** The newest `per` occurrences of each of these groups (open groups: by key; acted ones: by id). */
  async occurrences(tenantId: string, agentId: string, groups: ReviewGroupRow[], per: number): Promise<Map<string, ReviewOccurrenceRow[]>> {
    const out = new Map<string, ReviewOccurrenceRow[]>();
    if (groups.length === 0) return out;
    const open = groups.filter((g) => g.status === 'open').map((g) => g.groupKey);
    const acted = groups.filter((g) => g.status !== 'open').map((g) => g.id);
    const ranked = this.knex('review_occurrences')
      .select('*', this.knex.raw('row_number() over (partition by group_key, acted_group order by created_at desc, id desc) as rank'))
      .where({ tenant_id: tenantId, agent_id: agentId })
      .where((w) => {
        if (open.length) void w.orWhere((x) => x.whereIn('group_key', open).whereNull('acted_group'));
        if (acted.length) void w.orWhereIn('acted_group', acted);
      });
    const rows = (await this.knex.select('*').from(ranked.as('r')).where('rank', '<=', per)) as OccurrenceTableRow[];
    const byKey = new Map(groups.map((g) => [g.status === 'open' ? `k:${g.groupKey}` : `g:${g.id}`, g.id]));
    for (const r of rows) {
      const id = byKey.get(r.acted_group ? `g:${r.acted_group}` : `k:${r.group_key}`);
      if (!id) continue;
      const list = out.get(id) ?? [];
      list.push(toOccurrence(r));
      out.set(id, list);
    }
    for (const list of out.values()) list.sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    return out;
  }

  /** Findings the caps left out (agent_closes' `capped_*` rows, written with the turns), in the hours from `since` to `until`. */
  async capped(tenantId: string, agentId: string, w: { since: string; until?: string }): Promise<{ capped_conv: number; capped_hour: number }> {
    const q = this.knex('agent_closes')
      .where({ tenant_id: tenantId, agent_id: agentId })
      .whereIn('measure', ['capped_conv', 'capped_hour'])
      .where('hour', '>=', w.since.slice(0, 13));
    if (w.until) q.where('hour', '<=', w.until.slice(0, 13));
    const rows: { measure: string; n: unknown }[] = await q.select('measure', this.knex.raw('sum(n) as n')).groupBy('measure');
    const out = { capped_conv: 0, capped_hour: 0 };
    for (const r of rows) out[r.measure as keyof typeof out] = Number(r.n);
    return out;
  }

  async groupsById(tenantId: string, agentId: string, ids: string[]): Promise<ReviewGroupRow[]> {
    return (await this.knex<GroupTableRow>('review_groups').where({ tenant_id: tenantId, agent_id: agentId }).whereIn('id', ids)).map(toGroup);
  }

  /**
   * Closes open groups with the action taken: each leaves the inbox (its open key is cleared) and
   * its open occurrences are tied to it. Answers how many were still open; a group acted on
   * meanwhile by another request is not counted, and the caller's transaction is rolled back.
   */
  async act(
    trx: Knex.Transaction,
    tenantId: string,
    agentId: string,
    acted: { id: string; groupKey: string; status: string; action: Record<string, unknown> }[],
    by: { keyId: string | null; at: string },
  ): Promise<number> {
    let n = 0;
    for (const a of acted) {
      const changed = await trx('review_groups')
        .where({ tenant_id: tenantId, agent_id: agentId, id: a.id, status: 'open' })
        .update({ status: a.status, open_key: null, action: JSON.stringify(a.action), acted_by: by.keyId, acted_at: by.at });
      if (changed !== 1) continue;
      n++;
      await trx('review_occurrences')
        .where({ tenant_id: tenantId, agent_id: agentId, group_key: a.groupKey })
        .whereNull('acted_group')
        .update({ acted_group: a.id });
    }
    return n;
  }

  transaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.knex.transaction(work);
  }

  /**
   * The labelled set of an agent's reviews: the messages of groups added as examples or out of
   * scope, with the capability the reviewer chose (null: out of scope), newest first.
   */
  async labelled(tenantId: string, agentId: string, limit: number): Promise<{ message: string; capability: string | null }[]> {
    const rows: { status: string; action: string }[] = await this.knex<GroupTableRow>('review_groups')
      .where({ tenant_id: tenantId, agent_id: agentId })
      .whereIn('status', ['added', 'out_of_scope'])
      .orderBy([
        { column: 'acted_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit)
      .select('status', 'action');
    // An erased example (docs/lifecycle.md) is no longer there to label.
    return rows.flatMap((r) => {
      const a = JSON.parse(r.action) as { example?: string; capability?: string };
      return typeof a.example === 'string' ? [{ message: a.example, capability: r.status === 'added' ? (a.capability ?? null) : null }] : [];
    });
  }
}
