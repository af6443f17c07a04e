// The agent's versions for the pages that show or run one: loaded page by page, offered as a select
// that marks the current version and the drafts.
import type { Agent, SwitchboardClient } from '@switchboard/client';
import { allPages, ok, useLoad, type Loaded } from '../api';
import { useSession } from '../session';

type Summary = Extract<Awaited<ReturnType<SwitchboardClient['api']['listVersions']>>, { status: 200 }>['body']['data'][number];

/** The agent's versions, newest first; loaded again when `current` (the current version) changes. */
export function useVersions(slug: string, current?: number): Loaded<Summary[]> {
  const { client } = useSession();
  return useLoad(
    () => allPages(async (cursor) => ok(await client.api.listVersions({ params: { slug }, query: { limit: 100, ...(cursor ? { cursor } : {}) } })), 10),
    [client, slug, current],
  );
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
  const list = props.versions ?? [{ version: props.agent.version }];
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
