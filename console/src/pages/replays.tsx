// Replays: recorded conversations fed to a version with their actions answered from their
// recordings. Start one with the list's filters, watch its progress, read the first difference of
// each changed conversation. The replays the server keeps (seven days) are listed, newest first.
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import type { Agent, ConversationStatus, Replay } from '@switchboard/client';
import { ok, useAction, useInterval, useLoad } from '../api';
import { useSession } from '../session';
import { AnySelect, Empty, ErrorBox, Field, Head, Loading, TableWrap, Time } from '../components/ui';
import { useVersions, VersionSelect } from '../components/versions';
import { STATUSES } from './conversations';

export function Replays({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const [, navigate] = useLocation();
  const versions = useVersions(agent.slug);
  const [version, setVersion] = useState<number | null>(null);
  const [status, setStatus] = useState('');
  const [capability, setCapability] = useState('');
  const [limit, setLimit] = useState(100);
  const { busy, error, run } = useAction();
  const newest = versions.data?.[0]?.version ?? agent.version;
  const chosen = version ?? newest;

  function start(e: Event) {
    e.preventDefault();
    void run(async () => {
      const r = ok(
        await client.api.startReplay({
          params: { slug: agent.slug },
          body: { version: chosen, limit, ...(status ? { status: status as ConversationStatus } : {}), ...(capability ? { capability } : {}) },
        }),
        202,
      );
      navigate(`/replays/${r.id}`);
    });
  }

  return (
    <div>
      <h2>Replays</h2>
      <p class="muted small">
        Feeds recorded conversations to a version in memory: actions are answered from their recordings, nothing is stored or sent. A difference shows where the
        version would have answered otherwise.
      </p>
      <form class="filters" onSubmit={start} aria-label="Start a replay">
        <Field label="Version">{(id) => <VersionSelect id={id} agent={agent} versions={versions.data} value={chosen} onChange={setVersion} />}</Field>
        <Field label="Conversations with status">{(id) => <AnySelect id={id} value={status} options={STATUSES} onChange={setStatus} />}</Field>
        <Field label="Capability">
          {(id) => <AnySelect id={id} value={capability} options={agent.capabilities.map((c) => c.name)} onChange={setCapability} />}
        </Field>
        <Field label="At most">
          {(id) => <input id={id} type="number" min={1} max={500} value={limit} onInput={(e) => setLimit(Number(e.currentTarget.value))} />}
        </Field>
        <div class="row">
          <button type="submit" class="primary" disabled={busy || !versions.data}>
            Start the replay
          </button>
        </div>
      </form>
      {error && <ErrorBox error={error} />}
      <h3>Replays kept</h3>
      <ReplayList agent={agent} />
    </div>
  );
}

/** The agent's replays, newest first, page by page; refreshed while one of them runs. */
function ReplayList({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const [pages, setPages] = useState<string[]>([]);
  const cursor = pages.at(-1);
  const list = useLoad(
    async () => ok(await client.api.listReplays({ params: { slug: agent.slug }, query: { limit: 20, ...(cursor ? { cursor } : {}) } })),
    [client, agent.slug, cursor],
  );
  useInterval(list.reload, list.data?.data.some((r) => r.status === 'running') ? 2000 : null);
  if (list.error) return <ErrorBox error={list.error} retry={list.reload} />;
  if (!list.data) return <Loading what="replays" />;
  if (list.data.data.length === 0 && pages.length === 0) {
    return (
      <Empty title="No replay yet">
        <p>Start one above: it feeds recorded conversations to the version you pick. The server keeps each replay seven days.</p>
      </Empty>
    );
  }
  const next = list.data.next_cursor;
  return (
    <div>
      <TableWrap label="Replays">
        <table>
          <Head cols={['Started', 'Version', 'Status', 'Conversations', 'Identical', 'Changed', 'Errors']} />
          <tbody>
            {list.data.data.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link href={`/replays/${r.id}`}>
                    <Time iso={r.created_at} />
                  </Link>
                </td>
                <td>v{r.version}</td>
                <td>{r.status === 'running' ? `running (${r.progress.done} of ${r.progress.total})` : r.status}</td>
                <td>{r.summary.conversations}</td>
                <td>{r.summary.identical}</td>
                <td>{r.summary.changed}</td>
                <td>{r.summary.errors}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <div class="row">
        <button type="button" disabled={pages.length === 0} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!next} onClick={() => next && setPages([...pages, next])}>
          Older
        </button>
      </div>
    </div>
  );
}

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

export function ReplayView({ agent, id }: { agent: Agent; id: string }) {
  const { client } = useSession();
  const replay = useLoad(async () => ok(await client.api.getReplay({ params: { slug: agent.slug, id } })), [client, agent.slug, id]);
  useInterval(replay.reload, replay.data?.status === 'running' || (!replay.data && !replay.error) ? 1000 : null);
  if (replay.error && !replay.data) return <ErrorBox error={replay.error} retry={replay.reload} />;
  if (!replay.data) return <Loading what="the replay" />;
  const r: Replay = replay.data;
  const differing = r.results.filter((x) => x.verdict !== 'identical');
  return (
    <div>
      <p>
        <Link href="/replays">← Replays</Link>
      </p>
      <h2>Replay against v{r.version}</h2>
      <p role="status">
        {r.status === 'running' ? 'Running' : r.status === 'done' ? 'Done' : 'Failed'}: {r.progress.done} of {r.progress.total} conversations.
      </p>
      <progress max={Math.max(r.progress.total, 1)} value={r.progress.done} aria-label="Replay progress" />
      {r.error && <p class="bad">{r.error}</p>}
      <dl class="tiles">
        <div class="tile">
          <dt>Conversations</dt>
          <dd>{r.summary.conversations}</dd>
        </div>
        <div class="tile">
          <dt>Identical</dt>
          <dd>{r.summary.identical}</dd>
        </div>
        <div class="tile">
          <dt>Changed</dt>
          <dd>{r.summary.changed}</dd>
        </div>
        <div class="tile">
          <dt>Errors</dt>
          <dd>{r.summary.errors}</dd>
        </div>
      </dl>
      {r.status !== 'running' && r.results.length === 0 && (
        <Empty title="No recorded conversation matched">
          <p>Widen the filters, or let the agent have some conversations first.</p>
        </Empty>
      )}
      {differing.length > 0 && (
        <TableWrap label="Differences">
          <table>
            <Head cols={['Conversation', 'Verdict', 'Turn', 'User said', 'Field', 'Recorded', 'Replayed']} />
            <tbody>
              {differing.map((x) => (
                <tr key={x.conversation_id}>
                  <td>
                    <Link href={`/conversations/${x.conversation_id}`} class="mono">
                      {x.conversation_id.slice(0, 8)}
                    </Link>
                  </td>
                  <td>{x.verdict}</td>
                  <td>{x.first_difference?.turn_index ?? '—'}</td>
                  <td>{x.first_difference?.message ?? ''}</td>
                  <td>
                    {x.first_difference?.field ?? x.error ?? '—'}
                    {x.first_difference?.changes
                      ?.filter((c) => c.field !== x.first_difference?.field)
                      .map((c) => (
                        <div key={c.field} class="muted small">
                          also {c.field}: {show(c.recorded)} → {show(c.replayed)}
                        </div>
                      ))}
                  </td>
                  <td class="del">{x.first_difference ? show(x.first_difference.recorded) : ''}</td>
                  <td class="ins">{x.first_difference ? show(x.first_difference.replayed) : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {r.status === 'done' && r.results.length > 0 && differing.length === 0 && <p class="good">Every conversation came out the same on v{r.version}.</p>}
      <p class="muted small">
        Started <Time iso={r.created_at} />; kept until <Time iso={r.expires_at} />.
      </p>
    </div>
  );
}
