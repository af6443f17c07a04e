// `npm run keys -- create --tenant acme --scopes converse,read [--name web]`, `list --tenant acme`,
// `revoke --tenant acme --id ID`: manages API keys in the database named by DATABASE_URL.
import { InvalidArgumentError } from 'commander';
import { Scope } from '@switchboard/contract';
import { loadConfig } from '../config.js';
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

const cli = program('npm run keys --', 'Manage API keys (AUTH_MODE=api_key) in the database named by DATABASE_URL');

cli
  .command('create')
  .description('create a key for a tenant; the key is printed once')
  .requiredOption('--tenant <tenant>', 'the tenant the key belongs to')
  .requiredOption('--scopes <scopes>', 'converse, read and/or admin, comma-separated', scopes)
  .option('--name <label>', 'a label for people')
  .action(async (o: { tenant: string; scopes: Scope[]; name?: string }) => {
    const k = await withKeys((keys) => keys.create(o.tenant, o.scopes, o.name));
    console.log(`created key ${k.id} for tenant ${o.tenant} with scopes ${k.scopes.join(',')}`);
    console.log(`key (shown once, store it now): ${k.key}`);
  });

cli
  .command('list')
  .description("list a tenant's keys (never their secrets)")
  .requiredOption('--tenant <tenant>', 'the tenant')
  .action(async (o: { tenant: string }) => {
    const list = await withKeys((keys) => keys.list(o.tenant));
    for (const k of list)
      console.log(
        `${k.id}  ${k.prefix}…  ${k.scopes.join(',').padEnd(20)} ${k.revoked_at ? `revoked ${k.revoked_at}` : `created ${k.created_at}`}${k.name ? `  ${k.name}` : ''}`,
      );
    console.log(`${list.length} key(s) for tenant ${o.tenant}`);
  });

cli
  .command('revoke')
  .description('revoke a key at once, in every server process')
  .requiredOption('--tenant <tenant>', 'the tenant')
  .requiredOption('--id <id>', 'the key id (from list)')
  .action(async (o: { tenant: string; id: string }) => {
    await withKeys((keys) => keys.revoke(o.tenant, o.id));
    console.log(`revoked key ${o.id} of tenant ${o.tenant}`);
  });

await run(cli);
