// `npm run agents -- apply --tenant acme agents/*.yaml`, `validate FILE…` and `eval FILE`:
// applies agent files to the database named by DATABASE_URL, printing what changed, and reports
// how well an agent routes (evaluation.ts).
import { applyAgentFile, describeDefinitionError, readAgentFile } from '../agents-loader.js';
import { createLogger } from '../lib/logger.js';
import { createServices } from '../services.js';
import { InvalidArgumentError } from 'commander';
import { loadConfig } from '../config.js';
import { migrate, openDatabase } from '../store/db.js';
import { evaluateAgentFile } from './evaluation.js';
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
