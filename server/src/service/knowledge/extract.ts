// What a knowledge file says, as sections of text with the page and heading each stands under:
// PDF (pdfjs-dist, page by page, headings told by their type size), DOCX (mammoth to HTML),
// HTML (Mozilla's Readability for the page's main content), both then to Markdown (turndown),
// and Markdown or plain text as they are. The file's type is told from its bytes, and a name or
// media type that says otherwise is refused. Runs in a worker thread (extract-worker.ts): the
// worker's time and heap limits bound what a hostile file can cost; the caps here refuse most
// such files early, with a reason a person can act on.
import { getDocument, type PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import mammoth from 'mammoth';
import TurndownService from 'turndown';
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import { Parser } from 'htmlparser2';
import yauzl from 'yauzl';

export type FileKind = 'pdf' | 'docx' | 'html' | 'markdown' | 'text';

export interface ExtractLimits {
  /** Pages a PDF may have. */
  maxPages: number;
  /** Characters of text a file may give. */
  maxChars: number;
  /** Bytes a DOCX's parts may inflate to, as its zip declares them. */
  maxInflatedBytes: number;
  /** Elements HTML may nest. */
  maxDepth: number;
}

export interface Section {
  /** The page the text is on (PDF), else null. */
  page: number | null;
  heading: string | null;
  /** Markdown. */
  text: string;
}

export interface Extracted {
  kind: FileKind;
  title: string | null;
  /** Pages of a PDF, else null. */
  pages: number | null;
  sections: Section[];
  chars: number;
}

/** A file refused for what it holds: the message says what and, where it can, where. */
export class ExtractError extends Error {}

const DECLARED: Record<string, FileKind> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
};
const EXTENSIONS: Record<string, FileKind> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
};

/** The kind a file name or media type claims, or null when it claims none we know. */
function claimedKind(filename: string | null, mediaType: string | null): FileKind | null {
  const type = mediaType?.split(';')[0].trim().toLowerCase();
  if (type && type !== 'application/octet-stream' && type in DECLARED) return DECLARED[type];
  const ext = filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  return ext ? (EXTENSIONS[ext] ?? null) : null;
}

/** The kind the bytes are: by their signature, else text when they are UTF-8 without NULs. */
function sniffKind(bytes: Uint8Array): FileKind | 'zip' | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024));
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) return 'zip';
  if (head.includes(0)) return null;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, Math.min(bytes.length, 64 * 1024 - 3)).slice(0));
  } catch {
    // A multi-byte character cut at the window's end is not an error; anything else is.
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, Math.max(0, Math.min(bytes.length, 64 * 1024) - 4)));
    } catch {
      return null;
    }
    text = '';
  }
  if (/^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text.replace(/^\uFEFF/, ''))) return 'html';
  return 'text';
}

const NAMES: Record<FileKind, string> = { pdf: 'a PDF', docx: 'a Word document (DOCX)', html: 'HTML', markdown: 'Markdown', text: 'plain text' };

/** The file's kind: what its bytes are, which must agree with what its name or media type says. */
function fileKind(bytes: Uint8Array, filename: string | null, mediaType: string | null): FileKind {
  const sniffed = sniffKind(bytes);
  const claimed = claimedKind(filename, mediaType);
  if (sniffed === null) throw new ExtractError('the file is none of PDF, DOCX, HTML, Markdown or UTF-8 text');
  const actual: FileKind = sniffed === 'zip' ? 'docx' : sniffed;
  if (claimed === null) {
    if (sniffed === 'zip') throw new ExtractError('the file is a zip archive; only a Word document (.docx) of them is read');
    return actual;
  }
  // HTML, Markdown and plain text are all text: what the file says it is decides how it is read.
  const textual = (k: FileKind) => k === 'html' || k === 'markdown' || k === 'text';
  if (claimed === actual || (textual(claimed) && textual(actual))) return claimed;
  throw new ExtractError(`the file says it is ${NAMES[claimed]} but its content is ${sniffed === 'zip' ? 'a zip archive' : NAMES[actual]}`);
}

export async function extract(bytes: Uint8Array, filename: string | null, mediaType: string | null, limits: ExtractLimits): Promise<Extracted> {
  const kind = fileKind(bytes, filename, mediaType);
  let out: Omit<Extracted, 'chars' | 'kind'>;
  if (kind === 'pdf') out = await fromPdf(bytes, limits);
  else if (kind === 'docx') out = await fromDocx(bytes, limits);
  else {
    const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes).replace(/^\uFEFF/, '');
    if (text.length > limits.maxChars) throw new ExtractError(`the file holds more than ${limits.maxChars} characters of text`);
    out =
      kind === 'html'
        ? fromHtml(text, limits, true)
        : { title: markdownTitle(kind === 'markdown' ? text : ''), pages: null, sections: [{ page: null, heading: null, text }] };
  }
  const sections = out.sections.filter((s) => s.text.trim());
  const chars = sections.reduce((n, s) => n + s.text.length, 0);
  if (chars > limits.maxChars) throw new ExtractError(`the file holds more than ${limits.maxChars} characters of text`);
  if (chars === 0) throw new ExtractError(kind === 'pdf' ? 'no page of the PDF has text (a scanned PDF needs OCR first)' : 'the file has no text');
  return { kind, ...out, sections, chars };
}

function markdownTitle(text: string): string | null {
  return /^#\s+(.+?)\s*#*\s*$/m.exec(text)?.[1] ?? null;
}

// ---- PDF

interface Line {
  text: string;
  size: number;
}

/** A page's text as lines with their type size (the largest on the line). */
async function pageLines(doc: PDFDocumentProxy, n: number): Promise<Line[]> {
  const page = await doc.getPage(n);
  const content = await page.getTextContent();
  const lines: Line[] = [];
  let cur: Line = { text: '', size: 0 };
  for (const item of content.items) {
    if (!('str' in item)) continue;
    const transform = item.transform as number[];
    const size = Math.abs(transform[3]) || Math.abs(transform[0]) || item.height;
    cur.text += item.str;
    if (item.str.trim()) cur.size = Math.max(cur.size, size);
    if (item.hasEOL) {
      lines.push(cur);
      cur = { text: '', size: 0 };
    }
  }
  if (cur.text) lines.push(cur);
  page.cleanup();
  return lines.map((l) => ({ text: l.text.replace(/\s+/g, ' ').trim(), size: Math.round(l.size * 10) / 10 })).filter((l) => l.text);
}

async function fromPdf(bytes: Uint8Array, limits: ExtractLimits): Promise<Omit<Extracted, 'chars' | 'kind'>> {
  let doc: PDFDocumentProxy;
  try {
    // A copy: pdf.js takes the buffer over. No eval, no fonts loaded, no network.
    doc = await getDocument({
      data: new Uint8Array(bytes),
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      disableAutoFetch: true,
      verbosity: 0,
    }).promise;
  } catch (e) {
    throw new ExtractError(`the PDF could not be read (${(e as Error).message})`);
  }
  try {
    if (doc.numPages > limits.maxPages) throw new ExtractError(`the PDF has ${doc.numPages} pages, more than the ${limits.maxPages} allowed`);
    const pages: Line[][] = [];
    let chars = 0;
    for (let n = 1; n <= doc.numPages; n++) {
      let lines: Line[];
      try {
        lines = await pageLines(doc, n);
      } catch (e) {
        throw new ExtractError(`page ${n} could not be read (${(e as Error).message})`);
      }
      chars += lines.reduce((k, l) => k + l.text.length, 0);
      if (chars > limits.maxChars) throw new ExtractError(`the PDF holds more than ${limits.maxChars} characters of text (page ${n})`);
      pages.push(lines);
    }
    // Body text is the size most characters are set in; a short line set clearly larger is a heading.
    const bySize = new Map<number, number>();
    for (const l of pages.flat()) bySize.set(l.size, (bySize.get(l.size) ?? 0) + l.text.length);
    const body = [...bySize.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
    const isHeading = (l: Line) => l.size >= body * 1.15 && l.text.length <= 120 && /\p{L}/u.test(l.text);
    const info: { Title?: unknown } | undefined = (await doc.getMetadata().catch(() => null))?.info;
    let title = typeof info?.Title === 'string' && info.Title.trim() ? info.Title.trim() : null;
    const sections: Section[] = [];
    let heading: string | null = null;
    pages.forEach((lines, i) => {
      let para: string[] = [];
      const flush = () => {
        if (para.length) sections.push({ page: i + 1, heading, text: para.join(' ') });
        para = [];
      };
      for (const l of lines) {
        if (isHeading(l)) {
          flush();
          heading = l.text;
          title ??= l.text;
          continue;
        }
        para.push(l.text);
        // A line that ends a sentence well short of the others ends a paragraph.
        if (/[.!?:]$/.test(l.text) && l.text.length < 60) flush();
      }
      flush();
    });
    return { title, pages: doc.numPages, sections: joinSections(sections) };
  } finally {
    await doc.destroy();
  }
}

/** Sections of one page under one heading, joined into paragraphs of Markdown. */
function joinSections(sections: Section[]): Section[] {
  const out: Section[] = [];
  for (const s of sections) {
    const last = out.at(-1);
    if (last && last.page === s.page && last.heading === s.heading) last.text += `\n\n${s.text}`;
    else out.push({ ...s });
  }
  return out;
}

// ---- DOCX

/** The declared size of every part of a zip, refused past the cap before anything is inflated. */
function checkZip(bytes: Uint8Array, limits: ExtractLimits): Promise<void> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(Buffer.from(bytes), { lazyEntries: true, validateEntrySizes: true }, (err, zip) => {
      if (err) {
        reject(new ExtractError(`the DOCX is not a readable zip archive (${err.message})`));
        return;
      }
      let total = 0;
      let entries = 0;
      let document = false;
      zip.on('entry', (e: yauzl.Entry) => {
        total += e.uncompressedSize;
        entries++;
        if (e.fileName === 'word/document.xml') document = true;
        if (entries > 10_000 || total > limits.maxInflatedBytes) {
          zip.close();
          reject(
            new ExtractError(
              entries > 10_000 ? 'the DOCX holds more than 10000 parts' : `the DOCX would inflate to more than ${limits.maxInflatedBytes} bytes`,
            ),
          );
          return;
        }
        zip.readEntry();
      });
      zip.on('end', () => (document ? resolve() : reject(new ExtractError('the zip archive is not a Word document (it has no word/document.xml)'))));
      zip.on('error', (e: Error) => reject(new ExtractError(`the DOCX is not a readable zip archive (${e.message})`)));
      zip.readEntry();
    });
  });
}

async function fromDocx(bytes: Uint8Array, limits: ExtractLimits): Promise<Omit<Extracted, 'chars' | 'kind'>> {
  await checkZip(bytes, limits);
  let html: string;
  try {
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes) })).value;
  } catch (e) {
    throw new ExtractError(`the DOCX could not be read (${(e as Error).message})`);
  }
  return fromHtml(`<html><body>${html}</body></html>`, limits, false);
}

// ---- HTML

/** How deep the elements nest, read without building a tree (linkedom, Readability and turndown recurse). */
function depthOf(html: string, max: number): number {
  let depth = 0;
  let deepest = 0;
  const parser = new Parser(
    {
      onopentag() {
        depth++;
        if (depth > deepest) deepest = depth;
        if (deepest > max) parser.pause();
      },
      onclosetag() {
        depth--;
      },
    },
    { decodeEntities: false },
  );
  parser.end(html);
  return deepest;
}

/** What is read of linkedom's document (its own types do not resolve here); Readability takes it as the DOM Document it is. */
interface HtmlDocument {
  querySelector(selector: string): { textContent: string | null } | null;
  body: { innerHTML: string } | null;
}

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
turndown.remove(['script', 'style', 'noscript', 'iframe', 'object', 'embed', 'form', 'nav', 'footer'] as TurndownService.Filter);

/** HTML to sections: the main content (`readable`: Readability's choice), to Markdown, cut at headings. */
function fromHtml(html: string, limits: ExtractLimits, readable: boolean): Omit<Extracted, 'chars' | 'kind'> {
  const depth = depthOf(html, limits.maxDepth);
  if (depth > limits.maxDepth) throw new ExtractError(`the HTML nests elements more than ${limits.maxDepth} deep`);
  const { document } = parseHTML(html) as unknown as { document: HtmlDocument };
  let title: string | null = document.querySelector('title')?.textContent?.trim() || null;
  let content: string = document.body?.innerHTML ?? html;
  if (readable) {
    // Readability takes a DOM Document: the build's types have one, the server's own (no DOM) do not.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
    if (article?.content) {
      content = article.content;
      title = article.title?.trim() || title;
    }
  }
  const markdown = turndown.turndown(content);
  title ??= markdownTitle(markdown);
  return { title, pages: null, sections: [{ page: null, heading: null, text: markdown }] };
}
