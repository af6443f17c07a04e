// `npm run bench:client`: what the client package costs the program that imports it: the bytes
// of declarations it ships, and a 30-line consumer's type-check under @tsconfig/strictest with
// skipLibCheck off (tsc --extendedDiagnostics: check time, total time, types, instantiations),
// each beside its target (500 KB of declarations for the ES module entry, 3 s to type-check here).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildClient } from '../scripts/build-client.js';

const TARGET_BYTES = 500 * 1024;
const TARGET_SECONDS = 3;

const root = process.cwd();
const files = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));

const CONSUMER = `import { createSwitchboardClient, type ConverseResponse } from '@switchboard/client';

const sb = createSwitchboardClient({ baseUrl: 'http://127.0.0.1:3000', tenantId: 'demo' });
const first = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'where is my order?' } });
if (first.status !== 200) throw new Error(\`converse: \${first.status}\`);
const reply: ConverseResponse = first.body;
const second = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: '100001', conversation_id: reply.conversation_id } });
if (second.status === 200) console.log(second.body.response.message, second.body.state.status);
const history = await sb.api.getHistory({ params: { slug: 'acme-support', id: reply.conversation_id } });
if (history.status === 200) console.log(history.body.turns.length);
const audit = await sb.api.getAuditLogs({ params: { slug: 'acme-support', id: reply.conversation_id }, query: { limit: 100 } });
if (audit.status === 200) {
  for (const e of audit.body.data) {
    if (e.type === 'routing_decision') console.log(e.data.candidates.map((c) => c.capability));
    else if (e.type === 'status_change') console.log(e.data.to);
  }
}
const list = await sb.api.listConversations({ params: { slug: 'acme-support' }, query: { status: 'completed', limit: 10 } });
if (list.status === 200) for (const c of list.body.data) console.log(c.id, c.status);
for await (const e of sb.converseStream('acme-support', { message: 'hi' })) {
  if (e.type === 'delta') console.log(e.text);
  else console.log(e.response.state.status);
}
const agent = await sb.api.getAgent({ params: { slug: 'acme-support' } });
if (agent.status === 200) console.log(agent.body.version);
const health = await sb.ops.healthz();
console.log(health.status);
`;

process.stderr.write('building the client package …\n');
const pkg = buildClient();
const declarations = files(pkg).filter((f) => f.endsWith('.d.ts'));
const esm = declarations.filter((f) => !f.includes('/cjs/'));
const bytes = (list: string[]) => list.reduce((n, f) => n + statSync(f).size, 0);
const largest = [...esm].sort((a, b) => statSync(b).size - statSync(a).size)[0];

const dir = join(root, 'build', `bench-consumer-${process.pid}`);
rmSync(dir, { recursive: true, force: true });
mkdirSync(join(dir, 'node_modules/@switchboard'), { recursive: true });
try {
  symlinkSync(pkg, join(dir, 'node_modules/@switchboard/client'));
  for (const dep of ['@ts-rest', 'zod', 'eventsource-parser']) symlinkSync(join(root, 'node_modules', dep), join(dir, 'node_modules', dep));
  const strictest = (JSON.parse(readFileSync(join(root, 'node_modules/@tsconfig/strictest/tsconfig.json'), 'utf8')) as { compilerOptions: object })
    .compilerOptions;
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'bench-consumer', private: true, type: 'module' }));
  writeFileSync(join(dir, 'main.ts'), CONSUMER);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        ...strictest,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        noEmit: true,
        skipLibCheck: false,
        lib: ['es2022', 'dom'],
        types: [],
      },
      files: ['main.ts'],
    }),
  );
  process.stderr.write('type-checking a 30-line consumer (@tsconfig/strictest, skipLibCheck off, then on) …\n');
  const check = (skipLibCheck: boolean) =>
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir, '--extendedDiagnostics', '--skipLibCheck', String(skipLibCheck)],
      {
        encoding: 'utf8',
      },
    );
  const out = check(false);
  const skipped = parseFloat(check(true).match(/^Total time:\s+(.+)$/m)?.[1] ?? 'NaN');
  // The baseline: the same settings on a program that imports nothing (the standard library's own check).
  writeFileSync(join(dir, 'main.ts'), 'export const nothing = 1;\n');
  const empty = parseFloat(check(false).match(/^Total time:\s+(.+)$/m)?.[1] ?? 'NaN');
  const stat = (name: string) => out.match(new RegExp(`^${name}:\\s+(.+)$`, 'm'))?.[1].trim() ?? '?';
  const total = parseFloat(stat('Total time'));
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
  console.log(
    `client package declarations: ${kb(bytes(esm))} for the ES module entry (target ${kb(TARGET_BYTES)}: ${bytes(esm) <= TARGET_BYTES ? 'met' : 'OVER'}), ${kb(bytes(declarations))} with cjs/`,
  );
  console.log(`  largest: ${largest.slice(pkg.length + 1)} ${kb(statSync(largest).size)}`);
  console.log(
    `consumer type-check: ${total.toFixed(2)} s total, ${stat('Check time')} checking (target ${TARGET_SECONDS} s: ${total <= TARGET_SECONDS ? 'met' : 'OVER'}); ${stat('Types')} types, ${stat('Instantiations')} instantiations, ${stat('Memory used')} memory`,
  );
  console.log(`  with skipLibCheck (the preset's own default): ${skipped.toFixed(2)} s total`);
  console.log(`  baseline, a program that imports nothing, same settings: ${empty.toFixed(2)} s total (the client's own share is the difference)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
