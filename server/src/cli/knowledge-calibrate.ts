// `agents knowledge calibrate FILE`: chooses an answer phase's `min_confidence` by measurement
// (docs/knowledge.md, "Choosing min_confidence"). FILE is a CSV of questions with what should
// answer each: a source name, a passage id (`source#n`), or nothing (the documents do not say).
// Each question is searched as the agent's answer phase searches (its knowledge_sources, or
// --sources); for each threshold the tool counts questions answered right, answered wrong (the
// best passage is not the expected one), abstained wrongly, and abstained rightly, and prints the
// threshold that gets most of them right (the highest of those that tie).
import { readFile } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Command } from 'commander';
import { describeFailure, reach, remoteClient, remoteOptions, type RemoteOptions } from './remote.js';

interface Question {
  question: string;
  /** A source name or passage id; null: nothing in the documents answers it. */
  expected: string | null;
}

async function readQuestions(file: string): Promise<Question[]> {
  const records: string[][] = parseCsv(await readFile(file, 'utf8'), { skip_empty_lines: true, trim: true, relax_column_count: true });
  const rows = records[0]?.[0]?.toLowerCase() === 'question' ? records.slice(1) : records;
  const out = rows.filter((r) => r[0]).map((r) => ({ question: r[0], expected: r[1] && r[1].toLowerCase() !== 'none' ? r[1] : null }));
  if (!out.length) throw new Error(`${file} holds no questions: write one a line, "question,expected" (a source, a passage id, or nothing)`);
  if (out.length > 2000) throw new Error(`${file} holds ${out.length} questions: at most 2000 a run`);
  return out;
}

/** The search's sources parameter for an agent's knowledge_sources. */
async function sourcesOf(o: RemoteOptions, slug: string): Promise<string> {
  const r = await reach(o, () => remoteClient(o).api.getAgent({ params: { slug } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  const picked = r.body.definition.knowledge_sources;
  if (!picked?.length) throw new Error(`agent ${slug} names no knowledge_sources`);
  return picked.map((s) => (typeof s === 'string' ? s : `tag:${s.tag}`)).join(',');
}

const THRESHOLDS = Array.from({ length: 15 }, (_, i) => Math.round((0.25 + i * 0.05) * 100) / 100);
const pct = (n: number, of: number) => (of ? `${Math.round((n / of) * 100)}%` : '—');

async function calibrate(file: string, o: RemoteOptions & { agent?: string; sources?: string }) {
  const questions = await readQuestions(file);
  const sources = o.agent ? await sourcesOf(o, o.agent) : o.sources;
  const sb = remoteClient(o);
  const found: { q: Question; confidence: number; top: { id: string; source: string } | null }[] = [];
  for (const q of questions) {
    const r = await reach(o, () => sb.api.searchKnowledge({ query: { q: q.question, limit: 1, ...(sources ? { sources } : {}) } }));
    if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
    const hit = r.body.data.at(0);
    found.push({ q, confidence: hit?.confidence ?? 0, top: hit ? { id: hit.id, source: hit.source } : null });
    if (process.stderr.isTTY) process.stderr.write(`\rsearched ${found.length} of ${questions.length}`);
  }
  if (process.stderr.isTTY) process.stderr.write('\n');
  const answerable = found.filter((f) => f.q.expected !== null).length;
  const unanswerable = found.length - answerable;
  const right = (f: (typeof found)[number]) => f.top !== null && (f.q.expected === f.top.source || f.q.expected === f.top.id);
  console.log(`${found.length} questions: ${answerable} the documents answer, ${unanswerable} they do not${sources ? ` (sources ${sources})` : ''}`);
  console.log(
    `${'min_confidence'.padEnd(14)}  ${'answered right'.padStart(14)}  ${'wrong'.padStart(5)}  ${'missed'.padStart(6)}  ${'abstained right'.padStart(15)}  ${'score'.padStart(5)}`,
  );
  let best = { t: THRESHOLDS[0], score: -1 };
  for (const t of THRESHOLDS) {
    const answered = found.filter((f) => f.confidence >= t);
    const good = answered.filter((f) => f.q.expected !== null && right(f)).length;
    const wrong = answered.length - good;
    const missed = found.filter((f) => f.confidence < t && f.q.expected !== null).length;
    const abstained = found.filter((f) => f.confidence < t && f.q.expected === null).length;
    const score = (good + abstained) / found.length;
    // Of thresholds that score alike, the highest: it abstains more where the questions do not tell them apart.
    if (score >= best.score) best = { t, score };
    console.log(
      `${t.toFixed(2).padEnd(14)}  ${`${good} (${pct(good, answerable)})`.padStart(14)}  ${String(wrong).padStart(5)}  ${String(missed).padStart(6)}  ${`${abstained} (${pct(abstained, unanswerable)})`.padStart(15)}  ${pct(good + abstained, found.length).padStart(5)}`,
    );
  }
  console.log(
    `best: min_confidence ${best.t.toFixed(2)}, ${pct(best.score * found.length, found.length)} of the questions right; set it in the answer phase: answer: { min_confidence: ${best.t.toFixed(2)} }`,
  );
}

export function register(k: Command): void {
  remoteOptions(
    k
      .command('calibrate')
      .description("choose an answer phase's min_confidence by measurement: each question of a CSV searched as the phase would, scored at each threshold")
      .argument('<file>', 'CSV of "question,expected": a source name, a passage id (source#n), or nothing for a question the documents do not answer')
      .option('--agent <slug>', "search the agent's knowledge_sources")
      .option('--sources <list>', 'comma-separated source names and tag:<tag> (default: every source)'),
  ).action(calibrate);
}
