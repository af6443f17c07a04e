// `agents validate | apply | versions | pull`: agent files checked here, applied to the database
// named by DATABASE_URL or to a running server (--url), a running server's versions of an agent,
// and one of them written back into its file.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { type Command } from 'commander';
import { createTwoFilesPatch } from 'diff';
import type { DefinitionWarning, VersionState } from '@switchboard/contract';
import { definitionYaml, mergeIntoFile } from '../agents-pull.js';
import { applyAgentFile, describeDefinitionError, describeSubstitutions, isTestFile, readAgentFile } from '../agents-loader.js';
import { routingWarnings, slotWarnings } from '../engine/report.js';
import { GatesFailedError } from '../errors.js';
import { bool, versionNumber } from './args.js';
import { printGates, printRefusal } from './releases.js';
import { describeFailure, reach, remoteClient, remoteOptions, sameServer, type RemoteOptions } from './remote.js';

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

/** `pull`: a version (the newest by default: the draft, when there is one) printed, or merged into its file. */
async function pull(slug: string, o: RemoteOptions & { version?: number; file?: string; dryRun?: boolean }): Promise<void> {
  const sb = remoteClient(o);
  let version = o.version ?? 0;
  if (!version) {
    const newest = await reach(o, () => sb.api.listVersions({ params: { slug }, query: { limit: 1 } }));
    if (newest.status !== 200) throw new Error(describeFailure(o, newest.status, newest.body));
    version = newest.body.data.at(0)?.version ?? 1;
  }
  const r = await reach(o, () => sb.api.getVersion({ params: { slug, version } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  const what = `${slug} version ${r.body.version} (${STATE_LABEL[r.body.state]}${r.body.note ? `; ${r.body.note}` : ''})`;
  if (!o.file) {
    process.stdout.write(definitionYaml(r.body.definition));
    return;
  }
  const file = o.file;
  if (!existsSync(file)) {
    if (!o.dryRun) writeFileSync(file, definitionYaml(r.body.definition));
    console.log(`${o.dryRun ? 'would write' : 'wrote'} ${what} to ${file} (a new file)`);
    return;
  }
  const before = readFileSync(file, 'utf8');
  const merged = mergeIntoFile(file, before, r.body.definition);
  for (const k of merged.kept) console.log(`kept      ${k.path}: the file's \${…} stays (the server has ${JSON.stringify(k.server)})`);
  if (!merged.changed.length) {
    console.log(`unchanged ${file} already holds ${what}`);
    return;
  }
  process.stdout.write(createTwoFilesPatch(file, file, before, merged.text, undefined, undefined, { context: 2 }).split('\n').slice(2).join('\n'));
  if (!o.dryRun) writeFileSync(file, merged.text);
  console.log(
    `${o.dryRun ? 'would merge' : 'merged   '} ${what} into ${file}: ${merged.changed.length} change(s) (${merged.changed.slice(0, 5).join(', ')}${merged.changed.length > 5 ? ', …' : ''})`,
  );
  if (!o.dryRun && r.body.state !== 'current') {
    console.log(`commit it, then release it: npm run agents -- activate ${slug} ${r.body.version}${sameServer(o)} (or apply the file)`);
  }
}

/** validate, apply, versions and pull. */
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
    const rows = r.body.data.map((v) => [
      String(v.version),
      STATE_LABEL[v.state],
      v.created_at,
      v.note ?? '—',
      v.capabilities.join(', '),
      v.knowledge ? `snapshot ${v.knowledge.snapshot} (${v.knowledge.digest.slice(0, 12)})` : 'live',
    ]);
    printTable(['version', 'state', 'created', 'made by', 'capabilities', 'knowledge'], rows);
    if (r.body.next_cursor) console.log('(older versions not shown: --limit)');
  });

  remoteOptions(
    cli
      .command('pull')
      .description(
        'write a version from a running server back into its file, changing only what differs (comments, order and ${NAME} placeholders stay), or print it as YAML without --file',
      )
      .argument('<slug>', 'the agent')
      .option('--version <n>', 'the version (default: the newest, the draft when there is one)', (v) => versionNumber(v))
      .option('--file <file>', 'the agent file to merge into (made when missing), e.g. agents/<slug>.yaml')
      .option('--dry-run', 'print the changes and write nothing'),
  ).action((slug: string, opts: RemoteOptions & { version?: number; file?: string; dryRun?: boolean }) => pull(slug, opts));
}
