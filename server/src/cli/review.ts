// The review loop from the command line (docs/improving.md), against a running server:
// `agents review SLUG` prints the inbox, `agents review-act SLUG ITEM… --add-example CAP |
// --out-of-scope | --dismiss` acts on items (printing the draft's diff), `agents suite SLUG FILE`
// stores an agent's test conversations, and `agents evaluate SLUG VERSION` evaluates a draft
// with its progress on stderr and prints it beside the current version.
import { ReviewReason, ReviewStatus, type Evaluation, type ReviewAction } from '@switchboard/contract';
import { Option, type Command } from 'commander';
import { readTestFile } from '../agents-loader.js';
import { bar, follow } from './replay.js';
import { versionNumber } from './args.js';
import { describeFailure, reach, remoteClient, remoteOptions, sameServer, type RemoteOptions } from './remote.js';

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${(x * 100).toFixed(1)}%`);
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

async function printInbox(slug: string, o: RemoteOptions & { reason?: ReviewReason; status: ReviewStatus; limit: number }): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () =>
    sb.api.listReview({ params: { slug }, query: { status: o.status, limit: o.limit, ...(o.reason ? { reason: o.reason } : {}) } }),
  );
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  const counts = Object.entries(r.body.counts)
    .filter(([, c]) => c.items > 0)
    .map(([reason, c]) => `${reason} ${c.items} (${c.messages} message${c.messages === 1 ? '' : 's'})`);
  console.log(`${slug}: ${o.status} items by reason: ${counts.join(', ') || 'none'}`);
  if (r.body.data.length === 0) return;
  console.log('');
  console.log(`${'id'.padEnd(36)}  ${'reason'.padEnd(12)}  count  ${'routed to'.padEnd(16)}  message`);
  for (const i of r.body.data) {
    const extra =
      i.margin !== undefined ? ` (margin ${i.margin})` : i.action ? ` → ${i.action.action}${i.action.capability ? ` ${i.action.capability}` : ''}` : '';
    console.log(
      `${i.id}  ${i.reason.padEnd(12)}  ${String(i.count).padStart(5)}  ${clip(i.capability, 16).padEnd(16)}  ${JSON.stringify(clip(i.message, 80))}${extra}`,
    );
  }
  if (r.body.next_cursor) console.log(`(more: --limit)`);
}

async function actOnItems(slug: string, items: string[], o: RemoteOptions & { addExample?: string; outOfScope?: boolean; dismiss?: boolean }): Promise<void> {
  const chosen = [o.addExample !== undefined, o.outOfScope === true, o.dismiss === true].filter(Boolean).length;
  if (chosen !== 1) throw new Error('say one action: --add-example CAPABILITY, --out-of-scope or --dismiss');
  const body: ReviewAction =
    o.addExample !== undefined
      ? { items, action: 'add_example', capability: o.addExample }
      : o.outOfScope
        ? { items, action: 'add_out_of_scope' }
        : { items, action: 'dismiss' };
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.actOnReview({ params: { slug }, body }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`${body.action}: ${r.body.acted} item(s) left the inbox`);
  const d = r.body.draft;
  if (!d) {
    if (body.action !== 'dismiss') console.log('the draft had every example already: no new version');
    return;
  }
  for (const a of d.added) console.log(`  + ${a.path}: ${JSON.stringify(a.example)}`);
  for (const a of d.unchanged) console.log(`  = ${a.path}: ${JSON.stringify(a.example)} (there already)`);
  console.log(`draft: version ${d.version} (from version ${d.based_on}; not current)\n`);
  process.stdout.write(d.diff);
  console.log(`\nevaluate it: npm run agents -- evaluate ${slug} ${d.version}${sameServer(o)}`);
}

async function storeSuite(slug: string, file: string, o: RemoteOptions): Promise<void> {
  const spec = await readTestFile(file);
  if (spec.agent !== slug) throw new Error(`${file} tests agent "${spec.agent}", not "${slug}"`);
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.putTestSuite({ params: { slug }, body: { tests: spec.tests } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`stored ${r.body.tests.length} test conversation(s) of ${slug} from ${file}: every evaluation runs them`);
}

type Side = NonNullable<Evaluation['result']>['draft'];

/** The evaluation beside the current version, as lines. */
function describeEvaluation(e: Evaluation): string[] {
  const out = [`evaluation ${e.id}: version ${e.version} beside version ${e.baseline} (current when it started): ${e.status}`];
  if (e.error) out.push(`  error: ${e.error}`);
  const r = e.result;
  if (!r) return out;
  const row = (label: string, f: (s: Side) => string) => `  ${label.padEnd(34)} ${f(r.draft).padStart(14)} ${f(r.current).padStart(14)}`;
  out.push('', `  ${''.padEnd(34)} ${`v${e.version}`.padStart(14)} ${`v${e.baseline}`.padStart(14)}`);
  out.push(row('cross-validated accuracy', (s) => `${pct(s.cross_validation.accuracy)} of ${s.cross_validation.total}`));
  out.push(row('reviewed messages routed as said', (s) => `${s.labelled.as_reviewed}/${s.labelled.total}`));
  out.push(row('test conversations passed', (s) => `${s.tests.passed}/${s.tests.total}`));
  const names = [...new Set([...r.draft.cross_validation.capabilities, ...r.current.cross_validation.capabilities].map((c) => c.name))].sort();
  out.push('', '  per capability (cross-validated)   precision/recall, draft → current');
  for (const n of names) {
    const d = r.draft.cross_validation.capabilities.find((c) => c.name === n);
    const c = r.current.cross_validation.capabilities.find((x) => x.name === n);
    // A capability without examples (a fallback, usually) has no figures to give: said, not 0.0%/—.
    const side = (x: typeof d) => (!x || x.support === 0 ? 'no examples' : `${pct(x.precision)}/${pct(x.recall)}`);
    out.push(`    ${n.padEnd(24)} ${side(d)} → ${side(c)}`);
  }
  out.push('', `  reviewed messages: ${r.labelled.fixed} now routed as said, ${r.labelled.broken} no longer`);
  for (const m of r.labelled.messages) {
    const mark = m.draft === m.expected ? (m.current === m.expected ? '=' : '+') : '-';
    out.push(`    ${mark} ${JSON.stringify(clip(m.message, 60))}: ${m.expected}; v${e.version} ${m.draft}, v${e.baseline} ${m.current}`);
  }
  for (const f of r.draft.tests.failed) out.push(`  test "${f.name}" fails at step ${f.step}: ${f.why}`);
  if (r.replay) {
    const p = r.replay;
    out.push(
      '',
      `  replay of ${p.conversations} recorded conversation(s): ${p.identical} identical, ${p.changed} changed (capability ${p.capability}, outcome ${p.outcome}, reply ${p.reply}, action ${p.action}), ${p.errors} error(s)`,
      `  each change: npm run agents -- replay … or GET …/replays/${p.replay_id}`,
    );
  }
  return out;
}

async function evaluate(slug: string, version: number, o: RemoteOptions & { replay: number; folds: number }): Promise<void> {
  const sb = remoteClient(o);
  const started = await reach(o, () => sb.api.startEvaluation({ params: { slug, version }, body: { replay: o.replay, folds: o.folds } }));
  if (started.status !== 202) throw new Error(describeFailure(o, started.status, started.body));
  const e = await follow(
    async () => {
      const got = await reach(o, () => sb.api.getEvaluation({ params: { slug, id: started.body.id } }));
      if (got.status !== 200) throw new Error(describeFailure(o, got.status, got.body));
      return got.body;
    },
    (x) => `evaluating ${slug} version ${version}: ${x.stage.replace('_', ' ').padEnd(16)} ${bar(x.progress.done, x.progress.total)}`,
  );
  for (const line of describeEvaluation(e)) console.log(line);
  if (e.status === 'failed') process.exitCode = 1;
}

/** review, review-act, suite and evaluate. */
export function register(cli: Command): void {
  remoteOptions(
    cli
      .command('review')
      .description("list an agent's review inbox on a running server: messages it missed, grouped, the most recently seen first (docs/improving.md)")
      .argument('<slug>', 'the agent')
      .addOption(new Option('--reason <reason>', 'only items of this reason').choices(ReviewReason.options))
      .addOption(new Option('--status <status>', 'open (the inbox), or what was done with them').choices(ReviewStatus.options).default('open'))
      .option('--limit <n>', 'how many (at most 100)', versionNumber, 20),
  ).action(async (slug: string, opts: RemoteOptions & { reason?: ReviewReason; status: ReviewStatus; limit: number }) => {
    await printInbox(slug, { ...opts, limit: Math.min(opts.limit, 100) });
  });

  remoteOptions(
    cli
      .command('review-act')
      .description(
        "act on review items: add their messages to the agent's draft as examples of a capability or as out of scope (printing the diff), or dismiss them",
      )
      .argument('<slug>', 'the agent')
      .argument('<items...>', 'review item ids (agents review lists them)')
      .option('--add-example <capability>', 'add the messages to the examples of this capability')
      .option('--out-of-scope', "add the messages to the agent's out-of-scope messages (routing.out_of_scope)")
      .option('--dismiss', 'dismiss the items'),
  ).action(async (slug: string, items: string[], opts: RemoteOptions & { addExample?: string; outOfScope?: boolean; dismiss?: boolean }) => {
    await actOnItems(slug, items, opts);
  });

  remoteOptions(
    cli
      .command('suite')
      .description("store an agent's test conversations (<agent>.test.yaml) on a running server: every evaluation of its drafts runs them")
      .argument('<slug>', 'the agent')
      .argument('<file>', 'the test file'),
  ).action(async (slug: string, file: string, opts: RemoteOptions) => {
    await storeSuite(slug, file, opts);
  });

  remoteOptions(
    cli
      .command('evaluate')
      .description(
        'evaluate a version (a draft) on a running server beside the current one: cross-validated routing, the reviewed messages, the stored test conversations and a replay of recorded conversations',
      )
      .argument('<slug>', 'the agent')
      .argument('<version>', 'the version to evaluate', versionNumber)
      .option('--replay <n>', 'replay this many of the newest recorded conversations (0: none, at most 500)', (v) => Number(v), 100)
      .option('--folds <n>', 'cross-validation folds (2-10)', versionNumber, 5),
  ).action(async (slug: string, version: number, opts: RemoteOptions & { replay: number; folds: number }) => {
    await evaluate(slug, version, opts);
  });
}
