// While a changed selection's new search index is being built, a search answers from the index
// before it (after waiting at most two seconds from the build's start), never with the passages
// of a source deleted meanwhile; once the build is done, the new passages answer. A change starts
// the build at once (the next question finds it ready). The index builds go through a real worker
// pool that the test holds back at will.
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { databases } from '../helpers/databases.js';
import { testConfig } from '../helpers/servers.js';
import { KnowledgeService } from '../../server/src/service/knowledge/knowledge-service.js';
import { Extractor } from '../../server/src/service/knowledge/extractor.js';
import { KnowledgeSourceStore } from '../../server/src/store/knowledge/source-store.js';
import { systemClock } from '../../server/src/lib/clock.js';
import type { Database } from '../../server/src/store/db.js';

const config = testConfig().knowledge;
let db: Database;
let drop: () => Promise<void>;
let knowledge: KnowledgeService;
const reader = new Extractor(config.read);
const workers = new Extractor(config.index);
/** Builds wait for this while it is set. */
let held: Promise<void> | null = null;
let builds = 0;
const indexer = Object.create(workers) as Extractor;
indexer.index = async (...args: Parameters<Extractor['index']>) => {
  builds++;
  if (held) await held;
  return workers.index(...args);
};

beforeAll(async () => {
  ({ db, drop } = await databases[0].create());
  knowledge = new KnowledgeService(new KnowledgeSourceStore(db), reader, indexer, systemClock, pino({ level: 'silent' }), config);
});
afterAll(async () => {
  await knowledge.close();
  await drop();
});

/** Uploads a file and waits until it is read (not for the index builds it starts, which the test may hold back). */
const put = async (name: string, text: string) => {
  await knowledge.upload('acme', name, {}, { bytes: new TextEncoder().encode(text), filename: `${name}.md`, mediaType: 'text/markdown' });
  await expect.poll(async () => (await knowledge.get('acme', name)).state, { timeout: 20_000 }).toBe('indexed');
};
const texts = async (q: string) => (await knowledge.search('acme', null, q, 5)).found.map((f) => f.passage.text);

it('answers from the index before while the new one is built, without a deleted source, then from the new one', async () => {
  await put('cards', '# Gift cards\n\nGift cards never expire.\n');
  await put('returns', '# Gift returns\n\nGift returns are free within 30 days.\n');
  expect(await texts('gift cards expire')).toEqual(['Gift cards never expire.', 'Gift returns are free within 30 days.']);
  const before = builds;

  let release!: () => void;
  held = new Promise((r) => (release = r));
  await put('cards', '# Gift cards\n\nGift cards expire after two years.\n');
  await knowledge.delete('acme', 'returns');
  // The new index is held back: the search answers from the one before, without the deleted source.
  expect(await texts('gift cards expire')).toEqual(['Gift cards never expire.']);
  // A second search joins the same build rather than starting another.
  expect(await texts('gift cards expire')).toEqual(['Gift cards never expire.']);
  // The index of the selection was started again when each source changed, and searches joined the build under way.
  expect(builds).toBeGreaterThan(before);
  expect(builds).toBeLessThanOrEqual(before + 2);

  release();
  held = null;
  await knowledge.idle();
  expect(await texts('gift cards expire')).toEqual(['Gift cards expire after two years.']);
});
