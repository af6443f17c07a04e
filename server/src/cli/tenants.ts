// `agents tenant copy`: a tenant's configuration moved to another database, e.g. from the embedded
// SQLite file to PostgreSQL (store/tenant-copy.ts; docs/deployment.md, "Moving to PostgreSQL").
import { type Command } from 'commander';
import { copyTenant, TENANT_TABLES } from '../store/tenant-copy.js';

/** The table names' column: as wide as the longest. */
const WIDTH = Math.max(...TENANT_TABLES.map((t) => t.length));

export function register(cli: Command): void {
  const tenant = cli.command('tenant').description("a tenant's configuration across databases");
  tenant
    .command('copy')
    .description(
      "copy a tenant's agents (every version and the release record), test suites, keys, secrets and channels from one database to another; conversations stay",
    )
    .argument('<tenant>', 'the tenant')
    .requiredOption('--from <url>', 'the database to copy from, e.g. sqlite://data/switchboard.db')
    .requiredOption('--to <url>', 'the database to copy to, e.g. postgres://user@host/switchboard (migrated first)')
    .action(async (id: string, opts: { from: string; to: string }) => {
      const [{ migrate, openDatabase }, { shownDatabaseUrl }] = await Promise.all([import('../store/db.js'), import('../config.js')]);
      const from = openDatabase(opts.from);
      const to = openDatabase(opts.to);
      try {
        // The source at this release's schema too: rows are read column for column.
        await migrate(from);
        await migrate(to);
        console.log(`copying tenant "${id}" from ${shownDatabaseUrl(opts.from)} to ${shownDatabaseUrl(opts.to)}`);
        const copied = await copyTenant(from, to, id, (table, rows) => console.log(`  ${table.padEnd(WIDTH)} ${rows}`));
        const total = Object.values(copied).reduce((a, b) => a + b, 0);
        if (total === 0) {
          console.error(`the source holds nothing of tenant "${id}": check the name`);
          process.exitCode = 1;
          return;
        }
        console.log(`copied ${total} row(s) in one transaction; conversations, their audit and the review inbox stay in the source.`);
        console.log('the server on the new database needs the same SECRETS_KEY (secrets, channels) and AUDIT_CHAIN_KEY (release record): docs/deployment.md');
      } finally {
        await Promise.all([from.close(), to.close()]);
      }
    });
}
