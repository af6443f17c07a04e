// Agent definitions: validation, versioning, and the cache of compiled versions (templates
// parsed, router trained) that every converse call reads.
import { LRUCache } from 'lru-cache';
import { AgentDefinition, type Agent } from '@switchboard/contract';
import { capabilityId, compileAgent, validateDefinition, type CompiledAgent } from '../engine/compile.js';
import { DefinitionError, NotFoundError } from '../errors.js';
import { canonicalJson, sha256 } from '../lib/canonical.js';
import { iso, type Clock } from '../lib/clock.js';
import type { AgentRow, AgentStore } from '../store/agent-store.js';

export class AgentService {
  /** Compiled versions are immutable, so a cache entry never goes stale; only memory bounds it. */
  private readonly compiled = new LRUCache<string, Promise<CompiledAgent>>({ max: 500 });

  constructor(
    private readonly store: AgentStore,
    private readonly clock: Clock,
  ) {}

  async put(tenantId: string, slug: string, definition: AgentDefinition): Promise<{ agent: Agent; changed: boolean }> {
    const problems = validateDefinition(definition);
    if (problems.length) throw new DefinitionError(problems);
    const digest = sha256(canonicalJson(definition));
    const { agent, changed } = await this.store.put(tenantId, slug, definition, digest, iso(this.clock.now()));
    // Train now, so the first message to this version does not wait for it.
    await this.compiledVersion(tenantId, agent.id, agent.currentVersion);
    return { agent: this.toApi(agent, definition), changed };
  }

  async get(tenantId: string, slug: string): Promise<Agent> {
    const row = await this.active(tenantId, slug);
    const v = await this.store.version(tenantId, row.id, row.currentVersion);
    return this.toApi(row, v!.definition as AgentDefinition);
  }

  async list(tenantId: string): Promise<Agent[]> {
    const rows = await this.store.list(tenantId);
    return Promise.all(
      rows.map(async (r) => this.toApi(r, (await this.store.version(tenantId, r.id, r.currentVersion))!.definition as AgentDefinition)),
    );
  }

  async archive(tenantId: string, slug: string): Promise<void> {
    if (!(await this.store.archive(tenantId, slug, iso(this.clock.now())))) {
      throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    }
  }

  /** The live (not archived) agent with this slug, or 404. */
  async active(tenantId: string, slug: string): Promise<AgentRow> {
    const row = await this.store.bySlug(tenantId, slug);
    if (!row || row.archivedAt) throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    return row;
  }

  /** The agent with this slug, archived or not: its conversations stay readable. */
  async any(tenantId: string, slug: string): Promise<AgentRow> {
    const row = await this.store.bySlug(tenantId, slug);
    if (!row) throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    return row;
  }

  /** A compiled version, built once per process and cached. */
  compiledVersion(tenantId: string, agentId: string, version: number): Promise<CompiledAgent> {
    const key = `${tenantId}:${agentId}:${version}`;
    let p = this.compiled.get(key);
    if (!p) {
      p = this.store.version(tenantId, agentId, version).then((v) => {
        if (!v) throw new NotFoundError('agent_not_found', 'Agent version not found');
        return compileAgent(agentId, version, AgentDefinition.parse(v.definition));
      });
      p.catch(() => this.compiled.delete(key));
      this.compiled.set(key, p);
    }
    return p;
  }

  private toApi(row: AgentRow, def: AgentDefinition): Agent {
    return {
      id: row.id,
      slug: row.slug,
      name: def.name,
      description: def.description ?? null,
      version: row.currentVersion,
      capabilities: def.capabilities.map((c) => ({ id: capabilityId(row.id, c.name), name: c.name, description: c.description ?? null })),
      definition: def,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
    };
  }
}
