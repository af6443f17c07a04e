// The analytics reads of one agent over a window of whole UTC hours [fromHour, toHour): sums of
// the hourly counters (agent_stats, primary key order), the conversations started in the window
// still open (conversations_status_idx), and the medians of conversations closed in the window
// (conversations_completed_idx). The same statements on both databases.
import type { Knex } from 'knex';
import type { Database } from './db.js';
import type { DialectAdapter } from './dialects.js';

export interface CounterSums {
  started: number;
  completed: number;
  escalated: number;
  abandoned: number;
  routed: number;
  fallback: number;
}

const SUMS = ['started', 'completed', 'escalated', 'abandoned', 'routed', 'fallback'] as const;

const toSums = (r: Record<string, unknown>): CounterSums => Object.fromEntries(SUMS.map((k) => [k, Number(r[k] ?? 0)])) as unknown as CounterSums;

export interface AgentWindow {
  tenantId: string;
  agentId: string;
  /** 'YYYY-MM-DDTHH', inclusive. */
  fromHour: string;
  /** 'YYYY-MM-DDTHH', exclusive. */
  toHour: string;
}

export class AnalyticsStore {
  private readonly knex: Knex;
  private readonly adapter: DialectAdapter;

  constructor(db: Database) {
    this.knex = db.knex;
    this.adapter = db.adapter;
  }

  private counters(w: AgentWindow) {
    return this.knex('agent_stats').where({ tenant_id: w.tenantId, agent_id: w.agentId }).where('hour', '>=', w.fromHour).where('hour', '<', w.toHour);
  }

  private sums() {
    return SUMS.map((k) => this.knex.raw(`coalesce(sum(${k}), 0) as ${k}`));
  }

  /** The counters per capability. */
  async byCapability(w: AgentWindow): Promise<(CounterSums & { capability: string })[]> {
    const rows = (await this.counters(w)
      .select('capability', ...this.sums())
      .groupBy('capability')
      .orderBy('capability')) as Record<string, unknown>[];
    return rows.map((r) => ({ capability: String(r.capability), ...toSums(r) }));
  }

  /** Closes per outcome. */
  async byOutcome(w: AgentWindow): Promise<{ outcome: string; count: number }[]> {
    const rows = (await this.counters(w)
      .whereNot('outcome', '')
      .select('outcome', this.knex.raw('sum(completed + escalated + abandoned) as n'))
      .groupBy('outcome')
      .orderBy('outcome')) as { outcome: string; n: unknown }[];
    return rows.map((r) => ({ outcome: r.outcome, count: Number(r.n) })).filter((r) => r.count > 0);
  }

  /** The counters per bucket: `chars` of the hour ('YYYY-MM-DDTHH' 13 for hours, 10 for days). */
  async series(w: AgentWindow, chars: 10 | 13): Promise<(CounterSums & { bucket: string })[]> {
    const bucket = `substr(hour, 1, ${chars})`;
    const rows = (await this.counters(w)
      .select(this.knex.raw(`${bucket} as bucket`), ...this.sums())
      .groupByRaw(bucket)
      .orderBy('bucket')) as Record<string, unknown>[];
    return rows.map((r) => ({ bucket: String(r.bucket), ...toSums(r) }));
  }

  /** Conversations started in [from, to) that are still open with the agent (active or paused). */
  async stillOpen(w: { tenantId: string; agentId: string; from: string; to: string }): Promise<number> {
    const row = (await this.knex('conversations')
      .where({ tenant_id: w.tenantId, agent_id: w.agentId })
      .whereIn('status', ['active', 'paused'])
      .where('created_at', '>=', w.from)
      .where('created_at', '<', w.to)
      .count({ n: '*' })
      .first()) as { n: unknown } | undefined;
    return Number(row?.n ?? 0);
  }

  /**
   * The medians of turns and of duration in seconds among conversations closed (completed or
   * abandoned) in [from, to); null when there are none. The middle row(s) by offset after one
   * count, as both databases run it (SQLite has no percentile function).
   */
  async closedMedians(w: { tenantId: string; agentId: string; from: string; to: string }): Promise<{ turns: number | null; seconds: number | null }> {
    const closed = () =>
      this.knex('conversations').where({ tenant_id: w.tenantId, agent_id: w.agentId }).where('completed_at', '>=', w.from).where('completed_at', '<', w.to);
    const count = Number(((await closed().count({ n: '*' }).first()) as { n: unknown } | undefined)?.n ?? 0);
    if (count === 0) return { turns: null, seconds: null };
    const middle = async (expr: string) => {
      const rows = (await closed()
        .select(this.knex.raw(`${expr} as v`))
        .orderByRaw(expr)
        .offset(Math.floor((count - 1) / 2))
        .limit(count % 2 ? 1 : 2)) as unknown as { v: unknown }[];
      return rows.reduce((s, r) => s + Number(r.v), 0) / rows.length;
    };
    const [turns, seconds] = await Promise.all([middle('turn_count'), middle(this.adapter.secondsBetween('created_at', 'completed_at'))]);
    return { turns, seconds: Math.round(seconds * 1000) / 1000 };
  }
}
