// `agents usage`: what the tenant uses of its quotas on a running server (GET /api/v1/usage).
import type { Command } from 'commander';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${Math.round(bytes / 2 ** 20)} MiB`);

async function usage(o: RemoteOptions) {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.getUsage());
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  const k = r.body.knowledge;
  const row = (what: string, used: string, limit: string, share: number) =>
    console.log(`${what.padEnd(20)}  ${used.padStart(10)}  of ${limit.padStart(10)}  ${(share * 100).toFixed(1).padStart(5)}%`);
  row('knowledge sources', String(k.sources.used), String(k.sources.limit), k.sources.used / k.sources.limit);
  row('knowledge bytes', size(k.bytes.used), size(k.bytes.limit), k.bytes.used / k.bytes.limit);
  row('knowledge passages', String(k.passages.used), String(k.passages.limit), k.passages.used / k.passages.limit);
  row('knowledge syncs today', String(k.syncs_today.used), String(k.syncs_today.limit), k.syncs_today.used / k.syncs_today.limit);
}

export function register(cli: Command): void {
  remoteOptions(cli.command('usage').description("what the tenant uses of its quotas on a running server, beside the operator's limits")).action(usage);
}
