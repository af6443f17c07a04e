// `npm run agents -- apply --tenant acme agents/*.yaml` and `npm run agents -- validate FILE…`:
// applies agent files to the database named by DATABASE_URL, printing what changed.
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { applyAgentFile, describeDefinitionError, readAgentFile } from '../agents-loader.js';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { validateDefinition } from '../engine/compile.js';
import { migrate, openDatabase } from '../store/db.js';

const USAGE = `usage:
  npm run agents -- apply --tenant TENANT FILE...   create or update agents from YAML/JSON files (slug = file name)
  npm run agents -- validate FILE...                check files without touching the database`;

async function main() {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { tenant: { type: 'string' } } });
  const [command, ...files] = positionals;
  if (!command || !files.length || !['apply', 'validate'].includes(command)) {
    console.error(USAGE);
    return 2;
  }
  let failed = 0;
  if (command === 'validate') {
    for (const f of files) {
      try {
        const { slug, definition } = await readAgentFile(f);
        const problems = validateDefinition(definition);
        if (problems.length) throw Object.assign(new Error(`${problems.length} problem(s)`), { problems });
        console.log(`ok      ${f} (slug ${slug}, ${definition.capabilities.length} capabilities)`);
      } catch (err) {
        failed++;
        const problems = (err as { problems?: { path: string; message: string }[] }).problems;
        console.error(problems ? `invalid ${f}\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}` : `invalid ${describeDefinitionError(f, err)}`);
      }
    }
    return failed ? 1 : 0;
  }
  if (!values.tenant) {
    console.error('apply needs --tenant TENANT\n' + USAGE);
    return 2;
  }
  const config = loadConfig();
  const db = openDatabase(config.databaseUrl);
  try {
    await migrate(db);
    const app = createApp(config, { db, logger: pino({ level: 'silent' }) });
    for (const f of files) {
      try {
        const r = await applyAgentFile(app.agents, values.tenant, f);
        console.log(`${r.changed ? 'applied  ' : 'unchanged'} ${values.tenant}/${r.slug} version ${r.version} (${f})`);
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
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
