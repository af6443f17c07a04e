// The agent's versions for a page that runs one (playground, replays, tests): loaded once, offered
// as a select that marks the current version and the drafts.
import type { Agent } from '@switchboard/client';
import { ok, useLoad, type Loaded } from '../api';
import { useSession } from '../app';

type Summary = { version: number; current: boolean };

/** The newest 100 versions, newest first. */
export function useVersions(slug: string): Loaded<Summary[]> {
  const { client } = useSession();
  return useLoad(async () => ok(await client.api.listVersions({ params: { slug }, query: { limit: 100 } })).data, [client, slug]);
}

export function versionKind(v: number, current: number): 'current' | 'draft' | 'earlier' {
  return v === current ? 'current' : v > current ? 'draft' : 'earlier';
}

export function VersionSelect(props: {
  id?: string;
  agent: Agent;
  versions: Summary[] | undefined;
  value: number;
  disabled?: boolean;
  onChange: (v: number) => void;
}) {
  const list = props.versions ?? [{ version: props.agent.version, current: true }];
  return (
    <select id={props.id} value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(Number(e.currentTarget.value))}>
      {list.map((v) => (
        <option key={v.version} value={v.version}>
          v{v.version} ({versionKind(v.version, props.agent.version)})
        </option>
      ))}
    </select>
  );
}
