// `npm run agents -- activate | split | promote | releases`: releases on a running server through
// the release gates (docs/releases.md), each gate printed with its figure, and the release record.
import type { Release, ReleaseGate, ReleaseVerification } from '@switchboard/contract';
import { InvalidArgumentError, type Command } from 'commander';
import { forceOptions, percentOf, versionNumber } from './args.js';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

/**
 * Every gate on a line of its own: pass or FAIL, then what it measured. A step judged by no gate
 * says why: a rollback is not gated, and an agent without a release policy has none to judge.
 */
export function printGates(gates: ReleaseGate[], out: (line: string) => void = console.log, action?: Release['action']): void {
  for (const g of gates) out(`  ${g.passed ? 'pass' : 'FAIL'}  ${g.detail}`);
  if (gates.length || !action || action === 'split_end') return;
  out(
    action === 'rollback'
      ? '  no gates: a rollback to a version released before is not gated'
      : '  no release policy: released without gates (docs/releases.md)',
  );
}

/** A refused release's gates, when the server refused it on them; true when it did. */
export function printRefusal(body: unknown, out: (line: string) => void = console.error): boolean {
  const p = body as { code?: string; gates?: ReleaseGate[]; evaluation_id?: string };
  if (p.code !== 'release_gates_failed' || !p.gates) return false;
  printGates(p.gates, out);
  if (p.evaluation_id) out(`  (evaluation ${p.evaluation_id}; --force --reason "…" releases it all the same, recorded)`);
  return true;
}

function describeStep(r: Release): string {
  const split = r.split ? ` (split: ${r.split.percent}% to version ${r.split.version})` : '';
  const by = r.actor;
  const who =
    by?.kind === 'person' ? ` by ${by.email ?? by.subject}` : by?.kind === 'key' || r.key_id ? ` by key ${by?.kind === 'key' ? by.id : r.key_id}` : '';
  const forced = r.forced ? ` FORCED: ${r.reason ?? ''}` : r.reason ? ` (${r.reason})` : '';
  const knowledge = r.knowledge ? ` [knowledge snapshot ${r.knowledge.snapshot}]` : '';
  return `${String(r.sequence).padStart(4)}  ${r.created_at}  ${r.action.padEnd(12)} version ${r.version}${knowledge}${r.previous_version !== null ? ` (was ${r.previous_version})` : ''}${split}${who}${forced}`;
}

type Force = { force?: boolean; reason?: string };
const query = (o: Force) => ({ ...(o.force ? { force: 'true' as const } : {}), ...(o.reason ? { reason: o.reason } : {}) });

/** Fails the command with the server's answer, its gates printed first. */
function refused(o: RemoteOptions, status: number, body: unknown): never {
  printRefusal(body);
  throw new Error(describeFailure(o, status, body));
}

async function activate(slug: string, version: number, o: RemoteOptions & Force): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.activateVersion({ params: { slug, version }, query: query(o) }));
  if (r.status !== 200) refused(o, r.status, r.body);
  const step = r.body.release;
  console.log(`${step.action === 'rollback' ? 'rolled back' : 'activated'} ${slug} version ${r.body.version} (was ${step.previous_version ?? 'none'})`);
  if (step.knowledge) console.log(`  answers from knowledge snapshot ${step.knowledge.snapshot} (passages ${step.knowledge.digest.slice(0, 12)})`);
  printGates(step.gates, console.log, step.action);
  if (step.forced) console.log(`  released although gates failed: ${step.reason ?? ''}`);
}

async function split(slug: string, version: number | undefined, percent: number | undefined, o: RemoteOptions & Force & { end?: boolean }): Promise<void> {
  const sb = remoteClient(o);
  if (o.end) {
    const r = await reach(o, () => sb.api.endSplit({ params: { slug }, query: o.reason ? { reason: o.reason } : {} }));
    if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
    console.log(`split of ${slug} ended: every new conversation starts on the current version (${r.body.release.previous_version})`);
    return;
  }
  if (version === undefined || percent === undefined) throw new Error('give the candidate version and the percent of new conversations (or --end)');
  const r = await reach(o, () => sb.api.putSplit({ params: { slug }, body: { version, percent, force: o.force ?? false, reason: o.reason } }));
  if (r.status !== 200) refused(o, r.status, r.body);
  console.log(`${percent}% of new conversations of ${slug} start on version ${version}, the rest on version ${r.body.release.previous_version}`);
  printGates(r.body.release.gates, console.log, r.body.release.action);
}

async function promote(slug: string, o: RemoteOptions & Force): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.promoteSplit({ params: { slug }, query: query(o) }));
  if (r.status !== 200) refused(o, r.status, r.body);
  console.log(`promoted ${slug} version ${r.body.version} (was ${r.body.release.previous_version}); the split has ended`);
  printGates(r.body.release.gates, console.log, r.body.release.action);
}

/**
 * A verification in words. "Intact" is said only of a record every step of which is keyed under
 * the server's key: steps from before it prove consistency only, and a server without a key proves
 * no more than that.
 */
function describeVerification(v: ReleaseVerification): string {
  if (!v.valid) return `release record BROKEN at step ${v.first_broken!.sequence}: ${v.first_broken!.reason}`;
  const head = v.head ? `; it still holds head ${v.head.split(':')[0]}` : '';
  if (v.keyed_from === undefined)
    return `release record consistent: ${v.entries} steps chained without a key (AUDIT_CHAIN_KEY), which proves consistency only${head}`;
  if (v.keyed_entries === v.entries) return `release record intact: ${v.entries} steps, every one keyed${head}`;
  const before = v.keyed_from === null ? v.entries : v.keyed_from - 1;
  return `release record valid but not intact: ${before} of ${v.entries} steps predate the key and prove consistency only${head}`;
}

async function printReleases(slug: string, o: RemoteOptions & { limit: number; verify?: boolean; head?: string }): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.listReleases({ params: { slug }, query: { limit: Math.min(o.limit, 100) } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (!r.body.data.length) console.log(`${slug} has no releases recorded`);
  for (const step of r.body.data) {
    console.log(describeStep(step));
    printGates(step.gates, (line) => console.log(`      ${line}`), step.action);
  }
  if (r.body.next_cursor) console.log('(older steps not shown: --limit)');
  if (o.verify) {
    const v = await reach(o, () => sb.api.verifyReleases({ params: { slug }, query: o.head ? { head: o.head } : {} }));
    if (v.status !== 200) throw new Error(describeFailure(o, v.status, v.body));
    console.log(describeVerification(v.body));
    if (!v.body.valid) process.exitCode = 1;
  }
}

/** activate, split, promote and releases. */
export function register(cli: Command): void {
  remoteOptions(
    forceOptions(
      cli
        .command('activate')
        .description(
          'make a stored version current on a running server through the release gates (release a draft, or roll back), printing each gate; running conversations stay on theirs',
        )
        .argument('<slug>', 'the agent')
        .argument('<version>', 'the version to make current', versionNumber),
    ),
  ).action(async (slug: string, version: number, opts: RemoteOptions & { force?: boolean; reason?: string }) => {
    await activate(slug, version, opts);
  });

  remoteOptions(
    forceOptions(
      cli
        .command('split')
        .description('send a share of new conversations to a candidate version through the release gates, change the share, or end the split (--end)')
        .argument('<slug>', 'the agent')
        .argument('[version]', 'the candidate version', versionNumber)
        .argument('[percent]', 'the percent of new conversations it gets', percentOf)
        .option('--end', 'end the split: every new conversation on the current version'),
    ),
  ).action(
    async (
      slug: string,
      version: number | undefined,
      percent: number | undefined,
      opts: RemoteOptions & { force?: boolean; reason?: string; end?: boolean },
    ) => {
      await split(slug, version, percent, opts);
    },
  );

  remoteOptions(
    forceOptions(
      cli.command('promote').description("make the split's candidate current through the release gates, ending the split").argument('<slug>', 'the agent'),
    ),
  ).action(async (slug: string, opts: RemoteOptions & { force?: boolean; reason?: string }) => {
    await promote(slug, opts);
  });

  remoteOptions(
    cli
      .command('releases')
      .description("an agent's release record on a running server, newest first: every activation, rollback and split, who did it, and the gates")
      .argument('<slug>', 'the agent')
      .option('--limit <n>', 'how many steps', (v) => versionNumber(v), 20)
      .option('--verify', "also recompute the record's hash chain")
      .option('--head <sequence:hash>', 'with --verify: a head published earlier (a release.head log line), which the record must still hold', (v) => {
        if (!/^[1-9][0-9]{0,9}:[0-9a-f]{64}$/.test(v)) throw new InvalidArgumentError('a head as published: <sequence>:<hash>');
        return v;
      }),
  ).action(async (slug: string, opts: RemoteOptions & { limit: number; verify?: boolean; head?: string }) => {
    await printReleases(slug, opts);
  });
}
