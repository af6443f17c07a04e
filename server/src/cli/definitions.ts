// `agents validate | apply | versions`: agent files checked here, applied to the database named by
// DATABASE_URL or to a running server (--url), and a running server's versions of an agent.
import { type Command } from 'commander';
import type { DefinitionWarning, VersionState } from '@switchboard/contract';
import { applyAgentFile, describeDefinitionError, describeSubstitutions, isTestFile, readAgentFile } from '../agents-loader.js';
import { routingWarnings, slotWarnings } from '../engine/report.js';
import { GatesFailedError } from '../errors.js';
import { bool, versionNumber } from './args.js';
import { printGates, printRefusal } from './releases.js';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

/** The agent files among those given: test files (`*.test.yaml`, which a glob such as agents/*.yaml takes in) are passed over, and said so. */
function agentFilesOf(files: string[]): string[] {
  for (const f of files.filter((x) => isTestFile(x))) console.log(`skipped   ${f} (a test file: npm run agents -- test)`);
  return files.filter((f) => !isTestFile(f));
}

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
      const r = await reach(o, () =>
        sb.api.putAgent({ params: { slug }, query: { activate: activate ? 'true' : 'false', note: `agents apply ${f}` }, body: definition }),
      );
      if (r.status !== 200) {
        printRefusal(r.body);
        throw new Error(describeFailure(o, r.status, r.body));
      }
      const was = before.status === 200 ? before.body.version : null;
      const what = r.body.stored_version !== r.body.version ? 'draft    ' : r.body.version !== was ? 'applied  ' : 'unchanged';
      console.log(`${what} ${slug} version ${r.body.stored_version}${what.startsWith('draft') ? ` (current stays ${r.body.version})` : ''} (${f})`);
      for (const line of describeSubstitutions(substitutions)) console.log(line);
      if (r.body.release) printGates(r.body.release.gates, console.log, r.body.release.action);
      printWarnings(r.body.warnings);
    } catch (err) {
      failed++;
      console.error(`failed    ${describeDefinitionError(f, err)}`);
    }
  }
  console.log(`${files.length - failed} of ${files.length} file(s) applied to ${o.url}`);
  if (failed) process.exitCode = 1;
}

/** How `versions` shows each state (docs/improving.md says what each means). */
const STATE_LABEL: Record<VersionState, string> = {
  current: 'current',
  split_candidate: 'split candidate',
  draft: 'draft',
  released_before: 'released before',
  never_released: 'never released',
};

/** Columns padded to their widest cell. */
function printTable(head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const r of [head, ...rows]) console.log(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  '));
}

/** validate, apply and versions. */
export function register(cli: Command): void {
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
      const [{ loadConfig, shownDatabaseUrl }, { migrate, openDatabase }, { createServices }, { createLogger }] = await Promise.all([
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
            if (r.release) printGates(r.release.gates, console.log, r.release.action);
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
      console.log(`${files.length - failed} of ${files.length} file(s) applied to ${shownDatabaseUrl(config.databaseUrl)}`);
      if (failed) process.exitCode = 1;
    });

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
    const rows = r.body.data.map((v) => [String(v.version), STATE_LABEL[v.state], v.created_at, v.note ?? '—', v.capabilities.join(', ')]);
    printTable(['version', 'state', 'created', 'made by', 'capabilities'], rows);
    if (r.body.next_cursor) console.log('(older versions not shown: --limit)');
  });
}
