// `replay.new_hosts: forbid`: the candidate calls no scheme and host that the current version's
// actions and webhooks do not. A static comparison of the two definitions (written under `replay`
// in the policy, though it replays nothing).
import type { AgentDefinition } from '@switchboard/contract';
import type { Gate } from './gate.js';

/** The scheme and host of every action and webhook URL of a definition, as written (templated hosts included). */
export function hostsOf(def: AgentDefinition): Set<string> {
  const out = new Set<string>();
  const add = (url: string) => {
    const m = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)/i.exec(url.trim());
    out.add((m ? m[1] : url).toLowerCase());
  };
  for (const a of Object.values(def.actions ?? {})) add(a.url);
  for (const w of def.webhooks ?? []) add(w.url);
  return out;
}

export const newHostsGate: Gate = {
  judge({ require, defs }) {
    if (require.replay?.new_hosts !== 'forbid') return null;
    const before = hostsOf(defs.current);
    const after = hostsOf(defs.candidate);
    const added = [...after].filter((h) => !before.has(h)).sort();
    return {
      gate: 'new_hosts',
      passed: added.length === 0,
      figure: added.length,
      current: null,
      limit: 0,
      evidence: after.size,
      detail: added.length ? `new hosts (forbidden): ${added.join(', ')}` : 'new hosts: none (forbidden)',
    };
  },
  weakenings: (current, next) =>
    current.replay?.new_hosts === 'forbid' && next.replay && next.replay.new_hosts !== 'forbid' ? ['replay.new_hosts goes from forbid to allow'] : [],
};
