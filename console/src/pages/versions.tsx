// An agent's versions: which is current, which are drafts, a side-by-side diff of any two
// definitions (as YAML), activation (release a draft, or roll back) behind a confirmation and
// through the release gates, the traffic split, and the release record (docs/releases.md).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { diffLines } from 'diff';
import { stringify } from 'yaml';
import type { Agent, ReleaseGate } from '@switchboard/client';
import { ApiError, ok, useAction, useLoad } from '../api';
import { Gates, ReleaseRecord, Refusal, refusedGates, SplitPanel } from '../components/releases';
import { needs, useCan, useSession } from '../session';
import { ConfirmDialog, ErrorBox, Field, Head, Loading, TableWrap, Time } from '../components/ui';
import { useVersions, VersionSelect, VERSION_STATE } from '../components/versions';

type Row = { left: number | null; leftText: string; right: number | null; rightText: string; kind: 'same' | 'changed' | 'removed' | 'added' };

/** Lines of two texts side by side: removed lines face the added lines that replace them. */
function sideBySide(a: string, b: string): Row[] {
  const rows: Row[] = [];
  let l = 1;
  let r = 1;
  const parts = diffLines(a, b);
  const lines = (v: string) => v.replace(/\n$/, '').split('\n');
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (!p.added && !p.removed) {
      for (const t of lines(p.value)) rows.push({ left: l++, leftText: t, right: r++, rightText: t, kind: 'same' });
    } else if (p.removed) {
      const gone = lines(p.value);
      const next = parts[i + 1] as (typeof parts)[number] | undefined;
      const came = next?.added ? lines(next.value) : [];
      if (next?.added) i++;
      for (let k = 0; k < Math.max(gone.length, came.length); k++) {
        const has = (arr: string[]) => k < arr.length;
        rows.push({
          left: has(gone) ? l++ : null,
          leftText: gone[k] ?? '',
          right: has(came) ? r++ : null,
          rightText: came[k] ?? '',
          kind: has(gone) && has(came) ? 'changed' : has(gone) ? 'removed' : 'added',
        });
      }
    } else {
      for (const t of lines(p.value)) rows.push({ left: null, leftText: '', right: r++, rightText: t, kind: 'added' });
    }
  }
  return rows;
}

export function Versions({ agent, onActivated }: { agent: Agent; onActivated: () => void }) {
  const { client } = useSession();
  const mayRelease = useCan()('releases.write', agent.slug);
  const versions = useVersions(agent.slug, agent.version);
  const [left, setLeft] = useState<number | null>(null);
  const [right, setRight] = useState<number | null>(null);
  const [confirm, setConfirm] = useState<number | null>(null);
  const { busy, error, run } = useAction();
  const [refusal, setRefusal] = useState<{ what: string; version: number; gates: ReleaseGate[]; detail: string } | null>(null);
  const [released, setReleased] = useState<{ version: number; gates: ReleaseGate[]; rollback: boolean } | null>(null);
  const [tick, setTick] = useState(0);
  const changed = () => {
    setTick((t) => t + 1);
    onActivated();
  };
  const activate = (v: number, reason?: string) =>
    run(async () => {
      setRefusal(null);
      const r = await client.api.activateVersion({ params: { slug: agent.slug, version: v }, query: reason ? { force: 'true', reason } : {} });
      const refused = r.status === 409 ? refusedGates(new ApiError(409, r.body)) : null;
      if (refused) {
        setRefusal({ what: `Releasing v${v}`, version: v, ...refused });
        return;
      }
      const step = ok(r).release;
      setReleased({ version: v, gates: step.gates, rollback: step.action === 'rollback' });
      changed();
    });

  // Default comparison: the current version against the newest other one.
  useEffect(() => {
    const list = versions.data;
    if (!list || list.length === 0) return;
    const current = list.find((v) => v.current)?.version ?? list[0].version;
    const other = list.find((v) => v.version !== current)?.version ?? current;
    setLeft((x) => x ?? Math.min(current, other));
    setRight((x) => x ?? Math.max(current, other));
  }, [versions.data]);

  if (versions.error) return <ErrorBox error={versions.error} retry={versions.reload} />;
  if (!versions.data) return <Loading what="versions" />;
  const list = versions.data;
  const current = agent.version;
  return (
    <div>
      <h2>Versions</h2>
      <p class="muted small">
        New conversations start on the current version; running ones stay on theirs. The draft is the newest version when it is newer than the current one:
        review actions add to it, each making a new version.
      </p>
      {error && <ErrorBox error={error} />}
      {busy && <Loading what="the release gates (an evaluation may run first)" />}
      {released && (
        <div role="status">
          <p>v{released.version} is current.</p>
          {released.gates.length > 0 && <Gates gates={released.gates} caption={`Gates v${released.version} passed`} />}
          {released.gates.length === 0 && (
            <p class="small muted">
              {released.rollback
                ? 'No gates: a rollback to a version released before is not gated.'
                : 'No release policy: released without gates. Add release.require to the definition to have the next version judged (docs/releases.md).'}
            </p>
          )}
        </div>
      )}
      {refusal && <Refusal refusal={refusal} onCancel={() => setRefusal(null)} onForce={(reason) => void activate(refusal.version, reason)} />}
      <TableWrap label="Versions">
        <table>
          <Head cols={['Version', 'State', 'Stored', 'Made by', 'Capabilities', 'Knowledge', '']} />
          <tbody>
            {list.map((v) => (
              <tr key={v.version}>
                <td>v{v.version}</td>
                <td>
                  <span class={`badge ${VERSION_STATE[v.state].badge}`}>{VERSION_STATE[v.state].label}</span>
                  {agent.split?.version === v.version && <span class="badge version-split">{agent.split.percent}%</span>}
                </td>
                <td>
                  <Time iso={v.created_at} />
                </td>
                <td class="small">{v.note ?? '—'}</td>
                <td>{v.capabilities.join(', ')}</td>
                <td class="small" title={v.knowledge ? `passages ${v.knowledge.digest}` : 'answers from its sources as they are now'}>
                  {v.knowledge ? `snapshot ${v.knowledge.snapshot}` : 'live'}
                </td>
                <td>
                  {!v.current && (
                    <button type="button" disabled={!mayRelease} title={mayRelease ? undefined : needs('releases.write')} onClick={() => setConfirm(v.version)}>
                      {v.state === 'released_before' ? 'Roll back to' : 'Activate'} v{v.version}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <SplitPanel agent={agent} versions={list} onChanged={changed} />
      <ReleaseRecord slug={agent.slug} tick={tick} />
      <h3>Compare definitions</h3>
      <div class="row">
        <Field label="Left">{(id) => <VersionSelect id={id} agent={agent} versions={list} value={left ?? current} onChange={setLeft} />}</Field>
        <Field label="Right">{(id) => <VersionSelect id={id} agent={agent} versions={list} value={right ?? current} onChange={setRight} />}</Field>
      </div>
      {left !== null && right !== null && <Diff slug={agent.slug} left={left} right={right} />}
      <ConfirmDialog
        open={confirm !== null}
        title={`Make v${confirm} current?`}
        confirm={`Activate v${confirm}`}
        onCancel={() => setConfirm(null)}
        onConfirm={() => {
          const v = confirm!;
          setConfirm(null);
          setReleased(null);
          void activate(v);
        }}
      >
        <p>New conversations will start on v{confirm}. Conversations under way stay on the version they started on.</p>
        <p class="small muted">The release gates of the agent&apos;s policy judge it first; a rollback to a version released before is not gated.</p>
      </ConfirmDialog>
    </div>
  );
}

function Diff({ slug, left, right }: { slug: string; left: number; right: number }) {
  const { client } = useSession();
  const texts = useLoad(async () => {
    const [a, b] = await Promise.all([
      client.api.getVersion({ params: { slug, version: left } }).then((r) => ok(r)),
      client.api.getVersion({ params: { slug, version: right } }).then((r) => ok(r)),
    ]);
    return [stringify(a.definition), stringify(b.definition)] as const;
  }, [client, slug, left, right]);
  const rows = useMemo(() => (texts.data ? sideBySide(texts.data[0], texts.data[1]) : null), [texts.data]);
  if (texts.error) return <ErrorBox error={texts.error} retry={texts.reload} />;
  if (!rows) return <Loading what="the definitions" />;
  const changes = rows.filter((r) => r.kind !== 'same').length;
  return (
    <div>
      <p class="small" role="status">
        {changes === 0 ? `v${left} and v${right} define the same agent.` : `${changes} lines differ between v${left} and v${right}.`}
      </p>
      <TableWrap label={`Definition of v${left} beside v${right}`}>
        <table class="diff">
          <thead>
            <tr>
              <th scope="col" colSpan={2}>
                v{left}
              </th>
              <th scope="col" colSpan={2}>
                v{right}
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i} class={`diff-${r.kind}`}>
                <td class="ln">{r.left ?? ''}</td>
                <td class={r.kind === 'removed' || r.kind === 'changed' ? 'del' : ''}>
                  {(r.kind === 'removed' || r.kind === 'changed') && <span class="sr-only">removed: </span>}
                  <code>{r.leftText}</code>
                </td>
                <td class="ln">{r.right ?? ''}</td>
                <td class={r.kind === 'added' || r.kind === 'changed' ? 'ins' : ''}>
                  {(r.kind === 'added' || r.kind === 'changed') && <span class="sr-only">added: </span>}
                  <code>{r.rightText}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </div>
  );
}
