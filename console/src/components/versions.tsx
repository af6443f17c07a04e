// The agent's versions for the pages that show or run one: loaded page by page, offered as a select
// that says each version's state (current, draft, split candidate…).
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

type State = Summary['state'];

/** Each version state as the pages show it, and the badge class it wears. */
export const VERSION_STATE: Record<State, { label: string; badge: string }> = {
  current: { label: 'current', badge: 'version-current' },
  split_candidate: { label: 'split candidate', badge: 'version-split' },
  draft: { label: 'draft', badge: 'version-draft' },
  released_before: { label: 'released before', badge: 'version-earlier' },
  never_released: { label: 'never released', badge: 'version-earlier' },
};

export function VersionSelect(props: {
  id?: string;
  agent: Agent;
  versions: Summary[] | undefined;
  value: number;
  disabled?: boolean;
  onChange: (v: number) => void;
}) {
  const list: { version: number; state: State }[] = props.versions ?? [{ version: props.agent.version, state: 'current' }];
  return (
    <select id={props.id} value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(Number(e.currentTarget.value))}>
      {list.map((v) => (
        <option key={v.version} value={v.version}>
          v{v.version} ({VERSION_STATE[v.state].label})
        </option>
      ))}
    </select>
  );
}
