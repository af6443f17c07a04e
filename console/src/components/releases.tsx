// The release gates and the release record as the versions page shows them (docs/releases.md):
// each gate with its figure, a refused release with a way to force it with a written reason,
// the traffic split with its controls, and the record with its hash chain checked on demand.
import { useState } from 'preact/hooks';
import type { Agent, Release, ReleaseGate } from '@switchboard/client';
import { ApiError, ok, useAction, useLoad } from '../api';
import { needs, useCan, useSession } from '../session';
import { ErrorBox, Field, Head, Loading, TableWrap, Time } from './ui';
import type { useVersions } from './versions';

export function Gates({ gates, caption }: { gates: ReleaseGate[]; caption: string }) {
  if (gates.length === 0) return <p class="muted small">No gates: the agent has no release policy.</p>;
  return (
    <TableWrap label={caption}>
      <table class="gates">
        <Head cols={['Gate', 'Result', 'Figure']} />
        <tbody>
          {gates.map((g) => (
            <tr key={g.gate} class={g.passed ? '' : 'gate-failed'}>
              <td>{g.gate.replace(/_/g, ' ')}</td>
              <td>
                <span class={`badge ${g.passed ? 'gate-pass' : 'gate-fail'}`}>{g.passed ? 'pass' : 'fail'}</span>
              </td>
              <td>{g.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

/** What a release call refused: its gates (a 409 release_gates_failed), else null. */
export function refusedGates(err: unknown): { gates: ReleaseGate[]; detail: string } | null {
  if (!(err instanceof ApiError) || err.problem.code !== 'release_gates_failed' || !err.problem.gates) return null;
  return { gates: err.problem.gates, detail: err.problem.detail ?? '' };
}

/** A refused release: its gates, and the form that forces it with a reason. */
export function Refusal({
  refusal,
  onForce,
  onCancel,
}: {
  refusal: { what: string; gates: ReleaseGate[]; detail: string };
  onForce: (reason: string) => void;
  onCancel: () => void;
}) {
  const [reason, setReason] = useState('');
  return (
    <section class="card refusal" aria-labelledby="refusal-title">
      <h3 id="refusal-title">{refusal.what}: refused by the release gates</h3>
      <p role="alert">{refusal.detail}</p>
      <Gates gates={refusal.gates} caption="Release gates" />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (reason.trim()) onForce(reason.trim());
        }}
      >
        <Field label="Reason to release it all the same (recorded)">
          {(id) => <textarea id={id} value={reason} rows={2} maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} />}
        </Field>
        <div class="row end">
          <button type="button" onClick={onCancel}>
            Keep the current version
          </button>
          <button type="submit" class="danger" disabled={!reason.trim()}>
            Release anyway
          </button>
        </div>
      </form>
    </section>
  );
}

/** The traffic split: who gets the candidate, and the controls to start, change, promote or end it. */
export function SplitPanel({
  agent,
  versions,
  onChanged,
}: {
  agent: Agent;
  versions: NonNullable<ReturnType<typeof useVersions>['data']>;
  onChanged: () => void;
}) {
  const { client } = useSession();
  const mayRelease = useCan()('releases.write', agent.slug);
  const { busy, error, run } = useAction();
  const split = agent.split;
  const candidates = versions.filter((v) => v.version !== agent.version);
  const [version, setVersion] = useState<number | null>(split ? split.version : (candidates.at(0)?.version ?? null));
  const [percent, setPercent] = useState(String(split?.percent ?? 10));
  const [refusal, setRefusal] = useState<{ what: string; gates: ReleaseGate[]; detail: string } | null>(null);
  const [gates, setGates] = useState<ReleaseGate[] | null>(null);

  const start = (force?: string) =>
    run(async () => {
      setRefusal(null);
      const r = await client.api.putSplit({
        params: { slug: agent.slug },
        body: { version: version!, percent: Number(percent), ...(force ? { force: true, reason: force } : {}) },
      });
      const refused = r.status === 409 ? refusedGates(new ApiError(409, r.body)) : null;
      if (refused) {
        setRefusal({ what: `A split to v${version}`, ...refused });
        return;
      }
      setGates(ok(r).release.gates);
      onChanged();
    });
  const promote = (force?: string) =>
    run(async () => {
      setRefusal(null);
      const r = await client.api.promoteSplit({ params: { slug: agent.slug }, query: force ? { force: 'true', reason: force } : {} });
      const refused = r.status === 409 ? refusedGates(new ApiError(409, r.body)) : null;
      if (refused) {
        setRefusal({ what: `Promoting v${split?.version}`, ...refused });
        return;
      }
      setGates(ok(r).release.gates);
      onChanged();
    });
  const end = () =>
    run(async () => {
      ok(await client.api.endSplit({ params: { slug: agent.slug } }));
      setGates(null);
      onChanged();
    });

  return (
    <section aria-labelledby="split-title">
      <h3 id="split-title">Traffic split</h3>
      {split ? (
        <p role="status">
          <strong>{split.percent}%</strong> of new conversations start on <strong>v{split.version}</strong>, the rest on v{agent.version}, since{' '}
          <Time iso={split.started_at} />. Running conversations stay on their version. Compare them on the Overview.
        </p>
      ) : (
        <p class="muted small">
          No split: every new conversation starts on v{agent.version}. A split sends a share of new users to a candidate, through the release gates.
        </p>
      )}
      {error && <ErrorBox error={error} />}
      {candidates.length > 0 && (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void start();
          }}
        >
          <Field label="Candidate">
            {(id) => (
              <select id={id} value={String(version ?? '')} onChange={(e) => setVersion(Number(e.currentTarget.value))}>
                {candidates.map((v) => (
                  <option key={v.version} value={v.version}>
                    v{v.version}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Percent of new conversations">
            {(id) => <input id={id} type="number" min={0} max={100} step={0.01} value={percent} onInput={(e) => setPercent(e.currentTarget.value)} />}
          </Field>
          <button type="submit" class="primary" disabled={busy || version === null || !mayRelease}>
            {split && split.version === version ? 'Change share' : 'Start split'}
          </button>
          {split && (
            <>
              <button type="button" disabled={busy || !mayRelease} onClick={() => void promote()}>
                Promote v{split.version}
              </button>
              <button type="button" disabled={busy || !mayRelease} onClick={() => void end()}>
                End split
              </button>
            </>
          )}
          {!mayRelease && <p class="hint">{needs('releases.write')}</p>}
        </form>
      )}
      {busy && <Loading what="the release gates (an evaluation may run first)" />}
      {gates && <Gates gates={gates} caption="Gates of the last step" />}
      {refusal && (
        <Refusal
          refusal={refusal}
          onCancel={() => setRefusal(null)}
          onForce={(reason) => void (refusal.what.startsWith('Promoting') ? promote(reason) : start(reason))}
        />
      )}
    </section>
  );
}

const ACTIONS: Record<Release['action'], string> = {
  activate: 'released',
  rollback: 'rolled back to',
  promote: 'promoted',
  split_start: 'split started to',
  split_change: 'split changed for',
  split_end: 'split ended for',
};

/** The release record, newest first, and its hash chain checked on demand. */
export function ReleaseRecord({ slug, tick }: { slug: string; tick: number }) {
  const { client } = useSession();
  const steps = useLoad(async () => ok(await client.api.listReleases({ params: { slug }, query: { limit: 50 } })), [client, slug, tick]);
  const [open, setOpen] = useState<string | null>(null);
  const verify = useAction();
  const [verified, setVerified] = useState<string | null>(null);
  if (steps.error) return <ErrorBox error={steps.error} retry={steps.reload} />;
  if (!steps.data) return <Loading what="the release record" />;
  return (
    <section aria-labelledby="record-title">
      <div class="row">
        <h3 id="record-title">Release record</h3>
        <button
          type="button"
          disabled={verify.busy}
          onClick={() =>
            void verify.run(async () => {
              const v = ok(await client.api.verifyReleases({ params: { slug } }));
              // "Intact" only when every step is keyed: steps from before the key prove consistency only.
              setVerified(
                !v.valid
                  ? `Broken at step ${v.first_broken!.sequence}: ${v.first_broken!.reason.replace(/_/g, ' ')}.`
                  : v.keyed_from === undefined
                    ? `Consistent: ${v.entries} steps chained without an operator key, which proves consistency, not who wrote them.`
                    : v.keyed_entries === v.entries
                      ? `Intact: ${v.entries} steps, every one keyed.`
                      : `Valid, not intact: ${v.entries - v.keyed_entries} of ${v.entries} steps predate the operator key and prove consistency only.`,
              );
            })
          }
        >
          Verify the chain
        </button>
      </div>
      {verify.error && <ErrorBox error={verify.error} />}
      {verified && (
        <p role="status" class={verified.startsWith('Broken') ? 'bad' : 'ok'}>
          {verified}
        </p>
      )}
      {steps.data.data.length === 0 ? (
        <p class="muted small">Nothing released yet.</p>
      ) : (
        <TableWrap label="Steps of the release record">
          <table>
            <Head cols={['#', 'When', 'What', 'Who', 'Gates', '']} />
            <tbody>
              {steps.data.data.map((s) => {
                const failed = s.gates.filter((g) => !g.passed).length;
                return [
                  <tr key={s.id} class={s.forced ? 'forced' : ''}>
                    <td>{s.sequence}</td>
                    <td>
                      <Time iso={s.created_at} />
                    </td>
                    <td>
                      {ACTIONS[s.action]} v{s.version}
                      {s.previous_version !== null && s.action !== 'split_end' ? ` (from v${s.previous_version})` : ''}
                      {s.split ? `, ${s.split.percent}%` : ''}
                      {s.forced && <span class="badge gate-fail">forced</span>}
                      {s.reason && <div class="small muted">“{s.reason}”</div>}
                    </td>
                    <td>
                      <Who actor={s.actor} keyId={s.key_id} />
                    </td>
                    <td>{s.gates.length === 0 ? '—' : failed ? `${failed} of ${s.gates.length} failed` : `${s.gates.length} passed`}</td>
                    <td>
                      {s.gates.length > 0 && (
                        <button type="button" aria-expanded={open === s.id} onClick={() => setOpen(open === s.id ? null : s.id)}>
                          {open === s.id ? 'Hide' : 'Evidence'}
                        </button>
                      )}
                    </td>
                  </tr>,
                  open === s.id && (
                    <tr key={`${s.id}-gates`}>
                      <td colSpan={6}>
                        <Gates gates={s.gates} caption={`Gates of step ${s.sequence}`} />
                        {s.evaluation_id && <p class="small muted">Evaluation {s.evaluation_id}</p>}
                      </td>
                    </tr>
                  ),
                ];
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}

/** Who made a release step: a person by their email, a key by its id's start, the gateway. */
function Who({ actor, keyId }: { actor: Release['actor']; keyId: string | null }) {
  if (actor?.kind === 'person') return <span title={`${actor.subject} (${actor.issuer})`}>{actor.email ?? actor.subject}</span>;
  const key = actor?.kind === 'key' ? actor.id : keyId;
  if (key) return <code title={key}>key {key.slice(0, 8)}</code>;
  return <span class="muted">{actor?.kind === 'gateway' ? 'gateway' : 'no key'}</span>;
}
