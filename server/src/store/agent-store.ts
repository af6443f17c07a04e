// Agents and their immutable versions. Every query filters by tenant_id.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation } from './db-errors.js';
import type { Database } from './db.js';
import { present, type AgentTableRow, type AgentVersionTableRow } from './rows.js';

export interface AgentRow {
  id: string;
  tenantId: string;
  slug: string;
  currentVersion: number;
  archivedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AgentVersionRow {
  agentId: string;
  version: number;
  digest: string;
  definition: unknown;
  createdAt: string;
}

const toAgent = (r: AgentTableRow): AgentRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  slug: r.slug,
  currentVersion: Number(r.current_version),
  archivedAt: r.archived_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toVersion = (r: AgentVersionTableRow): AgentVersionRow => ({
  agentId: r.agent_id,
  version: Number(r.version),
  digest: r.digest,
  definition: JSON.parse(r.definition) as unknown,
  createdAt: r.created_at,
});

export class AgentStore {
  private readonly knex: Knex;
  private readonly adapter: Database['adapter'];
  private readonly writer: Database['writer'];
  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
    this.writer = db.writer;
  }

  /** The agent with this slug, archived or not. */
  async bySlug(tenantId: string, slug: string): Promise<AgentRow | null> {
    const r = await this.writer.agentBySlug(tenantId, slug);
    return r ? toAgent(r) : null;
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
  ): Promise<{ agent: AgentRow; changed: boolean; version: number }> {
    // Concurrent first PUTs of one slug race to insert it: the losers find it on a second try.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.putOnce(tenantId, slug, definition, digest, now, activate);
      } catch (err) {
        if (attempt >= 3 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  /**
   * A new agent starts at version 1, current even as a draft (there is nothing else to run). For
   * an existing one the definition is compared with the current version, then with the newest:
   * the same as either is no new version (a draft put again, or activated when `activate`);
   * anything else is a new version after the newest, current when `activate`.
   */
  private async putOnce(
    tenantId: string,
    slug: string,
    definition: unknown,
    digest: string,
    now: string,
    activate: boolean,
  ): Promise<{ agent: AgentRow; changed: boolean; version: number }> {
    return this.knex.transaction(async (trx) => {
      const q = trx('agents').where({ tenant_id: tenantId, slug }).first();
      const existing = await this.adapter.forUpdate(q);
      const reread = async (id: string) => toAgent(present(await trx('agents').where({ id }).first(), 'agent'));
      if (!existing) {
        const id = randomUUID();
        await trx('agents').insert({ id, tenant_id: tenantId, slug, current_version: 1, archived_at: null, created_at: now, updated_at: now });
        await trx('agent_versions').insert({ agent_id: id, version: 1, tenant_id: tenantId, digest, definition: JSON.stringify(definition), created_at: now });
        return { agent: await reread(id), changed: true, version: 1 };
      }
      const currentVersion = Number(existing.current_version);
      const current = present(await trx('agent_versions').where({ agent_id: existing.id, version: currentVersion }).first(), 'agent version');
      if (current.digest === digest) {
        if (existing.archived_at) {
          await trx('agents').where({ id: existing.id }).update({ archived_at: null, updated_at: now });
          return { agent: await reread(existing.id), changed: true, version: currentVersion };
        }
        return { agent: toAgent(existing), changed: false, version: currentVersion };
      }
      const newest = present(await trx('agent_versions').where({ agent_id: existing.id }).orderBy('version', 'desc').first(), 'agent version');
      let version = Number(newest.version);
      const known = newest.digest === digest;
      if (!known) {
        version += 1;
        await trx('agent_versions').insert({
          agent_id: existing.id,
          version,
          tenant_id: tenantId,
          digest,
          definition: JSON.stringify(definition),
          created_at: now,
        });
      }
      if (activate) await trx('agents').where({ id: existing.id }).update({ current_version: version, archived_at: null, updated_at: now });
      return { agent: await reread(existing.id), changed: !known || activate, version };
    });
  }

  /** An agent's versions, newest first, after `before` (a version number) when given. */
  async versions(tenantId: string, agentId: string, page: { limit: number; before: number | null }): Promise<AgentVersionRow[]> {
    const q = this.knex('agent_versions').where({ tenant_id: tenantId, agent_id: agentId });
    if (page.before !== null) q.where('version', '<', page.before);
    const rows = await q.orderBy('version', 'desc').limit(page.limit);
    return rows.map(toVersion);
  }

  /** Makes a stored version current; false when the agent has no such version. */
  async activate(tenantId: string, agentId: string, version: number, now: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const v = await trx('agent_versions').where({ tenant_id: tenantId, agent_id: agentId, version }).first('version');
      if (!v) return false;
      await trx('agents').where({ tenant_id: tenantId, id: agentId }).update({ current_version: version, updated_at: now });
      return true;
    });
  }

  async archive(tenantId: string, slug: string, now: string): Promise<boolean> {
    const n = await this.knex('agents').where({ tenant_id: tenantId, slug }).whereNull('archived_at').update({ archived_at: now, updated_at: now });
    return n > 0;
  }
}
