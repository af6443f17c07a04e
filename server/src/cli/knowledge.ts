// `agents knowledge …` against a running server (docs/knowledge.md): add a file as a knowledge
// source (the upload's progress and then the reading's on stderr, the outcome on stdout), list
// and show sources, read a source's passages, search as an answer phase does, and remove one.
import { readFile, stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { sourceNameOf, type KnowledgeSource } from '@switchboard/contract';
import type { Command } from 'commander';
import { versionNumber } from './args.js';
import { addSite, describeSite, listPages, syncSite, type SiteOptions } from './knowledge-sites.js';
import { register as registerCalibrate } from './knowledge-calibrate.js';
import { bar, follow } from './replay.js';
import { describeFailure, reach, remoteClient, remoteOptions, sameServer, type RemoteOptions } from './remote.js';

const TYPES: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
};

/** The source name of a file (the contract's sourceNameOf), or an error asking for one. */
function nameOf(file: string): string {
  const name = sourceNameOf(file);
  if (!name) throw new Error(`say the source's name: --name (none can be made from "${basename(file)}")`);
  return name;
}

/**
 * A fetch that sends a multipart body as a stream and reports the bytes sent. Written here: the
 * global fetch takes a FormData whole and says nothing of its progress; its encoding (boundary
 * and all) is kept, from Response, and only counted on the way out.
 */
function uploadingFetch(total: number, onBytes: (sent: number) => void): typeof fetch {
  return async (input, init) => {
    if (!(init?.body instanceof FormData)) return fetch(input, init);
    const encoded = new Response(init.body);
    let sent = 0;
    const counted = encoded.body!.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, c) {
          sent += chunk.byteLength;
          onBytes(Math.min(sent, total));
          c.enqueue(chunk);
        },
      }),
    );
    const headers = new Headers(init.headers);
    headers.set('content-type', encoded.headers.get('content-type')!);
    // A streamed body needs `duplex: 'half'`, which Node's fetch types name and the DOM's do not.
    const request: RequestInit & { duplex: 'half' } = { ...init, headers, body: counted, duplex: 'half' };
    return fetch(input, request);
  };
}

function progressLine(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r${text}`);
}

function describeSource(s: KnowledgeSource): string[] {
  const what = [s.kind ?? 'not read yet', s.pages !== null ? `${s.pages} pages` : null, `${s.passages} passages`, `${s.bytes} bytes`]
    .filter(Boolean)
    .join(', ');
  return [
    `${s.name}: ${s.state}${s.error ? ` (${s.error})` : ''}`,
    `  title      ${s.title ?? '—'}`,
    s.site
      ? `  pages      ${what}, revision ${s.revision}, sha256 ${s.sha256.slice(0, 12)}…`
      : `  file       ${s.filename ?? '—'} (${what}), revision ${s.revision}, sha256 ${s.sha256.slice(0, 12)}…`,
    ...(s.site ? describeSite(s) : [`  link       ${s.url ?? '—'}`]),
    `  tags       ${s.tags.join(', ') || '—'}${s.language ? `; language ${s.language}` : ''}`,
    `  indexed    ${s.indexed_at ?? 'never'}`,
  ];
}

async function add(file: string, o: SiteOptions & { link?: string }) {
  if (/^https?:\/\//i.test(file)) return addSite(file, o, describeSource);
  const name = o.name ?? nameOf(file);
  const size = (await stat(file)).size;
  const bytes = await readFile(file);
  const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  let shown = 0;
  const sb = remoteClient(o);
  // The upload through a client whose fetch counts the bytes as they leave.
  const withProgress = remoteClient(o, {
    fetch: uploadingFetch(size, (sent) => {
      if (sent - shown >= size / 30 || sent === size) {
        shown = sent;
        progressLine(`uploading ${basename(file)} ${bar(sent, size)}`);
      }
    }),
  });
  const put = await reach(o, () =>
    withProgress.api.putSource({
      params: { source: name },
      body: {
        file: new File([bytes], basename(file), { type }),
        ...(o.title ? { title: o.title } : {}),
        ...(o.link ? { url: o.link } : {}),
        ...(o.language ? { language: o.language } : {}),
        ...(o.tags ? { tags: o.tags } : {}),
      },
    }),
  );
  if (process.stderr.isTTY) process.stderr.write('\n');
  if (put.status !== 202) throw new Error(describeFailure(o, put.status, put.body));
  console.log(`uploaded ${basename(file)} (${size} bytes) as knowledge source ${name}, revision ${put.body.revision}`);
  if (!o.wait) {
    console.log(`reading it in the background: npm run agents -- knowledge show ${name}${sameServer(o)}`);
    return;
  }
  const read = async () => {
    const got = await reach(o, () => sb.api.getSource({ params: { source: name } }));
    if (got.status !== 200) throw new Error(describeFailure(o, got.status, got.body));
    return { ...got.body, status: got.body.state === 'parsing' ? 'running' : got.body.state };
  };
  const s = await follow(read, (x) => `reading ${name}: ${x.state}`);
  for (const line of describeSource(s)) console.log(line);
  if (s.state === 'failed') process.exitCode = 1;
}

async function list(o: RemoteOptions & { tag?: string }) {
  const sb = remoteClient(o);
  const all: KnowledgeSource[] = [];
  for (let cursor: string | undefined; ;) {
    const r = await reach(o, () => sb.api.listSources({ query: { limit: 100, ...(cursor ? { cursor } : {}), ...(o.tag ? { tag: o.tag } : {}) } }));
    if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
    all.push(...r.body.data);
    if (!r.body.next_cursor) break;
    cursor = r.body.next_cursor;
  }
  if (all.length === 0) {
    console.log(`no knowledge sources${o.tag ? ` tagged ${o.tag}` : ''}: add one with npm run agents -- knowledge add FILE${sameServer(o)}`);
    return;
  }
  console.log(`${'name'.padEnd(24)}  ${'state'.padEnd(8)}  ${'kind'.padEnd(8)}  ${'pages'.padStart(5)}  ${'passages'.padStart(8)}  tags`);
  for (const s of all) {
    console.log(
      `${s.name.padEnd(24)}  ${s.state.padEnd(8)}  ${(s.kind ?? '—').padEnd(8)}  ${String(s.pages ?? '—').padStart(5)}  ${String(s.passages).padStart(8)}  ${s.tags.join(', ')}${s.error ? `  (${s.error})` : ''}`,
    );
  }
}

async function show(name: string, o: RemoteOptions & { passages: number }) {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.getSource({ params: { source: name } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  for (const line of describeSource(r.body)) console.log(line);
  if (o.passages === 0) return;
  const p = await reach(o, () => sb.api.listPassages({ params: { source: name }, query: { limit: Math.min(o.passages, 200) } }));
  if (p.status !== 200) throw new Error(describeFailure(o, p.status, p.body));
  for (const x of p.body.data) {
    console.log(`\n${x.id}${x.page !== null ? ` (page ${x.page})` : ''}${x.heading ? ` — ${x.heading}` : ''}`);
    console.log(`  ${x.text.replace(/\s*\n+\s*/g, ' ').slice(0, 300)}${x.text.length > 300 ? '…' : ''}`);
  }
}

async function search(question: string, o: RemoteOptions & { sources?: string; limit: number }) {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.searchKnowledge({ query: { q: question, limit: o.limit, ...(o.sources ? { sources: o.sources } : {}) } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (r.body.data.length === 0) console.log('no passage holds any word of the question');
  for (const h of r.body.data) {
    console.log(`${h.confidence.toFixed(2)}  ${h.id}${h.page !== null ? ` (page ${h.page})` : ''}${h.heading ? ` — ${h.heading}` : ''}  score ${h.score}`);
    console.log(`      ${h.text.replace(/\s*\n+\s*/g, ' ').slice(0, 200)}${h.text.length > 200 ? '…' : ''}`);
  }
}

async function remove(name: string, o: RemoteOptions) {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.deleteSource({ params: { source: name } }));
  if (r.status !== 204) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`deleted knowledge source ${name}: its passages no longer answer`);
}

/** knowledge add, list, show, search and rm. */
export function register(cli: Command): void {
  const k = cli.command('knowledge').description("a tenant's knowledge sources on a running server: documents agents answer from (docs/knowledge.md)");
  remoteOptions(
    k
      .command('add')
      .description(
        'upload a file (PDF, DOCX, HTML, Markdown or text) as a knowledge source, or a new file of one, and wait until it is read; or add a web page or a site (a URL) and wait for its first sync',
      )
      .argument('<file|url>', 'the document, or an http(s) URL: a page, a sitemap, or the page to follow links from')
      .option('--name <name>', 'the source name (default: from the file name, or the URL)')
      .option('--title <title>', "shown in citations (default: the document's own)")
      .option('--link <url>', 'a file: where readers find the document, the link citations give')
      .option('--language <tag>', 'its language (BCP 47, e.g. en)')
      .option('--tags <tags>', 'comma-separated tags agents may select it by')
      .option('--crawl <how>', 'a URL: page, sitemap (default for a .xml URL) or links')
      .option('--depth <n>', 'a URL crawled by links: how many links deep (default 2)', versionNumber)
      .option('--max-pages <n>', 'a URL: the most pages kept (default 100)', versionNumber)
      .option('--schedule <when>', 'a URL: hourly, daily (default), weekly or never')
      .option('--no-wait', 'return once added, without waiting for it to be read or synced'),
  ).action(add);
  remoteOptions(
    k
      .command('sync')
      .description('sync a web source now and wait for it: pages changed since the last sync are read again, the others cost a request each')
      .argument('<name>', 'the source')
      .option('--no-wait', 'return once queued'),
  ).action((name: string, o: RemoteOptions & { wait: boolean }) => syncSite(name, o, describeSource));
  remoteOptions(
    k.command('pages').description("list a web source's pages: each one's state, passages, last fetch and error").argument('<name>', 'the source'),
  ).action(listPages);
  remoteOptions(
    k.command('list').description("list the tenant's knowledge sources and their state").option('--tag <tag>', 'only sources with this tag'),
  ).action(list);
  remoteOptions(
    k
      .command('show')
      .description('show a knowledge source: its state, file, pages and passages')
      .argument('<name>', 'the source')
      .option('--passages <n>', 'print its first n passages', versionNumber, 0),
  ).action(show);
  remoteOptions(
    k
      .command('search')
      .description('search the knowledge sources as an answer phase does: the best passages and their confidence')
      .argument('<question>', 'the question')
      .option('--sources <list>', 'comma-separated source names and tag:<tag> (default: every source)')
      .option('--limit <n>', 'how many passages', versionNumber, 5),
  ).action(search);
  remoteOptions(k.command('rm').description('delete a knowledge source: its passages stop answering at once').argument('<name>', 'the source')).action(remove);
  registerCalibrate(k);
}
