// Agents and their immutable versions. Every query filters by tenant_id.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation } from './db-errors.js';
import type { Database } from './db.js';
import { present, type AgentTableRow } from './rows.js';

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

  async list(tenantId: string): Promise<AgentRow[]> {
    const rows = await this.knex('agents').where({ tenant_id: tenantId }).whereNull('archived_at').orderBy('slug');
    return rows.map(toAgent);
  }

  async version(tenantId: string, agentId: string, version: number): Promise<AgentVersionRow | null> {
    const r = await this.knex('agent_versions').where({ tenant_id: tenantId, agent_id: agentId, version }).first();
    return r ? { agentId: r.agent_id, version: Number(r.version), digest: r.digest, definition: JSON.parse(r.definition), createdAt: r.created_at } : null;
  }

  /**
   * Stores a definition: a new agent at version 1, a new version when the digest differs from
   * the current one, nothing new when it is the same. Un-archives an archived agent.
   */
  async put(tenantId: string, slug: string, definition: unknown, digest: string, now: string): Promise<{ agent: AgentRow; changed: boolean }> {
    // Concurrent first PUTs of one slug race to insert it: the losers find it on a second try.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.putOnce(tenantId, slug, definition, digest, now);
      } catch (err) {
        if (attempt >= 3 || !isUniqueViolation(err)) throw err;
      }
    }
  }

  private async putOnce(tenantId: string, slug: string, definition: unknown, digest: string, now: string): Promise<{ agent: AgentRow; changed: boolean }> {
    return this.knex.transaction(async (trx) => {
      const q = trx('agents').where({ tenant_id: tenantId, slug }).first();
      const existing = await this.adapter.forUpdate(q);
      if (!existing) {
        const id = randomUUID();
        await trx('agents').insert({ id, tenant_id: tenantId, slug, current_version: 1, archived_at: null, created_at: now, updated_at: now });
        await trx('agent_versions').insert({ agent_id: id, version: 1, tenant_id: tenantId, digest, definition: JSON.stringify(definition), created_at: now });
        return { agent: toAgent(present(await trx('agents').where({ id }).first(), 'agent')), changed: true };
      }
      const current = present(await trx('agent_versions').where({ agent_id: existing.id, version: existing.current_version }).first(), 'agent version');
      if (current.digest === digest) {
        if (existing.archived_at) {
          await trx('agents').where({ id: existing.id }).update({ archived_at: null, updated_at: now });
          return { agent: toAgent(present(await trx('agents').where({ id: existing.id }).first(), 'agent')), changed: true };
        }
        return { agent: toAgent(existing), changed: false };
      }
      const version = Number(existing.current_version) + 1;
      await trx('agent_versions').insert({
        agent_id: existing.id,
        version,
        tenant_id: tenantId,
        digest,
        definition: JSON.stringify(definition),
        created_at: now,
      });
      await trx('agents').where({ id: existing.id }).update({ current_version: version, archived_at: null, updated_at: now });
      return { agent: toAgent(present(await trx('agents').where({ id: existing.id }).first(), 'agent')), changed: true };
    });
  }

  async archive(tenantId: string, slug: string, now: string): Promise<boolean> {
    const n = await this.knex('agents').where({ tenant_id: tenantId, slug }).whereNull('archived_at').update({ archived_at: now, updated_at: now });
    return n > 0;
  }
}
