// Reading knowledge files: what each format gives (pages, headings, titles), the file types that
// lie about themselves, and the reader's pool: a worker reused after a good file, ended after one
// that ran over its time, fair between tenants, and stopped on shutdown; and the index pool, which
// builds a search index's postings in a worker thread.
import { afterEach, describe, expect, it } from 'vitest';
import { extract, ExtractError, type ExtractLimits } from '../../server/src/service/knowledge/extract.js';
import { Extractor } from '../../server/src/service/knowledge/extractor.js';
import { KnowledgeIndex, PostingsBuilder } from '../../server/src/engine/knowledge-index.js';
import { docx, manyPages, pdf, zipOf } from '../helpers/documents.js';

const LIMITS: ExtractLimits = { maxPages: 100, maxChars: 1_000_000, maxInflatedBytes: 5_000_000, maxDepth: 100 };
const text = (s: string) => new TextEncoder().encode(s);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'read',
    (e: unknown) => (e instanceof ExtractError ? e.message : `not an ExtractError: ${String(e)}`),
  );

describe('extracting a file', () => {
  it('keeps each PDF page apart, with its heading (told by type size) and the title from its metadata', async () => {
    const x = await extract(
      await pdf(
        [
          { heading: 'Delivery', paragraphs: ['We deliver on weekdays.'] },
          { paragraphs: ['Parcels wait at the depot for a week.'] },
          { heading: 'Payment', paragraphs: ['We take cards.'] },
        ],
        'Guide',
      ),
      'guide.pdf',
      'application/pdf',
      LIMITS,
    );
    expect(x).toMatchObject({ kind: 'pdf', title: 'Guide', pages: 3 });
    // The second page has no heading of its own: it stands under the first page's.
    expect(x.sections).toEqual([
      { page: 1, heading: 'Delivery', text: 'We deliver on weekdays.' },
      { page: 2, heading: 'Delivery', text: 'Parcels wait at the depot for a week.' },
      { page: 3, heading: 'Payment', text: 'We take cards.' },
    ]);
  });

  it('reads DOCX headings as Markdown headings, HTML through Readability, and Markdown and text as they are', async () => {
    const d = await extract(await docx([{ heading: 'Care', paragraphs: ['Wash cold.'] }]), 'care.docx', null, LIMITS);
    expect(d).toMatchObject({ kind: 'docx', title: 'Care', pages: null });
    expect(d.sections[0].text).toBe('# Care\n\nWash cold.');
    const m = await extract(text('Intro line.\n\n# Sizes\n\nRuns small.'), 'sizes.md', null, LIMITS);
    expect(m).toMatchObject({ kind: 'markdown', title: 'Sizes' });
    const t = await extract(text('just words'), null, 'text/plain; charset=utf-8', LIMITS);
    expect(t).toMatchObject({ kind: 'text', title: null, sections: [{ page: null, heading: null, text: 'just words' }] });
    // No name and no type: told from the bytes.
    expect((await extract(await pdf([{ paragraphs: ['x'] }]), null, null, LIMITS)).kind).toBe('pdf');
    expect((await extract(text('<!DOCTYPE html><html><body><p>hi</p></body></html>'), null, null, LIMITS)).kind).toBe('html');
  });

  it('refuses a file whose name or type says otherwise than its bytes, or that is none of the formats', async () => {
    const aPdf = await pdf([{ paragraphs: ['x'] }]);
    expect(await refusal(extract(aPdf, 'notes.docx', null, LIMITS))).toBe('the file says it is a Word document (DOCX) but its content is a PDF');
    expect(await refusal(extract(aPdf, 'notes.txt', null, LIMITS))).toBe('the file says it is plain text but its content is a PDF');
    expect(await refusal(extract(text('hello'), 'x.bin', 'application/pdf', LIMITS))).toBe('the file says it is a PDF but its content is plain text');
    const zip = await zipOf({ 'notes.txt': 'not a document' });
    expect(await refusal(extract(zip, 'a.zip', null, LIMITS))).toBe('the file is a zip archive; only a Word document (.docx) of them is read');
    expect(await refusal(extract(zip, 'a.docx', null, LIMITS))).toBe('the zip archive is not a Word document (it has no word/document.xml)');
    expect(await refusal(extract(new Uint8Array([0xff, 0xfe, 0x00, 0x41]), 'x.txt', null, LIMITS))).toBe(
      'the file is none of PDF, DOCX, HTML, Markdown or UTF-8 text',
    );
    expect(await refusal(extract(text('%PDF-1.7 but nothing else'), 'x.pdf', null, LIMITS))).toMatch(/^the PDF could not be read \(/);
    expect(await refusal(extract(text('   \n\n  '), 'x.txt', null, LIMITS))).toBe('the file has no text');
    expect(await refusal(extract(await manyPages(2), 'x.pdf', null, LIMITS))).toBe('no page of the PDF has text (a scanned PDF needs OCR first)');
    expect(await refusal(extract(text('x'.repeat(1_000_001)), 'x.txt', null, LIMITS))).toBe('the file holds more than 1000000 characters of text');
  });
});

describe('the reading pool', () => {
  let pool: Extractor | undefined;
  afterEach(async () => pool?.close());

  it('ends a reader that runs over its time, and reads the next file with a fresh one', async () => {
    pool = new Extractor({ workers: 1, timeoutMs: 150, memoryMb: 256, limits: { ...LIMITS, maxPages: 5000 } });
    const slow = await manyPages(3000);
    expect(await refusal(pool.extract('t', slow, 'big.pdf', null))).toBe('reading the file took longer than 150 ms');
    const quick = new Extractor({ workers: 1, timeoutMs: 30_000, memoryMb: 256, limits: LIMITS });
    expect((await quick.extract('t', text('fine'), 'a.txt', null)).kind).toBe('text');
    await quick.close();
  });

  it("serves tenants in turn: one tenant's queue of files does not stand in front of another's one", async () => {
    pool = new Extractor({ workers: 1, timeoutMs: 30_000, memoryMb: 256, limits: LIMITS });
    const order: string[] = [];
    const read = (tenant: string, name: string) => pool!.extract(tenant, text(`file ${name}`), `${name}.txt`, null).then(() => order.push(name));
    await Promise.all([read('busy', 'a1'), read('busy', 'a2'), read('busy', 'a3'), read('quiet', 'b1')]);
    expect(order.indexOf('b1')).toBeLessThan(order.indexOf('a3'));
    expect(order.indexOf('b1')).toBeLessThanOrEqual(1);
  });

  it('fails the files being read when the server stops, saying so, and reads no more', async () => {
    pool = new Extractor({ workers: 1, timeoutMs: 60_000, memoryMb: 256, limits: { ...LIMITS, maxPages: 5000 } });
    const reading = refusal(pool.extract('t', await manyPages(3000), 'big.pdf', null));
    await new Promise((r) => setTimeout(r, 300));
    await pool.close();
    expect(await reading).toBe('the server stopped while reading the file: upload it again');
    expect(await refusal(pool.extract('t', text('x'), 'x.txt', null))).toBe('the server stopped before reading the file: upload it again');
  });

  it("builds an index's postings in a worker, the same as in the process, within its time", async () => {
    pool = new Extractor({ workers: 1, timeoutMs: 30_000, memoryMb: 256 });
    const passages = [
      { id: 'a#1', title: 'Refunds', text: 'Refunds go back to the card within five days.' },
      { id: 'a#2', title: null, text: 'Parcels are delivered on weekdays.' },
    ];
    const postings = await pool.index(
      't',
      passages.map((p) => p.title),
      passages.map((p) => p.text),
    );
    const here = new PostingsBuilder(2);
    passages.forEach((p, i) => here.add(i, p.title, p.text));
    expect(postings).toEqual(here.finish());
    const index = KnowledgeIndex.from(passages, postings);
    expect(index.search('when is my refund paid?')[0].passage.id).toBe('a#1');
    // Postings that name passages the index does not have are refused.
    expect(() => KnowledgeIndex.from(passages.slice(0, 1), postings)).toThrow(/do not fit/);
    // A pool for indexes reads no files.
    await expect(pool.extract('t', text('x'), 'x.txt', null)).rejects.toThrow(/reads no files/);

    const slow = new Extractor({ workers: 1, timeoutMs: 100, memoryMb: 256 });
    const many = Array.from({ length: 200_000 }, (_, i) => `passage ${i} about delivery windows and refunds, parcels, cards and returns`);
    expect(
      await refusal(
        slow.index(
          't',
          many.map(() => null),
          many,
        ),
      ),
    ).toBe('building the search index took longer than 100 ms');
    await slow.close();
  });
});
