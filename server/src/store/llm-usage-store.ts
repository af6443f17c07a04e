// Model tokens spent per tenant and UTC day, shared by every process on the database.
import type { Knex } from 'knex';
import type { Database } from './db.js';

export class LlmUsageStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  async spent(tenantId: string, day: string): Promise<number> {
    const row: { tokens: number | string } | undefined = await this.knex('llm_usage').where({ tenant_id: tenantId, day }).first('tokens');
    return row ? Number(row.tokens) : 0;
  }

  /** Adds one call's tokens (a single upsert: concurrent calls from any process all count); answers the day's total. */
  async add(tenantId: string, day: string, tokens: number): Promise<number> {
    const rows: { tokens: number | string }[] = await this.knex('llm_usage')
      .insert({ tenant_id: tenantId, day, tokens, calls: 1 })
      .onConflict(['tenant_id', 'day'])
      .merge({ tokens: this.knex.raw('llm_usage.tokens + excluded.tokens'), calls: this.knex.raw('llm_usage.calls + 1') })
      .returning('tokens');
    return Number(rows.at(0)?.tokens ?? tokens);
  }
}
