// `npm run agents -- replay SLUG --version N`: starts a replay on a server, shows its progress
// while it runs, and prints the summary and, for each changed conversation, the first turn that
// differed: what the user said there and every field of the answer that changed.
import { ConversationStatus } from '@switchboard/contract';
import { Option, type Command } from 'commander';
import { literalHost } from '../actions/ssrf.js';
import { versionNumber } from './args.js';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v.length > 200 ? `${v.slice(0, 200)}…` : v) : JSON.stringify(v));

/**
 * Reads a background job (a replay, an evaluation) every half second until it is no longer
 * running, with its progress line on stderr: rewritten in place on a terminal, a line per change
 * otherwise.
 */
export async function follow<T extends { status: string }>(read: () => Promise<T>, line: (job: T) => string): Promise<T> {
  const tty = process.stderr.isTTY;
  let last = '';
  for (;;) {
    const job = await read();
    const text = line(job);
    if (tty) process.stderr.write(`\r${text}`);
    else if (text !== last) process.stderr.write(`${text}\n`);
    last = text;
    if (job.status !== 'running') {
      if (tty) process.stderr.write('\n');
      return job;
    }
    await new Promise((res) => setTimeout(res, 500));
  }
}

export function bar(done: number, total: number): string {
  const width = 30;
  const filled = total ? Math.round((done / total) * width) : width;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`;
}

async function replay(slug: string, o: RemoteOptions & { version: number; limit: number; status?: ConversationStatus }): Promise<void> {
  const sb = remoteClient(o);
  const started = await reach(o, () =>
    sb.api.startReplay({ params: { slug }, body: { version: o.version, limit: o.limit, ...(o.status ? { status: o.status } : {}) } }),
  );
  if (started.status !== 202) throw new Error(describeFailure(o, started.status, started.body));
  const r = await follow(
    async () => {
      const got = await reach(o, () => sb.api.getReplay({ params: { slug, id: started.body.id } }));
      if (got.status !== 200) throw new Error(describeFailure(o, got.status, got.body));
      return got.body;
    },
    (x) => `replaying ${slug} against version ${o.version} ${bar(x.progress.done, x.progress.total)}`,
  );
  const s = r.summary;
  console.log(`replay ${r.id}: ${r.status}; ${s.conversations} conversation(s): ${s.identical} identical, ${s.changed} changed, ${s.errors} error(s)`);
  for (const x of r.results) {
    if (x.verdict === 'changed' && x.first_difference) {
      const d = x.first_difference;
      console.log(`\n${x.conversation_id}: turn ${d.turn_index}, ${d.field}`);
      if (d.message !== undefined) console.log(`  user: ${show(d.message)}`);
      if (d.field === 'unrecorded_action') console.log(`  calls ${show(d.replayed)}, which the conversation never recorded`);
      else if (d.field === 'action_request') {
        // "action METHOD URL": the host as the address policy reads it.
        const host = (v: unknown) => (typeof v === 'string' ? (literalHost(v.split(' ').slice(2).join(' '))?.shown ?? null) : null);
        const moved = host(d.recorded) !== host(d.replayed) ? `the host changed from ${host(d.recorded) ?? '?'} to ${host(d.replayed) ?? '?'}; ` : '';
        console.log(`  - recorded: ${show(d.recorded)}`);
        console.log(`  + replayed: ${show(d.replayed)}`);
        console.log(`  (${moved}answered from the recording: the live call may not answer the same)`);
      } else {
        console.log(`  - recorded: ${show(d.recorded)}`);
        console.log(`  + replayed: ${show(d.replayed)}`);
      }
      // The other answer fields that differed at the same turn, one line each.
      for (const c of d.changes ?? []) if (c.field !== d.field) console.log(`  ${c.field}: ${show(c.recorded)} -> ${show(c.replayed)}`);
    } else if (x.verdict === 'error') console.log(`\n${x.conversation_id}: not replayed: ${x.error ?? 'error'}`);
  }
  if (r.status === 'failed') {
    console.error(`the replay failed: ${r.error ?? 'unknown error'}`);
    process.exitCode = 1;
  }
}

/** replay. */
export function register(cli: Command): void {
  remoteOptions(
    cli
      .command('replay')
      .description(
        "replay an agent's recorded conversations against a version on a running server (actions answered from their recordings) and show the first differences",
      )
      .argument('<slug>', 'the agent')
      .requiredOption('--version <n>', 'the version to replay against', versionNumber)
      .option('--limit <n>', 'how many recent conversations (at most 500)', versionNumber, 100)
      .addOption(new Option('--status <status>', 'only conversations with this status').choices(ConversationStatus.options)),
  ).action(async (slug: string, opts: RemoteOptions & { version: number; limit: number; status?: ConversationStatus }) => {
    await replay(slug, opts);
  });
}
