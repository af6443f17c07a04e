// Evaluations: a version (a draft) measured beside the current one on cross-validated routing,
// the reviewed messages, the stored test conversations and a replay of recorded conversations.
// Start one, watch its progress, read the comparison and each version's confusion matrix.
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import type { Agent, Evaluation } from '@switchboard/client';
import { ok, useAction, useInterval, useLoad } from '../api';
import { useSession } from '../session';
import { Empty, ErrorBox, Field, Head, Loading, percent, TableWrap, Time } from '../components/ui';
import { useVersions, VersionSelect } from '../components/versions';

type Result = NonNullable<Evaluation['result']>;
type Side = Result['draft'];

export function Evaluations({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const [, navigate] = useLocation();
  const versions = useVersions(agent.slug);
  const [version, setVersion] = useState<number | null>(null);
  const [replay, setReplay] = useState(100);
  const { busy, error, run } = useAction();
  const chosen = version ?? versions.data?.[0]?.version ?? agent.version;
  const list = useLoad(async () => ok(await client.api.listEvaluations({ params: { slug: agent.slug }, query: { limit: 20 } })), [client, agent.slug]);
  useInterval(list.reload, list.data?.data.some((e) => e.status === 'running') ? 2000 : null);

  function start(e: Event) {
    e.preventDefault();
    void run(async () => {
      const r = ok(await client.api.startEvaluation({ params: { slug: agent.slug, version: chosen }, body: { replay, folds: 5 } }), 202);
      navigate(`/evaluations/${r.id}`);
    });
  }

  return (
    <div>
      <h2>Evaluations</h2>
      <p class="muted small">
        Measures a version beside the current one: routing cross-validated on its own examples, the messages reviewers labelled, the agent&apos;s stored test
        conversations, and a replay of its newest recorded conversations. Nothing is stored or sent but the result.
      </p>
      <form class="filters" onSubmit={start} aria-label="Start an evaluation">
        <Field label="Version">{(id) => <VersionSelect id={id} agent={agent} versions={versions.data} value={chosen} onChange={setVersion} />}</Field>
        <Field label="Replay conversations">
          {(id) => <input id={id} type="number" min={0} max={500} value={replay} onInput={(e) => setReplay(Number(e.currentTarget.value))} />}
        </Field>
        <div class="row">
          <button type="submit" class="primary" disabled={busy || !versions.data}>
            Evaluate
          </button>
        </div>
      </form>
      {error && <ErrorBox error={error} />}
      <h3>Evaluations kept</h3>
      {list.error && <ErrorBox error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="evaluations" />}
      {list.data && list.data.data.length === 0 && (
        <Empty title="No evaluation yet">
          <p>Evaluate a draft above; the server keeps each result thirty days.</p>
        </Empty>
      )}
      {list.data && list.data.data.length > 0 && (
        <TableWrap label="Evaluations">
          <table>
            <Head cols={['Started', 'Version', 'Beside', 'Status']} />
            <tbody>
              {list.data.data.map((e) => (
                <tr key={e.id}>
                  <td>
                    <Link href={`/evaluations/${e.id}`}>
                      <Time iso={e.created_at} />
                    </Link>
                  </td>
                  <td>v{e.version}</td>
                  <td>v{e.baseline}</td>
                  <td>{e.status === 'running' ? `running (${e.progress.done} of ${e.progress.total})` : e.status}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </div>
  );
}

export function EvaluationView({ agent, id }: { agent: Agent; id: string }) {
  const { client } = useSession();
  const got = useLoad(async () => ok(await client.api.getEvaluation({ params: { slug: agent.slug, id } })), [client, agent.slug, id]);
  useInterval(got.reload, got.data?.status === 'running' || (!got.data && !got.error) ? 1000 : null);
  if (got.error && !got.data) return <ErrorBox error={got.error} retry={got.reload} />;
  if (!got.data) return <Loading what="the evaluation" />;
  const e = got.data;
  const r = e.result;
  return (
    <div>
      <p>
        <Link href="/evaluations">← Evaluations</Link>
      </p>
      <h2>
        v{e.version} beside v{e.baseline}
      </h2>
      <p role="status">
        {e.status === 'running' ? `Running: ${e.stage.replace('_', ' ')}` : e.status === 'done' ? 'Done' : 'Failed'}, {e.progress.done} of {e.progress.total}{' '}
        steps.
      </p>
      <progress max={Math.max(e.progress.total, 1)} value={e.progress.done} aria-label="Evaluation progress" />
      {e.error && <p class="bad">{e.error}</p>}
      {r && <Comparison e={e} r={r} />}
    </div>
  );
}

function Comparison({ e, r }: { e: Evaluation; r: Result }) {
  const [a, b] = [`v${e.version}`, `v${e.baseline}`];
  const row = (label: string, f: (s: Side) => string) => (
    <tr>
      <th scope="row">{label}</th>
      <td>{f(r.draft)}</td>
      <td>{f(r.current)}</td>
    </tr>
  );
  const names = [...new Set([...r.draft.cross_validation.capabilities, ...r.current.cross_validation.capabilities].map((c) => c.name))].sort();
  const cap = (s: Side, n: string) => s.cross_validation.capabilities.find((c) => c.name === n);
  return (
    <>
      <TableWrap label="Side by side">
        <table>
          <Head cols={['', `${a} (evaluated)`, `${b} (current)`]} />
          <tbody>
            {row('Cross-validated accuracy', (s) => `${percent(s.cross_validation.accuracy)} of ${s.cross_validation.total}`)}
            {row('Reviewed messages routed as said', (s) => `${s.labelled.as_reviewed} of ${s.labelled.total}`)}
            {row('Test conversations passed', (s) => `${s.tests.passed} of ${s.tests.total}`)}
          </tbody>
        </table>
      </TableWrap>
      <p>
        Reviewed messages: <strong>{r.labelled.fixed}</strong> now routed as reviewers said,{' '}
        <strong class={r.labelled.broken ? 'bad' : undefined}>{r.labelled.broken}</strong> no longer.
      </p>
      {r.labelled.messages.length > 0 && (
        <TableWrap label="Reviewed messages">
          <table>
            <Head cols={['Message', 'Reviewers said', a, b]} />
            <tbody>
              {r.labelled.messages.map((m, n) => (
                <tr key={n}>
                  <td>“{m.message}”</td>
                  <td>{m.expected}</td>
                  <td class={m.draft === m.expected ? 'good' : 'bad'}>{m.draft}</td>
                  <td class={m.current === m.expected ? 'good' : 'bad'}>{m.current}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <TableWrap label="Per capability">
        <table>
          <Head cols={['Capability', `Precision ${a}`, `Precision ${b}`, `Recall ${a}`, `Recall ${b}`]} />
          <tbody>
            {names.map((n) => (
              <tr key={n}>
                <th scope="row">{n}</th>
                <td>{percent(cap(r.draft, n)?.precision)}</td>
                <td>{percent(cap(r.current, n)?.precision)}</td>
                <td>{percent(cap(r.draft, n)?.recall)}</td>
                <td>{percent(cap(r.current, n)?.recall)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <div class="matrices">
        <Matrix title={`Confusion matrix, ${a}`} m={r.draft.cross_validation.matrix} />
        <Matrix title={`Confusion matrix, ${b}`} m={r.current.cross_validation.matrix} />
      </div>
      {r.draft.tests.failed.length > 0 && (
        <>
          <h3>Failing tests on {a}</h3>
          <ul>
            {r.draft.tests.failed.map((f) => (
              <li key={f.name}>
                <strong>{f.name}</strong>, step {f.step}: {f.why}
              </li>
            ))}
          </ul>
        </>
      )}
      {r.replay && (
        <p>
          Replay of {r.replay.conversations} recorded conversations: {r.replay.identical} identical, {r.replay.changed} changed (capability{' '}
          {r.replay.capability}, outcome {r.replay.outcome}, reply {r.replay.reply}, action {r.replay.action}), {r.replay.errors} errors.{' '}
          <Link href={`/replays/${r.replay.replay_id}`}>Each difference</Link>
        </p>
      )}
    </>
  );
}

/** Rows: what the example is; columns: where it was routed. The diagonal is right; the rest are confusions. */
function Matrix({ title, m }: { title: string; m: Side['cross_validation']['matrix'] }) {
  return (
    <TableWrap label={title}>
      <table class="matrix">
        <caption>{title}: rows are the capability an example belongs to, columns where it was routed</caption>
        <thead>
          <tr>
            <th scope="col">example of ↓ / routed to →</th>
            {m.labels.map((l) => (
              <th key={l} scope="col">
                {l}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {m.labels.map((l, i) => (
            <tr key={l}>
              <th scope="row">{l}</th>
              {m.counts[i].map((n, j) => (
                <td key={j} class={i === j ? 'diag' : n > 0 ? 'confused' : 'zero'}>
                  {n}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
