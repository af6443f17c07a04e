// The analytics reads of one agent over a window of whole UTC hours [fromHour, toHour): sums of
// the hourly counters (agent_stats) and distributions (agent_closes), each by its primary key,
// and the conversations started in the window still open (conversations_status_idx). The same
// statements on both databases.
import { CHANNEL_MEASURES, CHANNEL_PREFIX } from '../domain.js';
import type { Knex } from 'knex';
import { STAT_COUNTERS, type StatDelta } from '../domain.js';
import type { Database } from './db.js';

/** The counters of agent_stats, summed. */
export type CounterSums = Omit<StatDelta, 'hour' | 'version' | 'capability' | 'outcome'>;

const toSums = (r: Record<string, unknown>): CounterSums => Object.fromEntries(STAT_COUNTERS.map((k) => [k, Number(r[k] ?? 0)])) as unknown as CounterSums;

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

  constructor(db: Database) {
    this.knex = db.knex;
  }

  private counters(w: AgentWindow) {
    return this.knex('agent_stats').where({ tenant_id: w.tenantId, agent_id: w.agentId }).where('hour', '>=', w.fromHour).where('hour', '<', w.toHour);
  }

  private sums() {
    return STAT_COUNTERS.map((k) => this.knex.raw(`coalesce(sum(${k}), 0) as ${k}`));
  }

  /** The counters per capability. */
  async byCapability(w: AgentWindow): Promise<(CounterSums & { capability: string })[]> {
    const rows = (await this.counters(w)
      .select('capability', ...this.sums())
      .groupBy('capability')
      .orderBy('capability')) as Record<string, unknown>[];
    return rows.map((r) => ({ capability: String(r.capability), ...toSums(r) }));
  }

  /** The counters per agent version (0: counted before versions were). */
  async byVersion(w: AgentWindow): Promise<(CounterSums & { version: number })[]> {
    const rows = (await this.counters(w)
      .select('version', ...this.sums())
      .groupBy('version')
      .orderBy('version', 'desc')) as Record<string, unknown>[];
    return rows.map((r) => ({ version: Number(r.version), ...toSums(r) }));
  }

  /** Conversations of each channel started and closed in the window (agent_closes' `<prefix>_*` rows), by prefix and counter. */
  async channelCounts(w: AgentWindow): Promise<Record<string, Record<string, number>>> {
    const rows: { measure: string; n: unknown }[] = await this.knex('agent_closes')
      .where({ tenant_id: w.tenantId, agent_id: w.agentId })
      .where('hour', '>=', w.fromHour)
      .where('hour', '<', w.toHour)
      .whereIn(
        'measure',
        Object.values(CHANNEL_PREFIX).flatMap((p) => CHANNEL_MEASURES.map((m) => `${p}_${m}`)),
      )
      .select('measure', this.knex.raw('sum(n) as n'))
      .groupBy('measure');
    const out: Record<string, Record<string, number>> = {};
    for (const r of rows) {
      const cut = r.measure.indexOf('_');
      (out[r.measure.slice(0, cut)] ??= {})[r.measure.slice(cut + 1)] = Number(r.n);
    }
    return out;
  }

  /** Answers citing each knowledge source, and (source '') searches that found nothing (knowledge_stats). */
  async knowledge(w: AgentWindow): Promise<{ source: string; cited: number; unanswered: number }[]> {
    const rows: { source: string; cited: unknown; unanswered: unknown }[] = await this.knex('knowledge_stats')
      .where({ tenant_id: w.tenantId, agent_id: w.agentId })
      .where('hour', '>=', w.fromHour)
      .where('hour', '<', w.toHour)
      .select('source', this.knex.raw('sum(cited) as cited'), this.knex.raw('sum(unanswered) as unanswered'))
      .groupBy('source');
    return rows.map((r) => ({ source: r.source, cited: Number(r.cited), unanswered: Number(r.unanswered) }));
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
   * abandoned) in the window, from their hourly distributions (agent_closes): exact for turns,
   * and for durations the lower bound of the median's bucket (exact below a minute, 5% wide
   * above). Null when none closed.
   */
  async closedMedians(w: AgentWindow): Promise<{ all: Medians; byVersion: Map<number, Medians> }> {
    const rows: { version: unknown; measure: string; value: unknown; n: unknown }[] = await this.knex('agent_closes')
      .where({ tenant_id: w.tenantId, agent_id: w.agentId })
      .where('hour', '>=', w.fromHour)
      .where('hour', '<', w.toHour)
      .whereIn('measure', ['turns', 'seconds'])
      .select('version', 'measure', 'value', this.knex.raw('sum(n) as n'))
      .groupBy('version', 'measure', 'value');
    const medians = (of: typeof rows): Medians => {
      const dist = (measure: string) => of.filter((r) => r.measure === measure).map((r) => ({ v: Number(r.value), n: Number(r.n) }));
      return { turns: median(dist('turns')), seconds: median(dist('seconds')) };
    };
    const byVersion = new Map<number, Medians>();
    for (const v of new Set(rows.map((r) => Number(r.version)))) byVersion.set(v, medians(rows.filter((r) => Number(r.version) === v)));
    return { all: medians(rows), byVersion };
  }
}

/** Medians of closed conversations' turns and duration in seconds (null: none closed). */
export interface Medians {
  turns: number | null;
  seconds: number | null;
}

/** The median of a distribution of values with their counts (the mean of the two middle values for an even count). */
function median(dist: { v: number; n: number }[]): number | null {
  const total = dist.reduce((s, d) => s + d.n, 0);
  if (total === 0) return null;
  const sorted = [...dist].sort((a, b) => a.v - b.v);
  const at = (k: number) => {
    let seen = 0;
    for (const d of sorted) {
      seen += d.n;
      if (k < seen) return d.v;
    }
    return sorted[sorted.length - 1].v;
  };
  return total % 2 ? at((total - 1) / 2) : (at(total / 2 - 1) + at(total / 2)) / 2;
}
