// `npm run agents -- eval AGENT.yaml [--data labelled.csv|yaml]`: trains the agent in this
// process as the server would and prints how well it routes (engine/report.ts), with progress
// on stderr while it trains.
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parse as parseYaml } from 'yaml';
import { describeDefinitionError, readAgentFile } from '../agents-loader.js';
import { crossValidate, evaluateLabelled, routingWarnings, slotWarnings, summarise, type RoutingReport } from '../engine/report.js';
import { InvalidArgumentError, type Command } from 'commander';

interface Labelled {
  message: string;
  expected: string;
}

/** Labelled messages from CSV (message,capability; a header row is skipped) or YAML. */
async function readLabelled(file: string): Promise<Labelled[]> {
  const text = await readFile(file, 'utf8');
  const ext = extname(file).toLowerCase();
  let rows: Labelled[];
  if (ext === '.csv') {
    const records: string[][] = parseCsv(text, { skip_empty_lines: true, trim: true, relax_column_count: true });
    rows = records.map((r, i) => {
      if (r.length < 2) throw new Error(`${file}: row ${i + 1} needs two columns, message and capability`);
      return { message: r[0], expected: r[1] };
    });
    if (rows.length && rows[0].message.toLowerCase() === 'message' && rows[0].expected.toLowerCase() === 'capability') rows.shift();
  } else if (ext === '.yaml' || ext === '.yml' || ext === '.json') {
    const doc: unknown = parseYaml(text);
    if (Array.isArray(doc)) {
      rows = doc.map((r: unknown, i) => {
        const o = r as { message?: unknown; capability?: unknown } | null;
        if (typeof o?.message !== 'string' || typeof o.capability !== 'string') throw new Error(`${file}: item ${i + 1} needs message and capability`);
        return { message: o.message, expected: o.capability };
      });
    } else if (doc && typeof doc === 'object') {
      rows = Object.entries(doc).flatMap(([capability, messages]) => {
        if (!Array.isArray(messages) || !messages.every((m) => typeof m === 'string')) throw new Error(`${file}: "${capability}" needs a list of messages`);
        return messages.map((message: string) => ({ message, expected: capability }));
      });
    } else throw new Error(`${file}: expected a list of { message, capability } or capability: [messages]`);
  } else throw new Error(`${file}: use a .csv, .yaml, .yml or .json file`);
  if (!rows.length) throw new Error(`${file}: no labelled messages`);
  return rows;
}

const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);

function formatReport(r: RoutingReport): string {
  const lines = [`${r.method}: ${r.total} messages, accuracy ${pct(r.accuracy)}`, ''];
  const width = Math.max(10, ...r.capabilities.map((c) => c.name.length));
  lines.push(`${'capability'.padEnd(width)}  messages  precision  recall`);
  for (const c of r.capabilities) {
    lines.push(`${c.name.padEnd(width)}  ${String(c.support).padStart(8)}  ${pct(c.precision).padStart(9)}  ${pct(c.recall).padStart(6)}`);
  }
  if (r.confused.length) {
    lines.push('', 'most confused (expected → routed to):');
    for (const c of r.confused) {
      lines.push(`  ${c.expected} → ${c.got}: ${c.count}`);
      for (const m of c.messages) lines.push(`      "${m}"`);
    }
  }
  lines.push('', r.warnings.length ? 'warnings:' : 'warnings: none');
  for (const w of r.warnings) lines.push(`  ${w.code}: ${w.path ? `${w.path}: ` : ''}${w.message}`);
  return lines.join('\n');
}

async function evaluateAgentFile(file: string, opts: { data?: string; folds: number }): Promise<void> {
  let definition;
  try {
    definition = (await readAgentFile(file)).definition;
  } catch (err) {
    throw new Error(`invalid ${describeDefinitionError(file, err)}`);
  }
  process.stderr.write('checking the examples against each other …\n');
  const warnings = [...routingWarnings(definition, Infinity), ...slotWarnings(definition)];
  let report: RoutingReport;
  if (opts.data) {
    const items = await readLabelled(opts.data);
    const known = new Set(definition.capabilities.map((c) => c.name));
    const unknown = [...new Set(items.map((i) => i.expected).filter((n) => !known.has(n)))];
    if (unknown.length) throw new Error(`${opts.data}: no capability named ${unknown.map((n) => `"${n}"`).join(', ')} in ${file}`);
    process.stderr.write(`training ${file} and routing ${items.length} labelled messages …\n`);
    report = summarise(`labelled messages from ${opts.data}`, definition, await evaluateLabelled(definition, items), warnings);
  } else {
    const predictions = await crossValidate(definition, opts.folds, (done, of) =>
      process.stderr.write(`cross-validation: fold ${done} of ${of} trained and routed\n`),
    );
    if (!predictions.length) throw new Error(`${file}: no capability has two examples or more to hold one out; give examples or use --data`);
    report = summarise(`${opts.folds}-fold cross-validation over the examples`, definition, predictions, warnings);
  }
  console.log(formatReport(report));
}

/** eval. */
export function register(cli: Command): void {
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
}
