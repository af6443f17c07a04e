// Banking77 in `npm run bench:routing`: one agent of 77 banking capabilities (about 130 examples
// each, bench/banking77) and a fallback without examples, as a team would write it. Its
// intents are fine-grained and close to one another (card_arrival, card_delivery_estimate,
// card_linking, …), which is where a semantic signal is supposed to help. Banking77 has no
// out-of-scope messages of its own: CLINC150's out-of-scope validation messages stand in for them.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseCsv } from 'csv-parse/sync';
import { AgentDefinition } from '@switchboard/contract';
import { compileAgent, validateDefinition } from '../server/src/engine/compile.js';
import type { VectorsStatus } from '../server/src/engine/word-vectors.js';
import { route } from '../server/src/engine/run.js';

const DIR = fileURLToPath(new URL('./banking77/', import.meta.url));

type Pairs = [string, string][];

function read(file: string): Pairs {
  const rows = parseCsv(readFileSync(`${DIR}/${file}`, 'utf8'), { columns: true, skip_empty_lines: true }) as { text: string; category: string }[];
  // Capability names are lower-case words: the data set has `Refund_not_showing_up` and
  // `reverted_card_payment?`.
  return rows.map((r) => [r.text, r.category.toLowerCase().replace(/[^a-z0-9_]/g, '')]);
}

export interface BankingResult {
  capabilities: number;
  examples: number;
  tests: number;
  /** Test messages routed to their capability, as routing runs (thresholds and all). */
  inScope: number;
  /** Test messages whose capability the router scored best, before any out-of-scope rule. */
  topScored: number;
  /** CLINC150's out-of-scope validation messages sent to the fallback. */
  oosRecall: number;
  trainMs: number;
  p50: number;
  p99: number;
}

const pct = (a: number[], q: number) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))];

/** Trains the agent with `words` and evaluates it. */
export async function banking77(oosVal: Pairs, words: VectorsStatus): Promise<BankingResult> {
  const train = read('train.csv');
  const test = read('test.csv');
  const byIntent = new Map<string, string[]>();
  for (const [u, i] of train) (byIntent.get(i) ?? byIntent.set(i, []).get(i)!).push(u);
  const definition = AgentDefinition.parse({
    name: 'banking77',
    routing: { fallback: 'fallback' },
    capabilities: [
      ...[...byIntent].map(([name, examples]) => ({ name, examples, phases: [{ id: 'a', say: name }] })),
      { name: 'fallback', phases: [{ id: 'f', say: 'Sorry?' }] },
    ],
  });
  const problems = validateDefinition(definition);
  if (problems.length) throw new Error(JSON.stringify(problems));
  const t0 = performance.now();
  const agent = await compileAgent('00000000-0000-4000-8000-000000000077', 1, definition, undefined, words);
  const trainMs = performance.now() - t0;
  const times: number[] = [];
  let inScope = 0;
  let topScored = 0;
  for (const [u, i] of test) {
    const t = performance.now();
    const scored = agent.router.score(u);
    const name = route(agent, scored, null).capability.name;
    times.push(performance.now() - t);
    if (name === i) inScope++;
    if (scored.scores[0]?.name === i) topScored++;
  }
  const oos = oosVal.filter(([u]) => route(agent, agent.router.score(u), null).capability.name === 'fallback').length;
  return {
    capabilities: byIntent.size,
    examples: train.length,
    tests: test.length,
    inScope: inScope / test.length,
    topScored: topScored / test.length,
    oosRecall: oos / oosVal.length,
    trainMs,
    p50: pct(times, 0.5),
    p99: pct(times, 0.99),
  };
}
