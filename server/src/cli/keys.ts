// `npm run keys -- create --tenant acme --scopes converse,read [--name web]`, `create --tenant acme
// --role operator:acme-support --role viewer` (roles, each for the whole tenant or named agents), `create --tenant acme
// --widget --agent acme-support --origin https://shop.example.com` (a publishable key for the web
// chat widget, printed with its snippet), `list --tenant acme`, `revoke --tenant acme --id ID`:
// manages keys in the database named by DATABASE_URL.
import { InvalidArgumentError } from 'commander';
import { grantText, Scope, WebOrigin, type Grant } from '@switchboard/contract';
import { roleOf } from './args.js';
import { loadConfig, serviceUrl, shownDatabaseUrl } from '../config.js';
import { systemClock } from '../lib/clock.js';
import { KeyService } from '../service/keys.js';
import { migrate, openDatabase, type Database } from '../store/db.js';
import { program, run } from './program.js';

async function withKeys<T>(fn: (keys: KeyService) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, {}, 'tool');
  const db: Database = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
    return await fn(new KeyService(db, systemClock));
  } finally {
    await db.close();
  }
}

const scopes = (v: string): Scope[] => {
  const parsed = Scope.array()
    .min(1)
    .safeParse(
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  if (!parsed.success) throw new InvalidArgumentError('list some of converse, read, admin, comma-separated');
  return parsed.data;
};

/** `--role builder` (the whole tenant) or `--role operator:acme-support,billing` (those agents only). */

const origin = (v: string, previous: string[] = []): string[] => {
  const parsed = WebOrigin.safeParse(v);
  if (!parsed.success) throw new InvalidArgumentError('an origin such as https://shop.example.com (scheme, host and port; no path)');
  return [...previous, parsed.data];
};
const collect = (v: string, previous: string[] = []): string[] => [...previous, v];

/** The script tag a site pastes, for the service at the address the server prints (PUBLIC_URL, else HOST and PORT). */
const snippet = (agent: string, key: string) =>
  `<script src="${serviceUrl(loadConfig(process.env, {}, 'tool'))}/widget/v1.js" data-agent="${agent}" data-key="${key}" async></script>`;

/** Where the keys went: the database DATABASE_URL names, without its password. */
const where = () => `in ${shownDatabaseUrl(loadConfig(process.env, {}, 'tool').databaseUrl)}`;

const cli = program('npm run keys --', 'Manage API keys (AUTH_MODE=api_key) in the database named by DATABASE_URL');

cli
  .command('create')
  .description('create an API key for a tenant (printed once), or with --widget a publishable key for the web chat widget')
  .requiredOption('--tenant <tenant>', 'the tenant the key belongs to')
  .option('--scopes <scopes>', 'converse, read and/or admin, comma-separated (the roles client, viewer, owner)', scopes)
  .option('--role <role[:agents]>', 'a role for the whole tenant, or with :slug,slug for those agents (repeat for more; docs/people.md)', roleOf)
  .option('--widget', 'a publishable key for the web chat widget (with --agent and --origin)')
  .option('--agent <slug>', 'an agent the widget may talk to (repeat for more)', collect)
  .option('--origin <origin>', 'an origin whose pages may run the widget (repeat for more)', origin)
  .option('--name <label>', 'a label for people')
  .action(async (o: { tenant: string; scopes?: Scope[]; role?: Grant[]; widget?: boolean; agent?: string[]; origin?: string[]; name?: string }) => {
    if (o.widget) {
      if (o.scopes || o.role || !o.agent?.length || !o.origin?.length) {
        cli.error('error: --widget takes --agent and --origin (each at least once), and no --scopes or --role', { exitCode: 2 });
      }
      const k = await withKeys((keys) => keys.createPublishable(o.tenant, { agents: o.agent!, origins: o.origin! }, o.name));
      console.log(
        `created publishable key ${k.id} for tenant ${o.tenant} ${where()}: agents ${k.widget!.agents.join(', ')}; origins ${k.widget!.origins.join(', ')}`,
      );
      console.log(`key (public by design; list shows it again): ${k.key}`);
      for (const agent of k.widget!.agents) console.log(`snippet for ${agent}: ${snippet(agent, k.key)}`);
      return;
    }
    if (!o.scopes === !o.role) cli.error('error: give --scopes or --role (or --widget), not both', { exitCode: 2 });
    if (o.role && o.role.length > 20) cli.error('error: at most 20 roles', { exitCode: 2 });
    const k = await withKeys((keys) => keys.create(o.tenant, o.role ? { roles: o.role } : o.scopes!, o.name));
    const held = `roles ${k.roles.map(grantText).join(' ')}`;
    console.log(`created key ${k.id} for tenant ${o.tenant} ${where()} with ${o.scopes ? `scopes ${k.scopes.join(',')} (${held})` : held}`);
    console.log(`key (shown once, store it now): ${k.key}`);
  });

cli
  .command('list')
  .description("list a tenant's keys (never their secrets)")
  .requiredOption('--tenant <tenant>', 'the tenant')
  .action(async (o: { tenant: string }) => {
    const list = await withKeys((keys) => keys.list(o.tenant));
    for (const k of list) {
      const what = k.widget
        ? `widget ${k.widget.key} agents ${k.widget.agents.join(',')} origins ${k.widget.origins.join(',')}`
        : k.roles.map(grantText).join(' ').padEnd(20);
      console.log(`${k.id}  ${k.prefix}…  ${what} ${k.revoked_at ? `revoked ${k.revoked_at}` : `created ${k.created_at}`}${k.name ? `  ${k.name}` : ''}`);
    }
    console.log(`${list.length} key(s) for tenant ${o.tenant}`);
  });

cli
  .command('revoke')
  .description('revoke a key at once, in every server process')
  .requiredOption('--tenant <tenant>', 'the tenant')
  .requiredOption('--id <id>', 'the key id (from list)')
  .action(async (o: { tenant: string; id: string }) => {
    await withKeys((keys) => keys.revoke(o.tenant, o.id));
    console.log(`revoked key ${o.id} of tenant ${o.tenant} ${where()}`);
  });

await run(cli);
