// `agents knowledge add URL`, `knowledge sync` and `knowledge pages` (docs/knowledge.md, "A web
// page or a site"): a web source set on a running server, its sync followed on stderr (state,
// pages and passages as they come), the outcome and any page that failed on stdout.
import { siteNameOf, type KnowledgeSource } from '@switchboard/contract';
import { follow } from './replay.js';
import { describeFailure, reach, remoteClient, sameServer, type RemoteOptions } from './remote.js';

export interface SiteOptions extends RemoteOptions {
  name?: string;
  title?: string;
  language?: string;
  tags?: string;
  crawl?: 'page' | 'sitemap' | 'links';
  depth?: number;
  maxPages?: number;
  schedule?: 'hourly' | 'daily' | 'weekly' | 'never';
  wait: boolean;
}

/** The lines that say what a web source fetches and when. */
export function describeSite(s: KnowledgeSource): string[] {
  if (!s.site) return [];
  const how =
    s.site.crawl === 'links'
      ? `links ${s.site.depth} deep, at most ${s.site.max_pages} pages`
      : s.site.crawl === 'sitemap'
        ? `sitemap, at most ${s.site.max_pages} pages`
        : 'one page';
  return [
    `  site       ${s.site.url} (${how})`,
    `  schedule   ${s.schedule ?? 'never'}; next sync ${s.next_sync_at ?? 'when asked'}`,
    `  fetched    ${s.fetched_at ?? 'never'}; last changed ${s.changed_at ?? 'never'}`,
  ];
}

/** Waits for a web source's sync, showing its state, pages and passages as they come. */
async function followSync(o: RemoteOptions, name: string): Promise<KnowledgeSource> {
  const sb = remoteClient(o);
  const read = async () => {
    const got = await reach(o, () => sb.api.getSource({ params: { source: name } }));
    if (got.status !== 200) throw new Error(describeFailure(o, got.status, got.body));
    return { ...got.body, status: got.body.state === 'queued' || got.body.state === 'fetching' ? 'running' : got.body.state };
  };
  return follow(read, (s) => `syncing ${name}: ${s.state}, ${s.pages ?? 0} pages, ${s.passages} passages`);
}

/** What a finished sync says: the source, then each page that failed. */
async function report(o: RemoteOptions, s: KnowledgeSource, describe: (s: KnowledgeSource) => string[]): Promise<void> {
  for (const line of describe(s)) console.log(line);
  const sb = remoteClient(o);
  const p = await reach(o, () => sb.api.listPages({ params: { source: s.name }, query: { limit: 200 } }));
  if (p.status !== 200) throw new Error(describeFailure(o, p.status, p.body));
  const failed = p.body.data.filter((x) => x.state === 'failed');
  for (const x of failed) console.log(`  failed     ${x.url}: ${x.error ?? '?'} (${x.failures} in a row)`);
  if (s.state === 'failed') process.exitCode = 1;
}

export async function addSite(url: string, o: SiteOptions, describe: (s: KnowledgeSource) => string[]): Promise<void> {
  const name = o.name ?? siteNameOf(url);
  const crawl = o.crawl ?? (/\.xml(\.gz)?$/i.test(new URL(url).pathname) ? 'sitemap' : 'page');
  const sb = remoteClient(o);
  const put = await reach(o, () =>
    sb.api.putSite({
      params: { source: name },
      body: {
        url,
        crawl,
        ...(o.depth !== undefined ? { depth: o.depth } : {}),
        ...(o.maxPages !== undefined ? { max_pages: o.maxPages } : {}),
        ...(o.schedule ? { schedule: o.schedule } : {}),
        ...(o.title ? { title: o.title } : {}),
        ...(o.language ? { language: o.language } : {}),
        tags: (o.tags ?? '')
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      },
    }),
  );
  if (put.status !== 202) throw new Error(describeFailure(o, put.status, put.body));
  console.log(`added ${url} as knowledge source ${name} (${crawl}, synced ${put.body.schedule}), revision ${put.body.revision}`);
  if (!o.wait) {
    console.log(`syncing it in the background: npm run agents -- knowledge show ${name}${sameServer(o)}`);
    return;
  }
  await report(o, await followSync(o, name), describe);
}

export async function syncSite(name: string, o: RemoteOptions & { wait: boolean }, describe: (s: KnowledgeSource) => string[]): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.syncSource({ params: { source: name } }));
  if (r.status !== 202) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`knowledge source ${name}: ${r.body.state === 'fetching' ? 'a sync is already under way' : 'queued for a sync now'}`);
  if (o.wait) await report(o, await followSync(o, name), describe);
}

export async function listPages(name: string, o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  let n = 0;
  for (let cursor: string | undefined; ;) {
    const r = await reach(o, () => sb.api.listPages({ params: { source: name }, query: { limit: 200, ...(cursor ? { cursor } : {}) } }));
    if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
    for (const p of r.body.data) {
      if (n++ === 0) console.log(`${'state'.padEnd(6)}  ${'passages'.padStart(8)}  ${'fetched'.padEnd(24)}  url`);
      console.log(`${p.state.padEnd(6)}  ${String(p.passages).padStart(8)}  ${(p.fetched_at ?? '—').padEnd(24)}  ${p.url}${p.error ? `  (${p.error})` : ''}`);
    }
    if (!r.body.next_cursor) break;
    cursor = r.body.next_cursor;
  }
  if (n === 0) console.log(`${name} has no pages (a file, or a web source not synced yet)`);
}
