// Agents and their immutable versions. Every query filters by tenant_id.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db-errors.js';
import type { Database } from '../db.js';
import { present, type AgentTableRow, type AgentVersionTableRow, type ConversationTableRow } from '../rows.js';
import { appendRelease, type ReleaseRow, type ReleaseStep } from '../release-store.js';
import { ConflictError, CurrentChangedError } from '../../errors.js';
import { checkWhole, knowledgeLock, pinNow, prune, type Pin, type PinSelector } from '../knowledge/snapshots.js';

/** A split in force: its candidate and share of new conversations in hundredths of a percent. */
export interface SplitRow {
  version: number;
  share: number;
  startedAt: string;
}

/** What a release step says beyond what the store fills in (the versions, digest and split). */
export type StepInput = Omit<ReleaseStep, 'version' | 'digest' | 'previousVersion' | 'split' | 'action'> & { action?: ReleaseStep['action'] };

/** A change of what an agent releases: a version made current (which ends any split) or a split set or ended. */
export interface ReleaseChange {
  /** The current version the gates judged the candidate beside: the change is refused if it has moved. */
  expectCurrent: number;
  /** Make this version current. */
  current?: number;
  /** Set (or, null, end) the split. */
  split?: { version: number; share: number } | null;
  step: StepInput & { action: ReleaseStep['action'] };
}

export interface AgentRow {
  id: string;
  tenantId: string;
  slug: string;
  currentVersion: number;
  archivedAt: string | null;
  createdAt: string;
  updatedAt: string;
  split: SplitRow | null;
}

export interface AgentVersionRow {
  agentId: string;
  version: number;
  digest: string;
  definition: unknown;
  createdAt: string;
  note: string | null;
  /** The knowledge snapshot it answers from (null: its sources as they are now). */
  knowledge: Pin | null;
}

/** A version as listed: whether a step of the release record ever made it current. */
export interface ListedVersionRow extends AgentVersionRow {
  released: boolean;
}

const toAgent = (r: AgentTableRow): AgentRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  slug: r.slug,
  currentVersion: Number(r.current_version),
  archivedAt: r.archived_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  split: r.split_version === null ? null : { version: Number(r.split_version), share: Number(r.split_share), startedAt: r.split_started_at ?? r.updated_at },
});

const toVersion = (r: AgentVersionTableRow): AgentVersionRow => ({
  agentId: r.agent_id,
  version: Number(r.version),
  digest: r.digest,
  definition: JSON.parse(r.definition) as unknown,
  createdAt: r.created_at,
  note: r.note ?? null,
  knowledge: pinOf(r),
});

const pinOf = (r: Pick<AgentVersionTableRow, 'knowledge_snapshot' | 'knowledge_digest'>): Pin | null =>
  r.knowledge_snapshot === null || r.knowledge_snapshot === undefined || !r.knowledge_digest
    ? null
    : { snapshot: Number(r.knowledge_snapshot), digest: r.knowledge_digest };

/** The note column only when there is a note: a version without one is stored as before migration 027. */
const noted = (note: string | null) => (note === null ? {} : { note });
/** The pin's columns only when it pins: a version that follows its sources live is stored as before migration 031. */
const pinned = (pin: Pin | null) => (pin === null ? {} : { knowledge_snapshot: pin.snapshot, knowledge_digest: pin.digest });

export class AgentStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];
  private readonly writer: Database['writer'];
  constructor(
    db: Database,
    private readonly chainKey?: Buffer,
  ) {
    this.knex = db.knex;
    this.adapter = db.adapter;
    this.writer = db.writer;
  }

  /** The agent with this slug, archived or not. */
  async bySlug(tenantId: string, slug: string): Promise<AgentRow | null> {
    const r = await this.writer.agentBySlug(tenantId, slug);
    return r ? toAgent(r) : null;
  }

  /**
   * The agent with this slug, archived or not, and (on PostgreSQL, in the same round trip) the row
   * of its conversation `conversationId`, for that conversation's first read (ConversationStore.exclusive).
   */
  async bySlugWithConversation(
    tenantId: string,
    slug: string,
    conversationId: string,
  ): Promise<{ agent: AgentRow | null; conversation?: ConversationTableRow }> {
    const r = await this.writer.agentWithConversation(tenantId, slug, conversationId);
    return { agent: r.agent ? toAgent(r.agent) : null, conversation: r.conversation };
  }

  /** The slug of an agent, archived or not. */
  async slugOf(tenantId: string, agentId: string): Promise<string | null> {
    const row: { slug: string } | undefined = await this.knex('agents').where({ tenant_id: tenantId, id: agentId }).first('slug');
    return row?.slug ?? null;
  }

  async list(tenantId: string): Promise<AgentRow[]> {
    const rows = await this.knex('agents').where({ tenant_id: tenantId }).whereNull('archived_at').orderBy('slug');
    return rows.map(toAgent);
  }

  async version(tenantId: string, agentId: string, version: number): Promise<AgentVersionRow | null> {
    const r = await this.knex('agent_versions').where({ tenant_id: tenantId, agent_id: agentId, version }).first();
    return r ? toVersion(r) : null;
  }

  /**
   * Stores a definition: a new agent at version 1, a new version when the digest differs from
   * the current one, nothing new when it is the same. Un-archives an archived agent.
   */
  async put(
    tenantId: string,
    slug: string,
    definition: unknown,
    digest: string,
    now: string,
    activate = true,
    step?: StepInput,
    expectCurrent?: number | null,
    note?: string,
    /** The sources whose snapshot the version pins (a definition with `knowledge_updates: release`). */
    knowledge?: PinSelector | null,
  ): Promise<{ agent: AgentRow; changed: boolean; version: number; release: ReleaseRow | null; knowledge: Pin | null }> {
    // Concurrent first PUTs of one slug race to insert it: the losers find it on a second try.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.putOnce(tenantId, slug, definition, digest, now, { activate, step, expectCurrent, note: note ?? null, knowledge: knowledge ?? null });
      } catch (err) {
        if (attempt >= 3 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  /**
   * A new agent starts at version 1, current even as a draft (there is nothing else to run). For
   * an existing one the definition is compared with the current version, then with the newest:
   * the same as either is no new version (a draft put again, or activated when `activate`);
   * anything else is a new version after the newest, current when `activate`. With
   * `expectCurrent` (a version, or null for an agent not stored or archived), a PUT that would
   * make its version current refuses (CurrentChangedError) when the locked row says otherwise.
   * With `knowledge`, a version is the definition and the knowledge snapshot of those sources as
   * they are now: the same definition over changed passages is a new version.
   */
  private async putOnce(
    tenantId: string,
    slug: string,
    definition: unknown,
    digest: string,
    now: string,
    o: { activate: boolean; step: StepInput | undefined; expectCurrent: number | null | undefined; note: string | null; knowledge: PinSelector | null },
  ): Promise<{ agent: AgentRow; changed: boolean; version: number; release: ReleaseRow | null; knowledge: Pin | null }> {
    const { activate, step } = o;
    return this.knex.transaction(async (trx) => {
      const q = trx('agents').where({ tenant_id: tenantId, slug }).first();
      const existing = await this.adapter.forUpdate(q);
      const live = existing && !existing.archived_at ? Number(existing.current_version) : null;
      if (activate && o.expectCurrent !== undefined && live !== o.expectCurrent) throw new CurrentChangedError();
      // The snapshot is read under the tenant's knowledge lock, so no change prunes what it sees before the version is stored.
      let pin: Pin | null = null;
      if (o.knowledge) {
        await this.adapter.lockKey(trx, knowledgeLock(tenantId));
        pin = await pinNow(trx, tenantId, o.knowledge);
      }
      const same = (v: AgentVersionTableRow) => v.digest === digest && (pinOf(v)?.digest ?? null) === (pin?.digest ?? null);
      const reread = async (id: string) => toAgent(present(await trx('agents').where({ id }).first(), 'agent'));
      const insertVersion = (agentId: string, version: number) =>
        trx('agent_versions').insert({
          agent_id: agentId,
          version,
          tenant_id: tenantId,
          digest,
          definition: JSON.stringify(definition),
          created_at: now,
          ...noted(o.note),
          ...pinned(pin),
        });
      // A version made current is a step of the release record, written with it.
      const record = async (id: string, version: number, previousVersion: number | null, knowledge: Pin | null) => {
        if (!step) return null;
        const row = present(await trx('agents').where({ id }).first(), 'agent');
        return appendRelease(trx, row, { action: 'activate', ...step, version, digest, knowledge, previousVersion, split: null }, this.chainKey);
      };
      if (!existing) {
        const id = randomUUID();
        await trx('agents').insert({ id, tenant_id: tenantId, slug, current_version: 1, archived_at: null, created_at: now, updated_at: now });
        await insertVersion(id, 1);
        const release = await record(id, 1, null, pin);
        return { agent: await reread(id), changed: true, version: 1, release, knowledge: pin };
      }
      const currentVersion = Number(existing.current_version);
      const current = present(await trx('agent_versions').where({ agent_id: existing.id, version: currentVersion }).first(), 'agent version');
      if (same(current)) {
        if (existing.archived_at) {
          await trx('agents').where({ id: existing.id }).update({ archived_at: null, updated_at: now });
          return { agent: await reread(existing.id), changed: true, version: currentVersion, release: null, knowledge: pinOf(current) };
        }
        return { agent: toAgent(existing), changed: false, version: currentVersion, release: null, knowledge: pinOf(current) };
      }
      const newest = present(await trx('agent_versions').where({ agent_id: existing.id }).orderBy('version', 'desc').first(), 'agent version');
      let version = Number(newest.version);
      const known = same(newest);
      const knowledge = known ? pinOf(newest) : pin;
      if (!known) {
        version += 1;
        await insertVersion(existing.id, version);
      }
      let release: ReleaseRow | null = null;
      if (activate) {
        await trx('agents')
          .where({ id: existing.id })
          .update({ current_version: version, archived_at: null, updated_at: now, split_version: null, split_share: null, split_started_at: null });
        release = await record(existing.id, version, currentVersion, knowledge);
      }
      // Passages only an older version saw go once it is no longer in use.
      if (o.knowledge) await prune(trx, tenantId);
      return { agent: await reread(existing.id), changed: !known || activate, version, release, knowledge };
    });
  }

  /**
   * An agent's versions, newest first, after `before` (a version number) when given, each with
   * whether a step of the release record made it current (for showing; a rollback asks
   * ReleaseStore.wasReleased, which also verifies the record).
   */
  async versions(tenantId: string, agentId: string, page: { limit: number; before: number | null }): Promise<ListedVersionRow[]> {
    const knex = this.knex;
    const q = knex('agent_versions')
      .where('agent_versions.tenant_id', tenantId)
      .where('agent_versions.agent_id', agentId)
      .select('agent_versions.*', {
        released: knex('release_records')
          .count('*')
          .where({ tenant_id: tenantId, agent_id: agentId })
          .whereIn('action', ['activate', 'rollback', 'promote'])
          .where('version', knex.ref('agent_versions.version')),
      });
    if (page.before !== null) q.where('agent_versions.version', '<', page.before);
    const rows = (await q.orderBy('agent_versions.version', 'desc').limit(page.limit)) as (AgentVersionTableRow & { released: number | string })[];
    return rows.map((r) => ({ ...toVersion(r), released: Number(r.released) > 0 }));
  }

  /** The number of the newest stored version of an agent. */
  async newestVersion(tenantId: string, agentId: string): Promise<number> {
    const r = (await this.knex('agent_versions').where({ tenant_id: tenantId, agent_id: agentId }).max({ newest: 'version' }).first()) as
      | { newest: number | string | null }
      | undefined;
    return Number(r?.newest ?? 0);
  }

  /**
   * Makes a version current (ending any split) or sets or ends the split, and appends the step
   * to the release record, in one transaction with the agent's row locked. Null when the agent
   * has no such version; a 409 when the current version is no longer the one the gates judged
   * beside (another release won the race).
   */
  async release(tenantId: string, agentId: string, change: ReleaseChange): Promise<{ agent: AgentRow; release: ReleaseRow } | null> {
    return this.knex.transaction(async (trx) => {
      const row = await this.adapter.forUpdate(trx('agents').where({ tenant_id: tenantId, id: agentId }).first());
      if (!row) return null;
      const previous = Number(row.current_version);
      if (previous !== change.expectCurrent) {
        throw new ConflictError('invalid_transition', `Version ${previous} was made current while the gates were judged; try again`);
      }
      const target = change.current ?? change.split?.version ?? (row.split_version === null ? previous : Number(row.split_version));
      const v = await trx('agent_versions')
        .where({ tenant_id: tenantId, agent_id: agentId, version: target })
        .first('digest', 'knowledge_snapshot', 'knowledge_digest');
      if (!v) return null;
      const knowledge = pinOf(v);
      // A version whose snapshot's passages are gone cannot be served again (the lock keeps a change from pruning meanwhile).
      await checkWhole(trx, this.adapter, tenantId, target, knowledge?.snapshot ?? null);
      const now = change.step.createdAt;
      const update: Partial<AgentTableRow> = { updated_at: now };
      let split: { version: number; share: number } | null =
        row.split_version === null ? null : { version: Number(row.split_version), share: Number(row.split_share) };
      if (change.current !== undefined) {
        Object.assign(update, { current_version: change.current, split_version: null, split_share: null, split_started_at: null });
        split = null;
      } else if (change.split !== undefined) {
        const sameCandidate = split !== null && change.split !== null && split.version === change.split.version;
        split = change.split;
        Object.assign(
          update,
          change.split
            ? { split_version: change.split.version, split_share: change.split.share, split_started_at: sameCandidate ? row.split_started_at : now }
            : { split_version: null, split_share: null, split_started_at: null },
        );
      }
      await trx('agents').where({ tenant_id: tenantId, id: agentId }).update(update);
      const locked = { ...row, ...update };
      const release = await appendRelease(trx, locked, { ...change.step, version: target, digest: v.digest, knowledge, previousVersion: previous, split }, this.chainKey);
      // Passages only the version it replaced saw go now.
      if (knowledge) await prune(trx, tenantId);
      return { agent: toAgent(present(await trx('agents').where({ id: agentId }).first(), 'agent')), release };
    });
  }

  async archive(tenantId: string, slug: string, now: string): Promise<boolean> {
    const n = await this.knex('agents').where({ tenant_id: tenantId, slug }).whereNull('archived_at').update({ archived_at: now, updated_at: now });
    return n > 0;
  }
}
