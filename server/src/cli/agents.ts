// `npm run agents -- apply --tenant acme agents/*.yaml` and `npm run agents -- validate FILE…`:
// applies agent files to the database named by DATABASE_URL, printing what changed.
import { applyAgentFile, describeDefinitionError, readAgentFile } from '../agents-loader.js';
import { createLogger } from '../lib/logger.js';
import { createServices } from '../services.js';
import { loadConfig } from '../config.js';
import { migrate, openDatabase } from '../store/db.js';
import { program, run } from './program.js';

const cli = program('npm run agents --', 'Check agent definition files, and apply them to the database named by DATABASE_URL');

cli
  .command('validate')
  .description('check files (YAML or JSON, slug = file name) without touching the database')
  .argument('<files...>', 'agent files')
  .action(async (files: string[]) => {
    let failed = 0;
    for (const f of files) {
      try {
        const { slug, definition } = await readAgentFile(f);
        console.log(`ok      ${f} (slug ${slug}, ${definition.capabilities.length} capabilities)`);
      } catch (err) {
        failed++;
        console.error(`invalid ${describeDefinitionError(f, err)}`);
      }
    }
    if (failed) process.exitCode = 1;
  });

cli
  .command('apply')
  .description('create or update agents from files (slug = file name); a changed file makes a new version')
  .requiredOption('--tenant <tenant>', 'the tenant the agents belong to')
  .argument('<files...>', 'agent files')
  .action(async (files: string[], opts: { tenant: string }) => {
    const config = loadConfig();
    const db = openDatabase(config.databaseUrl);
    let failed = 0;
    try {
      await migrate(db);
      const app = createServices(config, { db, logger: createLogger({ level: 'silent' }) });
      for (const f of files) {
        try {
          const r = await applyAgentFile(app.agents, opts.tenant, f);
          console.log(`${r.changed ? 'applied  ' : 'unchanged'} ${opts.tenant}/${r.slug} version ${r.version} (${f})`);
        } catch (err) {
          failed++;
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

await run(cli);
