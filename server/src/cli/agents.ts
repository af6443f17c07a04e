// `npm run agents -- …`: validate agent files; apply them to the database named by DATABASE_URL
// or to a running server (--url); list an agent's versions and activate one; report how well an
// agent routes (evaluation.ts).
import { applyAgentFile, describeDefinitionError, describeSubstitutions, isTestFile, readAgentFile } from '../agents-loader.js';
import { routingWarnings, slotWarnings } from '../engine/report.js';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { CHANNEL_KINDS, ConversationStatus, isChannelKind, ReviewReason, ReviewStatus, type ChannelKind, type DefinitionWarning } from '@switchboard/contract';
import { evaluateAgentFile } from './evaluation.js';
import { chat } from './chat.js';
import { runConformance } from './conformance.js';
import { replay } from './replay.js';
import { actOnItems, evaluate, printInbox, storeSuite } from './review.js';
import { connect, deliveries, listChannels, removeChannel, setStatus } from './channels.js';
import { activate, printGates, printRefusal, printReleases, promote, split } from './releases.js';
import { routeMessage, runTestFiles } from './testing.js';
import { program, run } from './program.js';
import { GatesFailedError } from '../errors.js';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

const bool = (v: string): boolean => {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new InvalidArgumentError('must be true or false');
};

/** The agent files among those given: test files (`*.test.yaml`, which a glob such as agents/*.yaml takes in) are passed over, and said so. */
function agentFilesOf(files: string[]): string[] {
  for (const f of files.filter((x) => isTestFile(x))) console.log(`skipped   ${f} (a test file: npm run agents -- test)`);
  return files.filter((f) => !isTestFile(f));
}

const versionNumber = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a version number (1, 2, …)');
  return n;
};

const cli = program('npm run agents --', 'Check agent definition files, and apply them to the database named by DATABASE_URL');

cli
  .command('validate')
  .description('check files (YAML or JSON, slug = file name) without touching the database, with every warning that needs no server')
  .argument('<files...>', 'agent files')
  .action(async (files: string[]) => {
    let failed = 0;
    for (const f of agentFilesOf(files)) {
      try {
        const { slug, definition, substitutions } = await readAgentFile(f);
        console.log(`ok      ${f} (slug ${slug}, ${definition.capabilities.length} capabilities)`);
        for (const line of describeSubstitutions(substitutions)) console.log(line);
        // Every warning that needs no server: slots read but never filled, thin or overlapping capabilities.
        printWarnings([...slotWarnings(definition), ...routingWarnings(definition)]);
      } catch (err) {
        failed++;
        console.error(`invalid ${describeDefinitionError(f, err)}`);
      }
    }
    if (failed) process.exitCode = 1;
  });

cli
  .command('apply')
  .description(
    'create or update agents from files (slug = file name); a changed file makes a new version. Applies to the database named by DATABASE_URL, or with --url to a running server',
  )
  .option('--tenant <tenant>', 'the tenant the agents belong to (with --url and an API key, the key names it)')
  .option('--url <url>', "a running server's base URL, instead of the database")
  .option('--key <key>', 'API key for --url (api_key auth mode)')
  .option('--activate <bool>', 'false: store changed definitions as drafts, leaving the current versions in place', bool, true)
  .argument('<files...>', 'agent files')
  .action(async function (this: Command, files: string[], opts: { tenant?: string; url?: string; key?: string; activate: boolean }) {
    if (opts.url) return applyRemote(files, { url: opts.url, tenant: opts.tenant, key: opts.key }, opts.activate);
    if (!opts.tenant) this.error("error: required option '--tenant <tenant>' not specified (the database's agents belong to a tenant)");
    const tenant = opts.tenant;
    // The server's services load only for the command that uses the database: validate, test,
    // route and eval start without them (half the start-up of a command).
    const [{ loadConfig }, { migrate, openDatabase }, { createServices }, { createLogger }] = await Promise.all([
      import('../config.js'),
      import('../store/db.js'),
      import('../services.js'),
      import('../lib/logger.js'),
    ]);
    const config = loadConfig(process.env, {}, 'tool');
    const db = openDatabase(config.databaseUrl);
    let failed = 0;
    try {
      await migrate(db);
      const app = createServices(config, { db, logger: createLogger({ level: 'silent' }) });
      files = agentFilesOf(files);
      for (const f of files) {
        try {
          const r = await applyAgentFile(app, tenant, f, { activate: opts.activate });
          console.log(`${r.draft ? 'draft    ' : r.changed ? 'applied  ' : 'unchanged'} ${tenant}/${r.slug} version ${r.version} (${f})`);
          for (const line of describeSubstitutions(r.substitutions)) console.log(line);
          if (r.release) printGates(r.release.gates);
          printWarnings(r.warnings);
        } catch (err) {
          failed++;
          if (err instanceof GatesFailedError) printRefusal({ code: err.code, gates: err.gates, evaluation_id: err.evaluationId ?? undefined });
          console.error(`failed    ${describeDefinitionError(f, err)}`);
        }
      }
      await app.close();
    } finally {
      await db.close();
    }
    console.log(`${files.length - failed} of ${files.length} file(s) applied to ${config.databaseUrl.replace(/\/\/[^@/]*@/, '//***@')}`);
    if (failed) process.exitCode = 1;
  });

/**
 * The warnings of a stored definition: every host that is unreachable or was not checked (a
 * broken address is never one to miss), then the first routing and slot warnings.
 */
function printWarnings(warnings: DefinitionWarning[]): void {
  const isHost = (w: DefinitionWarning) => w.code === 'unreachable_host' || w.code === 'host_not_checked';
  const hosts = warnings.filter(isHost);
  const others = warnings.filter((w) => !isHost(w));
  for (const w of hosts) console.log(`  warning: ${w.message}`);
  for (const w of others.slice(0, 5)) console.log(`  warning: ${w.message}`);
  if (others.length > 5) console.log(`  … and ${others.length - 5} more warning(s)`);
}

/** `apply --url`: each file checked here, then PUT to the server, which trains and stores it. */
async function applyRemote(files: string[], o: RemoteOptions, activate: boolean): Promise<void> {
  const sb = remoteClient(o);
  let failed = 0;
  files = agentFilesOf(files);
  for (const f of files) {
    try {
      const { slug, definition, substitutions } = await readAgentFile(f);
      const before = await reach(o, () => sb.api.getAgent({ params: { slug } }));
      const r = await reach(o, () => sb.api.putAgent({ params: { slug }, query: { activate: activate ? 'true' : 'false' }, body: definition }));
      if (r.status !== 200) {
        printRefusal(r.body);
        throw new Error(describeFailure(o, r.status, r.body));
      }
      const was = before.status === 200 ? before.body.version : null;
      const what = r.body.stored_version !== r.body.version ? 'draft    ' : r.body.version !== was ? 'applied  ' : 'unchanged';
      console.log(`${what} ${slug} version ${r.body.stored_version}${what.startsWith('draft') ? ` (current stays ${r.body.version})` : ''} (${f})`);
      for (const line of describeSubstitutions(substitutions)) console.log(line);
      if (r.body.release) printGates(r.body.release.gates);
      printWarnings(r.body.warnings);
    } catch (err) {
      failed++;
      console.error(`failed    ${describeDefinitionError(f, err)}`);
    }
  }
  console.log(`${files.length - failed} of ${files.length} file(s) applied to ${o.url}`);
  if (failed) process.exitCode = 1;
}

remoteOptions(
  cli
    .command('versions')
    .description("list an agent's versions on a running server, newest first")
    .argument('<slug>', 'the agent')
    .option('--limit <n>', 'how many', (v) => versionNumber(v), 20),
).action(async (slug: string, opts: RemoteOptions & { limit: number }) => {
  const sb = remoteClient(opts);
  const r = await reach(opts, () => sb.api.listVersions({ params: { slug }, query: { limit: Math.min(opts.limit, 100) } }));
  if (r.status !== 200) throw new Error(describeFailure(opts, r.status, r.body));
  console.log('version  created                   capabilities');
  for (const v of r.body.data) {
    console.log(`${`${v.version}${v.current ? '*' : ''}`.padEnd(8)} ${v.created_at.padEnd(25)} ${v.capabilities.join(', ')}`);
  }
  console.log(`* current: new conversations start on it${r.body.next_cursor ? ' (older versions not shown: --limit)' : ''}`);
});

const forceOptions = (cmd: Command) =>
  cmd.option('--force', 'release even when gates fail (needs --reason; recorded)').option('--reason <text>', 'why: recorded in the release record');

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

const percentOf = (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 100) throw new InvalidArgumentError('must be a percent from 0 to 100');
  return n;
};

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
  async (slug: string, version: number | undefined, percent: number | undefined, opts: RemoteOptions & { force?: boolean; reason?: string; end?: boolean }) => {
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

const channelOf = (v: string): ChannelKind => {
  if (!isChannelKind(v)) throw new InvalidArgumentError(`must be one of ${CHANNEL_KINDS.join(', ')}`);
  return v;
};

const channels = cli
  .command('channel')
  .description('messaging channels of an agent on a running server: connect, list, pause, resume, remove, deliveries (docs/channels.md)');
remoteOptions(
  channels
    .command('connect')
    .description("connect (or reconnect) a channel with the provider's credentials; prints the webhook URL to paste into the provider")
    .argument('<slug>', 'the agent')
    .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf)
    .option('--set <name=value...>', 'a credential (name=env:VARIABLE reads it from the environment)', (v: string, prev: string[] | undefined) => [
      ...(prev ?? []),
      v,
    ])
    .option('--paused', 'connect it paused')
    .option('--set-webhook', 'telegram: have the server call setWebhook itself'),
).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions & { set?: string[]; paused?: boolean; setWebhook?: boolean }) => {
  await connect(slug, kind, opts.set ?? [], opts);
});
remoteOptions(channels.command('list').description("an agent's channels and their webhook URLs").argument('<slug>', 'the agent')).action(
  async (slug: string, opts: RemoteOptions) => {
    await listChannels(slug, opts);
  },
);
for (const [name, status] of [
  ['pause', 'paused'],
  ['resume', 'active'],
] as const) {
  remoteOptions(
    channels
      .command(name)
      .description(name === 'pause' ? 'pause a channel: messages are acknowledged and dropped, replies wait' : 'resume a paused channel')
      .argument('<slug>', 'the agent')
      .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf),
  ).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions) => {
    await setStatus(slug, kind, status, opts);
  });
}
remoteOptions(
  channels
    .command('remove')
    .description('remove a channel and forget its credentials')
    .argument('<slug>', 'the agent')
    .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf),
).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions) => {
  await removeChannel(slug, kind, opts);
});
remoteOptions(
  channels
    .command('deliveries')
    .description('replies sent through channels, newest first, with attempts and errors')
    .argument('<slug>', 'the agent')
    .addOption(new Option('--channel <channel>', 'only this channel').choices([...CHANNEL_KINDS]))
    .addOption(new Option('--status <status>', 'only deliveries in this state').choices(['pending', 'sent', 'failed', 'refused']))
    .option('--limit <n>', 'how many', (v) => versionNumber(v), 20),
).action(async (slug: string, opts: RemoteOptions & { channel?: ChannelKind; status?: 'pending' | 'sent' | 'failed' | 'refused'; limit: number }) => {
  await deliveries(slug, opts);
});

cli
  .command('test')
  .description(
    'run test conversations (<agent>.test.yaml) against the definition beside them, in memory with no server or network; or with --url against a server',
  )
  .argument('<paths...>', 'test files, or folders to search for *.test.yaml')
  .option('--junit <file>', 'also write a JUnit XML report there')
  .option('--url <url>', "run them on a server, against the agent's current version")
  .option('--tenant <tenant>', 'tenant id for --url (header auth mode)')
  .option('--key <key>', 'API key for --url (api_key auth mode)')
  .action(async (paths: string[], opts: { junit?: string; url?: string; tenant?: string; key?: string }) => {
    await runTestFiles(paths, { junit: opts.junit, remote: opts.url ? { url: opts.url, tenant: opts.tenant, key: opts.key } : undefined });
  });

cli
  .command('route')
  .description(
    'train an agent in memory and show how it routes one message: the decision, the reason and every candidate with its score, as the console shows it',
  )
  .argument('<file>', 'agent file (YAML or JSON)')
  .argument('<message>', 'the message, as the first of a conversation')
  .option('--context <json>', "the context envelope's `context` (preferences, entitlements…), as JSON", (v) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      throw new InvalidArgumentError('must be a JSON object');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object');
    return parsed as Record<string, unknown>;
  })
  .action(async (file: string, message: string, opts: { context?: Record<string, unknown> }) => {
    await routeMessage(file, message, opts);
  });

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

remoteOptions(
  cli
    .command('chat')
    .description('talk to an agent on a running server at the prompt: options by number, a status line per turn, /new /history /audit /quit')
    .argument('<slug>', 'the agent')
    .option('--user <user>', 'the end-user id to send as user-id')
    .option('--json', 'one JSON object per turn on standard output (for scripts: pipe the messages in, one a line)'),
).action(async (slug: string, opts: RemoteOptions & { user?: string; json?: boolean }) => {
  await chat(slug, { ...opts, tenant: opts.tenant ?? (opts.key ? undefined : 'demo') });
});

cli
  .command('conformance')
  .description(
    "run the contract's checks against a live Switchboard (a scratch agent, a conversation, history, audit, the usual errors), every response checked against the deployment's /openapi.json and this release's; leaves nothing behind",
  )
  .addOption(new Option('--url <url>', "the deployment's base URL").env('SWITCHBOARD_URL').makeOptionMandatory())
  .addOption(new Option('--tenant <tenant>', 'tenant id (header auth mode)').env('SWITCHBOARD_TENANT'))
  .addOption(new Option('--api-key <key>', 'an API key with the admin scope (api_key auth mode)').env('SWITCHBOARD_KEY'))
  .action(async (opts: { url: string; tenant?: string; apiKey?: string }) => {
    if (!opts.tenant && !opts.apiKey) throw new Error('say whose agents: --tenant T (header auth) or --api-key K (api_key auth)');
    const report = await runConformance({ url: opts.url, tenant: opts.tenant, key: opts.apiKey });
    if (report.failed) process.exitCode = 1;
  });

cli
  .command('eval')
  .description('train an agent as the server would and report how well it routes: cross-validated over its examples, or on labelled messages')
  .argument('<file>', 'agent file (YAML or JSON)')
  .option('--data <file>', 'labelled messages: CSV (message,capability) or YAML (a list of { message, capability }, or capability: [messages])')
  .option(
    '--folds <n>',
    'cross-validation folds when no --data is given',
    (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 2 || n > 20) throw new InvalidArgumentError('must be a whole number from 2 to 20');
      return n;
    },
    5,
  )
  .action(async (file: string, opts: { data?: string; folds: number }) => {
    await evaluateAgentFile(file, opts);
  });

await run(cli);
