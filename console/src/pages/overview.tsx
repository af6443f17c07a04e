// An agent's analytics: the rates and medians of a window, the same per version (a split's
// candidate beside the current version, each rate with its 95% interval and the conversations
// behind it), conversations per day (or hour) by status, containment per bucket, and its top
// capabilities.
import { useMemo, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { Agent, AgentAnalytics } from '@switchboard/client';
import { ok, useLoad } from '../api';
import { useSession } from '../session';
import { ChartBox, COLORS } from '../components/chart';
import { CHANNEL_NAMES, Empty, ErrorBox, Loading, TableWrap, percent, Head } from '../components/ui';

const WINDOWS = {
  '24h': { label: 'Last 24 hours', hours: 24, interval: 'hour' },
  '7d': { label: 'Last 7 days', hours: 24 * 7, interval: 'day' },
  '30d': { label: 'Last 30 days', hours: 24 * 30, interval: 'day' },
  '90d': { label: 'Last 90 days', hours: 24 * 90, interval: 'day' },
} as const;
type WindowKey = keyof typeof WINDOWS;

function bucketLabel(start: string, interval: 'hour' | 'day'): string {
  const d = new Date(start);
  return interval === 'hour'
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

function seconds(s: number | null): string {
  if (s === null) return '—';
  return s < 90 ? `${Math.round(s)} s` : `${(s / 60).toFixed(1)} min`;
}

export function Overview({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const [win, setWin] = useState<WindowKey>('7d');
  const stats = useLoad(async () => {
    const w = WINDOWS[win];
    const to = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000);
    const from = new Date(to.getTime() - w.hours * 3_600_000);
    return ok(await client.api.getAnalytics({ params: { slug: agent.slug }, query: { from: from.toISOString(), to: to.toISOString(), interval: w.interval } }));
  }, [client, agent.slug, win]);
  return (
    <div>
      <div class="row">
        <h2>Overview</h2>
        <label class="inline">
          Window{' '}
          <select value={win} onChange={(e) => setWin(e.currentTarget.value as WindowKey)}>
            {Object.entries(WINDOWS).map(([k, w]) => (
              <option key={k} value={k}>
                {w.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {stats.error && <ErrorBox error={stats.error} retry={stats.reload} />}
      {!stats.data && !stats.error && <Loading what="analytics" />}
      {stats.data && <Figures a={stats.data} />}
      {stats.data && stats.data.versions.length > 0 && <ByVersion a={stats.data} agent={agent} />}
    </div>
  );
}

function Figures({ a }: { a: AgentAnalytics }) {
  const c = a.conversations;
  const labels = a.series.map((s) => bucketLabel(s.start, a.interval));
  const byStatus = useMemo(
    () => ({
      type: 'bar' as const,
      data: {
        labels,
        datasets: [
          { label: 'started', data: a.series.map((s) => s.started), backgroundColor: COLORS.started, stack: 'started' },
          { label: 'completed', data: a.series.map((s) => s.completed), backgroundColor: COLORS.completed, stack: 'closed' },
          { label: 'escalated', data: a.series.map((s) => s.escalated), backgroundColor: COLORS.escalated, stack: 'closed' },
          { label: 'abandoned', data: a.series.map((s) => s.abandoned), backgroundColor: COLORS.abandoned, stack: 'closed' },
        ],
      },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
    }),
    [a],
  );
  const containment = a.series.map((s) => {
    const closed = s.completed + s.escalated + s.abandoned;
    return closed ? s.completed / closed : null;
  });
  const containmentChart = useMemo(
    () => ({
      type: 'line' as const,
      data: { labels, datasets: [{ label: 'containment', data: containment, borderColor: COLORS.line, backgroundColor: COLORS.line, spanGaps: true }] },
      options: {
        scales: { y: { min: 0, max: 1, ticks: { callback: (v: number | string) => `${Math.round(Number(v) * 100)}%` } } },
        plugins: { legend: { display: false } },
      },
    }),
    [a],
  );
  const top = a.capabilities.slice(0, 8);
  const capabilityChart = useMemo(
    () => ({
      type: 'bar' as const,
      data: { labels: top.map((t) => t.name), datasets: [{ label: 'conversations', data: top.map((t) => t.conversations), backgroundColor: COLORS.started }] },
      options: { indexAxis: 'y' as const, plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
    }),
    [a],
  );
  return (
    <div>
      <dl class="tiles">
        <Tile label="Started" value={String(c.started)} />
        <Tile label="Completed" value={String(c.completed)} />
        <Tile label="Escalated" value={String(c.escalated)} />
        <Tile label="Abandoned" value={String(c.abandoned)} />
        <Tile label="Still open" value={String(c.active)} />
        <Tile label="Containment" value={percent(a.rates.containment)} />
        <Tile label="Fallback rate" value={percent(a.rates.fallback)} />
        <Tile label="Median turns" value={a.turns_per_conversation_p50 === null ? '—' : String(a.turns_per_conversation_p50)} />
        <Tile label="Median duration" value={seconds(a.duration_seconds_p50)} />
      </dl>
      {c.started === 0 && c.completed + c.escalated + c.abandoned === 0 ? (
        <Empty title="No conversations in this window">
          <p>Talk to the agent in the Playground, or pick a longer window.</p>
        </Empty>
      ) : (
        <div class="charts">
          <ChartBox
            title={`Conversations per ${a.interval} by status`}
            description={`${c.started} started, ${c.completed} completed, ${c.escalated} escalated, ${c.abandoned} abandoned`}
            config={byStatus}
            table={<SeriesTable a={a} labels={labels} />}
          />
          <ChartBox
            title={`Containment per ${a.interval}`}
            description={`containment over the window ${percent(a.rates.containment)}`}
            config={containmentChart}
            table={
              <TableWrap label="Containment figures">
                <table>
                  <Head cols={['Bucket', 'Containment']} />
                  <tbody>
                    {labels.map((l, i) => (
                      <tr key={a.series[i].start}>
                        <td>{l}</td>
                        <td>{percent(containment[i])}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            }
          />
          <ChartBox
            title="Top capabilities"
            description={top.map((t) => `${t.name} ${t.conversations}`).join(', ') || 'none'}
            config={capabilityChart}
            table={<CapabilityTable a={a} />}
          />
          <figure class="chart">
            <figcaption>By channel</figcaption>
            <ChannelTable a={a} />
          </figure>
          {(a.knowledge.sources.length > 0 || a.knowledge.unanswered > 0) && (
            <figure class="chart">
              <figcaption>Knowledge</figcaption>
              <KnowledgeTable a={a} />
            </figure>
          )}
          <figure class="chart">
            <figcaption>Outcomes</figcaption>
            {a.outcomes.length === 0 ? (
              <p class="muted">No conversation closed in this window.</p>
            ) : (
              <ul class="outcomes">
                {a.outcomes.map((o) => (
                  <li key={o.outcome}>
                    <span>{o.outcome}</span> <strong>{o.count}</strong>
                  </li>
                ))}
              </ul>
            )}
          </figure>
        </div>
      )}
    </div>
  );
}

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div class="tile">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

function SeriesTable({ a, labels }: { a: AgentAnalytics; labels: string[] }) {
  return (
    <TableWrap label="Conversations per bucket">
      <table>
        <Head cols={['Bucket', 'Started', 'Completed', 'Escalated', 'Abandoned']} />
        <tbody>
          {a.series.map((s, i) => (
            <tr key={s.start}>
              <td>{labels[i]}</td>
              <td>{s.started}</td>
              <td>{s.completed}</td>
              <td>{s.escalated}</td>
              <td>{s.abandoned}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function CapabilityTable({ a }: { a: AgentAnalytics }) {
  return <CountsTable label="Capabilities" first="Capability" rows={a.capabilities.map((c) => ({ ...c, started: c.conversations }))} />;
}

function ChannelTable({ a }: { a: AgentAnalytics }) {
  return (
    <CountsTable
      label="Conversations by channel"
      first="Channel"
      rows={a.channels
        // A messaging channel is listed once it has conversations in the window.
        .filter((c) => c.channel === 'api' || c.channel === 'web' || c.started + c.completed + c.escalated + c.abandoned > 0)
        .map((c) => ({ ...c, name: CHANNEL_NAMES[c.channel] }))}
    />
  );
}

/** The sources answers cited most, and the questions the documents did not answer. */
function KnowledgeTable({ a }: { a: AgentAnalytics }) {
  return (
    <TableWrap label="Answers by knowledge source">
      <table>
        <Head cols={['Source', 'Answers citing it']} />
        <tbody>
          {a.knowledge.sources.map((k) => (
            <tr key={k.source}>
              <td>{k.source}</td>
              <td>{k.cited}</td>
            </tr>
          ))}
          <tr>
            <td>
              <Link href="/review">Not answered</Link> (in the review inbox)
            </td>
            <td>{a.knowledge.unanswered}</td>
          </tr>
        </tbody>
      </table>
    </TableWrap>
  );
}

/** Started and closed conversations, a row per name. */
function CountsTable(p: { label: string; first: string; rows: { name: string; started: number; completed: number; escalated: number; abandoned: number }[] }) {
  return (
    <TableWrap label={p.label}>
      <table>
        <Head cols={[p.first, 'Started', 'Completed', 'Escalated', 'Abandoned']} />
        <tbody>
          {p.rows.map((c) => (
            <tr key={c.name}>
              <td>{c.name}</td>
              <td>{c.started}</td>
              <td>{c.completed}</td>
              <td>{c.escalated}</td>
              <td>{c.abandoned}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** A rate with its interval and the count it stands on: "80% (49–94%, n=10)". */
function rateWithin(rate: number | null, interval: [number, number] | null, n: number): string {
  if (rate === null || interval === null) return '—';
  return `${percent(rate)} (${percent(interval[0])}–${percent(interval[1])}, n=${n})`;
}

/** Every figure per version: where two versions' intervals overlap, the difference may be noise. */
function ByVersion({ a, agent }: { a: AgentAnalytics; agent: Agent }) {
  const role = (v: number) => (v === agent.version ? 'current' : agent.split?.version === v ? `split candidate, ${agent.split.percent}%` : '');
  return (
    <section aria-labelledby="by-version">
      <h3 id="by-version">By version</h3>
      <p class="muted small">
        Each rate with its 95% interval and the conversations behind it: where two versions&apos; intervals overlap, the difference may be noise.
      </p>
      <TableWrap label="Figures by version">
        <table>
          <Head cols={['Version', 'Started', 'Containment', 'Escalation', 'Fallback rate', 'Completion', 'Median turns', 'Median duration']} />
          <tbody>
            {a.versions.map((v) => (
              <tr key={v.version}>
                <td>
                  v{v.version}
                  {role(v.version) && <span class="muted small"> ({role(v.version)})</span>}
                </td>
                <td>{v.started}</td>
                <td>{rateWithin(v.rates.containment, v.intervals.containment, v.closed)}</td>
                <td>{rateWithin(v.rates.escalation, v.intervals.escalation, v.closed)}</td>
                <td>{rateWithin(v.rates.fallback, v.intervals.fallback, v.routed)}</td>
                <td>{rateWithin(v.rates.completion, v.intervals.completion, v.started)}</td>
                <td>{v.turns_per_conversation_p50 ?? '—'}</td>
                <td>{seconds(v.duration_seconds_p50)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </section>
  );
}
