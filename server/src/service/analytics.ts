// The analytics of one agent over a window (contract/src/analytics.ts): the window is resolved
// to whole UTC hours, the counters summed in the database (store/analytics-store.ts), and the
// rates and the zero-filled series derived here.
import type { AgentAnalytics } from '@switchboard/contract';
import { CHANNEL_PREFIX, STAT_COUNTERS, type CHANNEL_MEASURES, type StatCounter } from '../domain.js';

type Channel = keyof typeof CHANNEL_PREFIX;
type Measure = (typeof CHANNEL_MEASURES)[number];
const CHANNELS = Object.keys(CHANNEL_PREFIX) as Channel[];

/** One channel's row of `channels`. */
const countsOf = (channel: 'api' | Channel, of: (k: Measure) => number) => ({
  channel,
  started: of('started'),
  completed: of('completed'),
  escalated: of('escalated'),
  abandoned: of('abandoned'),
});
import { InputError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { AnalyticsStore } from '../store/analytics-store.js';
import type { AgentService } from './agents/agent-service.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The longest window: a year by day, a month by hour (744 buckets). */
const MAX_WINDOW = { day: 366 * DAY, hour: 31 * DAY };

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;
const iso = (t: number) => new Date(t).toISOString();
const rate = (n: number, of: number) => (of > 0 ? Math.round((n / of) * 10_000) / 10_000 : null);

/**
 * The 95% Wilson score interval of a rate of `n` in `of` (null with none): unlike n/of ± 1.96σ it
 * stays inside [0, 1] and is honest for small counts, which is what a split's early figures are.
 * A few lines of arithmetic, not worth a statistics library.
 */
export function wilson(n: number, of: number): [number, number] | null {
  if (of <= 0) return null;
  const z = 1.959964;
  const p = n / of;
  const denom = 1 + (z * z) / of;
  const centre = (p + (z * z) / (2 * of)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / of + (z * z) / (4 * of * of))) / denom;
  const r = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 10_000) / 10_000;
  return [r(centre - half), r(centre + half)];
}

export class AnalyticsService {
  constructor(
    private readonly agents: AgentService,
    private readonly store: AnalyticsStore,
    private readonly clock: Clock,
  ) {}

  async get(tenantId: string, slug: string, q: { from?: string; to?: string; interval: 'hour' | 'day' }): Promise<AgentAnalytics> {
    const agent = await this.agents.any(tenantId, slug);
    // The current hour is in the default window: it ends at the start of the next one.
    const to = q.to ? ceilTo(Date.parse(q.to), HOUR) : floorTo(this.clock.now().getTime(), HOUR) + HOUR;
    const from = q.from ? floorTo(Date.parse(q.from), HOUR) : to - 7 * DAY;
    if (from >= to) throw new InputError('The window is empty', [{ path: 'from', message: 'must be before `to`' }]);
    if (to - from > MAX_WINDOW[q.interval]) {
      throw new InputError('The window is too long', [
        { path: 'from', message: `a window by ${q.interval} spans at most ${MAX_WINDOW[q.interval] / DAY} days` },
      ]);
    }
    const window = { tenantId, agentId: agent.id, fromHour: iso(from).slice(0, 13), toHour: iso(to).slice(0, 13) };
    const span = { tenantId, agentId: agent.id, from: iso(from), to: iso(to) };
    const [capabilities, outcomes, series, active, medians, byChannel, versions, knowledge] = await Promise.all([
      this.store.byCapability(window),
      this.store.byOutcome(window),
      this.store.series(window, q.interval === 'day' ? 10 : 13),
      this.store.stillOpen(span),
      this.store.closedMedians(window),
      this.store.channelCounts(window),
      this.store.byVersion(window),
      this.store.knowledge(window),
    ]);

    const counts: Partial<Record<string, Partial<Record<string, number>>>> = byChannel;
    const counted = (ch: Channel, k: Measure) => counts[CHANNEL_PREFIX[ch]]?.[k] ?? 0;
    const total = Object.fromEntries(STAT_COUNTERS.map((k) => [k, capabilities.reduce((n, c) => n + c[k], 0)])) as Record<StatCounter, number>;
    const closed = total.completed + total.escalated + total.abandoned;

    const unit = q.interval === 'day' ? DAY : HOUR;
    const found = new Map(series.map((s) => [s.bucket, s]));
    const buckets: AgentAnalytics['series'] = [];
    for (let t = floorTo(from, unit); t < to; t += unit) {
      const s = found.get(iso(t).slice(0, q.interval === 'day' ? 10 : 13));
      buckets.push({ start: iso(t), started: s?.started ?? 0, completed: s?.completed ?? 0, escalated: s?.escalated ?? 0, abandoned: s?.abandoned ?? 0 });
    }

    return {
      from: iso(from),
      to: iso(to),
      interval: q.interval,
      conversations: { started: total.started, completed: total.completed, escalated: total.escalated, abandoned: total.abandoned, active },
      rates: {
        containment: rate(total.completed, closed),
        escalation: rate(total.escalated, closed),
        abandonment: rate(total.abandoned, closed),
        fallback: rate(total.fallback, total.routed),
      },
      turns_per_conversation_p50: medians.all.turns,
      duration_seconds_p50: medians.all.seconds,
      capabilities: capabilities
        .map((c) => ({ name: c.capability, conversations: c.started, completed: c.completed, escalated: c.escalated, abandoned: c.abandoned }))
        .filter((c) => c.conversations + c.completed + c.escalated + c.abandoned > 0)
        .sort((a, b) => b.conversations - a.conversations || a.name.localeCompare(b.name)),
      outcomes: outcomes.sort((a, b) => b.count - a.count || a.outcome.localeCompare(b.outcome)),
      series: buckets,
      // Each channel's counts as recorded; the API's are the totals less all of theirs.
      channels: [
        countsOf('api', (k) => Math.max(0, total[k] - CHANNELS.reduce((n, ch) => n + counted(ch, k), 0))),
        ...CHANNELS.map((ch) => countsOf(ch, (k) => counted(ch, k))),
      ],
      versions: versions
        .filter((v) => STAT_COUNTERS.some((k) => v[k] > 0))
        .map((v) => {
          const vClosed = v.completed + v.escalated + v.abandoned;
          const m = medians.byVersion.get(v.version);
          return {
            version: v.version,
            started: v.started,
            completed: v.completed,
            escalated: v.escalated,
            abandoned: v.abandoned,
            closed: vClosed,
            routed: v.routed,
            fallback: v.fallback,
            rates: {
              containment: rate(v.completed, vClosed),
              escalation: rate(v.escalated, vClosed),
              fallback: rate(v.fallback, v.routed),
              completion: rate(v.completed, v.started),
            },
            intervals: {
              containment: wilson(v.completed, vClosed),
              escalation: wilson(v.escalated, vClosed),
              fallback: wilson(v.fallback, v.routed),
              completion: wilson(Math.min(v.completed, v.started), v.started),
            },
            turns_per_conversation_p50: m?.turns ?? null,
            duration_seconds_p50: m?.seconds ?? null,
          };
        }),
      knowledge: {
        sources: knowledge
          .filter((k) => k.source !== '' && k.cited > 0)
          .map((k) => ({ source: k.source, cited: k.cited }))
          .sort((a, b) => b.cited - a.cited || a.source.localeCompare(b.source)),
        unanswered: knowledge.reduce((n, k) => n + k.unanswered, 0),
      },
    };
  }
}
