// `npm run keys -- create --tenant acme --scopes converse,read [--name web]`, `list --tenant acme`,
// `revoke --tenant acme --id ID`: manages API keys in the database named by DATABASE_URL.
import { parseArgs } from 'node:util';
import { Scope } from '@switchboard/contract';
import { loadConfig } from '../config.js';
import { systemClock } from '../lib/clock.js';
import { KeyService } from '../service/keys.js';
import { migrate, openDatabase } from '../store/db.js';

const USAGE = `usage:
  npm run keys -- create --tenant TENANT --scopes converse,read,admin [--name LABEL]
  npm run keys -- list --tenant TENANT
  npm run keys -- revoke --tenant TENANT --id KEY_ID`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { tenant: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' }, id: { type: 'string' } },
  });
  const command = positionals[0];
  if (!values.tenant || !['create', 'list', 'revoke'].includes(command ?? '')) {
    console.error(USAGE);
    return 2;
  }
  const config = loadConfig();
  const db = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
    const keys = new KeyService(db, systemClock);
    if (command === 'create') {
      const scopes = (values.scopes ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const parsed = Scope.array().min(1).safeParse(scopes);
      if (!parsed.success) {
        console.error(`--scopes must list some of converse, read, admin\n${USAGE}`);
        return 2;
      }
      const k = await keys.create(values.tenant, parsed.data, values.name);
      console.log(`created key ${k.id} for tenant ${values.tenant} with scopes ${k.scopes.join(',')}`);
      console.log(`key (shown once, store it now): ${k.key}`);
    } else if (command === 'list') {
      const list = await keys.list(values.tenant);
      for (const k of list) console.log(`${k.id}  ${k.prefix}…  ${k.scopes.join(',').padEnd(20)} ${k.revoked_at ? `revoked ${k.revoked_at}` : `created ${k.created_at}`}${k.name ? `  ${k.name}` : ''}`);
      console.log(`${list.length} key(s) for tenant ${values.tenant}`);
    } else {
      if (!values.id) {
        console.error(USAGE);
        return 2;
      }
      await keys.revoke(values.tenant, values.id);
      console.log(`revoked key ${values.id} of tenant ${values.tenant}`);
    }
    return 0;
  } finally {
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
