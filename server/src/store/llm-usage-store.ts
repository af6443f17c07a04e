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

  /**
   * Reserves a call's estimated tokens before it is made, in one conditional upsert, so calls
   * under way in any process count against `cap` (0: no cap) before they are answered. Answers
   * the day's total with the reservation, or null when it does not fit (nothing is written).
   */
  async reserve(tenantId: string, day: string, tokens: number, cap: number): Promise<number | null> {
    if (cap > 0 && tokens > cap) return null;
    const result: unknown = await this.knex.raw(
      `insert into llm_usage (tenant_id, day, tokens, calls) values (?, ?, ?, 1)
       on conflict (tenant_id, day) do update set tokens = llm_usage.tokens + excluded.tokens, calls = llm_usage.calls + 1
       ${cap > 0 ? 'where llm_usage.tokens + excluded.tokens <= ?' : ''}
       returning tokens`,
      cap > 0 ? [tenantId, day, tokens, cap] : [tenantId, day, tokens],
    );
    const rows = (Array.isArray(result) ? result : (result as { rows: { tokens: number | string }[] }).rows) as { tokens: number | string }[];
    return rows.length ? Number(rows[0].tokens) : null;
  }

  /**
   * Replaces a reservation by what the call really spent (`delta` = spent − reserved; negative
   * gives back); answers the day's total, which never falls below 0 (a delta that is not a safe
   * integer changes nothing).
   */
  async settle(tenantId: string, day: string, delta: number): Promise<number> {
    const d = Number.isSafeInteger(delta) ? delta : 0;
    const rows: { tokens: number | string }[] = await this.knex('llm_usage')
      .where({ tenant_id: tenantId, day })
      .update({ tokens: this.knex.raw('case when tokens + ? < 0 then 0 else tokens + ? end', [d, d]) })
      .returning('tokens');
    return Number(rows.at(0)?.tokens ?? 0);
  }
}
