// Agents' stored test conversations (table agent_test_suites, migration 018): one suite per agent,
// which every evaluation runs.
import type { Knex } from 'knex';
import type { Database } from '../db.js';

export class TestSuiteStore {
  private readonly knex: Knex;

  constructor(db: Database) {
    this.knex = db.knex;
  }

  async testSuite(tenantId: string, agentId: string): Promise<{ tests: unknown[]; updatedAt: string } | null> {
    const r = (await this.knex('agent_test_suites').where({ tenant_id: tenantId, agent_id: agentId }).first()) as
      { tests: string; updated_at: string } | undefined;
    return r ? { tests: JSON.parse(r.tests) as unknown[], updatedAt: r.updated_at } : null;
  }

  async putTestSuite(tenantId: string, agentId: string, tests: unknown[], now: string): Promise<void> {
    await this.knex('agent_test_suites')
      .insert({ tenant_id: tenantId, agent_id: agentId, tests: JSON.stringify(tests), updated_at: now })
      .onConflict(['tenant_id', 'agent_id'])
      .merge(['tests', 'updated_at']);
  }
}
