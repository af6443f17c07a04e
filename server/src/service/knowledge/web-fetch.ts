// What web knowledge sources fetch, and how (docs/knowledge.md, "A web page or a site"): every
// request goes through the tenant's guarded dispatcher (the SSRF guard and allow-list actions
// use), redirects are followed here (at most MAX_REDIRECTS, a loop named as one), a body is read
// up to a byte cap within a time limit (a server that sends forever meets one or the other), and
// conditional requests carry the page's ETag and Last-Modified. robots.txt is read by
// robots-parser (RFC 9309), sitemaps by the sitemap package's streaming parser (stopped at a
// count, so a sitemap of a million URLs costs what its first ones do), a page's links by
// htmlparser2's streaming parser.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Readable } from 'node:stream';
import { gunzip } from 'node:zlib';
import { Parser } from 'htmlparser2';
import robotsParserModule from 'robots-parser';
import { XMLToSitemapIndexStream, XMLToSitemapItemStream, ErrorLevel } from 'sitemap';
import { request, type Dispatcher } from 'undici';
import { BlockedAddressError } from '../../actions/ssrf.js';

/** The user agent robots.txt rules are matched against, and requests name. */
const USER_AGENT = 'SwitchboardBot';
const UA_HEADER = `${USER_AGENT}/1 (knowledge sync; +https://github.com/switchboard)`;
const MAX_REDIRECTS = 5;
/** RFC 9309 asks crawlers to read at least 500 KiB of a robots.txt; more is ignored. */
const ROBOTS_MAX_BYTES = 512 * 1024;
/** Child sitemaps of a sitemap index read at most. */
const MAX_CHILD_SITEMAPS = 50;
/** Links taken from one page at most. */
const MAX_LINKS = 2000;
/** Characters of a page read for its links (a link past them is not followed). */
const LINKS_CHARS = 4 * 1024 * 1024;
/**
 * Text is parsed on the event loop a slice at a time, yielding between slices, so that a large
 * sitemap or page never holds up other requests; a sitemap read stops once it has its URLs.
 */
const SLICE = 64 * 1024;

async function* slices(text: string): AsyncGenerator<string> {
  for (let i = 0; i < text.length; i += SLICE) {
    yield text.slice(i, i + SLICE);
    await yieldToLoop();
  }
}
const gunzipAsync = promisify(gunzip);
// robots-parser is CommonJS (`module.exports = function`) while its types declare a default export.
const robotsParser = robotsParserModule as unknown as (typeof robotsParserModule)['default'];

/** A fetch that failed, with a reason a person can act on. */
export class FetchError extends Error {}

export interface FetchOptions {
  dispatcher: Dispatcher;
  /** The whole request, body included. */
  timeoutMs: number;
  maxBytes: number;
  etag?: string | null;
  lastModified?: string | null;
  signal?: AbortSignal;
}

export interface Fetched {
  /** The URL answered, after redirects. */
  url: string;
  status: number;
  etag: string | null;
  lastModified: string | null;
  contentType: string | null;
  /** The body of a 2xx answer; null otherwise (304 included). */
  body: Uint8Array | null;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function describe(err: unknown, url: string, timeoutMs: number): FetchError {
  if (err instanceof FetchError) return err;
  if (err instanceof BlockedAddressError || (err as { cause?: unknown }).cause instanceof BlockedAddressError) {
    return new FetchError(`${new URL(url).host} is not reachable (an unknown host, or an address this tenant may not reach: ACTION_ALLOWED_HOSTS)`);
  }
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
    return new FetchError(`${url} did not answer in full within ${timeoutMs} ms`);
  }
  return new FetchError(`${url} could not be fetched (${e.code ?? e.message ?? 'network error'})`);
}

/** GETs `url` (redirects followed, each hop guarded), its body cut at `maxBytes`. */
export async function fetchUrl(url: string, o: FetchOptions): Promise<Fetched> {
  // Aborted at the time limit or when the caller stops, and never after this fetch has ended
  // (an abort then would reach a body nobody reads any more).
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(Object.assign(new Error('time limit'), { name: 'TimeoutError' })), o.timeoutMs);
  const stop = () => ctl.abort(o.signal?.reason);
  o.signal?.addEventListener('abort', stop, { once: true });
  const signal = ctl.signal;
  const seen = [url];
  let current = url;
  try {
    for (;;) {
      const headers: Record<string, string> = { 'user-agent': UA_HEADER, accept: '*/*' };
      if (o.etag) headers['if-none-match'] = o.etag;
      if (o.lastModified) headers['if-modified-since'] = o.lastModified;
      const res = await request(current, { dispatcher: o.dispatcher, method: 'GET', headers, signal });
      const header = (name: string): string | null => {
        const v = res.headers[name];
        return (Array.isArray(v) ? v[0] : v) ?? null;
      };
      if (REDIRECTS.has(res.statusCode) && header('location')) {
        await res.body.dump();
        const next = new URL(header('location')!, current);
        if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new FetchError(`${current} redirects to a ${next.protocol} URL`);
        next.hash = '';
        if (seen.includes(next.href)) throw new FetchError(`${url} redirects in a loop (${[...seen, next.href].join(' → ')})`);
        if (seen.length > MAX_REDIRECTS) throw new FetchError(`${url} redirects more than ${MAX_REDIRECTS} times`);
        seen.push(next.href);
        current = next.href;
        continue;
      }
      const base = { url: current, status: res.statusCode, etag: header('etag'), lastModified: header('last-modified'), contentType: header('content-type') };
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump();
        return { ...base, body: null };
      }
      const declared = Number(header('content-length'));
      if (declared > o.maxBytes) {
        res.body.destroy();
        throw new FetchError(`${current} is ${declared} bytes, more than the ${o.maxBytes} allowed (KNOWLEDGE_MAX_FILE_MB)`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > o.maxBytes) {
          res.body.destroy();
          throw new FetchError(`${current} sent more than the ${o.maxBytes} bytes allowed (KNOWLEDGE_MAX_FILE_MB)`);
        }
        chunks.push(chunk);
      }
      return { ...base, body: new Uint8Array(Buffer.concat(chunks, size)) };
    }
  } catch (err) {
    throw describe(ctl.signal.aborted && ctl.signal.reason instanceof Error ? ctl.signal.reason : err, current, o.timeoutMs);
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', stop);
  }
}

/** What a site's robots.txt allows a crawler named USER_AGENT. */
export interface Robots {
  allowed: (url: string) => boolean;
  /** The site's Crawl-delay, in ms (0 when it names none). */
  delayMs: number;
  /** Why everything is refused, when robots.txt could not be read (RFC 9309: a 5xx or no answer means crawl nothing). */
  refusal: string | null;
}

/** The robots.txt of `url`'s origin: 4xx allows everything; 5xx and no answer refuse everything (RFC 9309 §2.3.1). */
export async function robotsFor(url: string, o: Omit<FetchOptions, 'maxBytes' | 'etag' | 'lastModified'>): Promise<Robots> {
  const where = new URL('/robots.txt', url).href;
  let got: Fetched;
  try {
    got = await fetchUrl(where, { ...o, maxBytes: 8 * ROBOTS_MAX_BYTES });
  } catch (err) {
    const why = `${where} could not be read (${(err as Error).message}), so nothing of the site is fetched (RFC 9309)`;
    return { allowed: () => false, delayMs: 0, refusal: why };
  }
  if (got.status >= 500) {
    const why = `${where} answered HTTP ${got.status}, so nothing of the site is fetched (RFC 9309); try again later`;
    return { allowed: () => false, delayMs: 0, refusal: why };
  }
  if (!got.body) return { allowed: () => true, delayMs: 0, refusal: null };
  const text = Buffer.from(got.body.subarray(0, ROBOTS_MAX_BYTES)).toString('utf8');
  const robots = robotsParser(where, text);
  return {
    // A URL of another origin (a redirect's) is judged by its own robots.txt elsewhere: here, allowed.
    allowed: (u) => robots.isAllowed(u, USER_AGENT) !== false,
    delayMs: Math.max(0, Math.round((robots.getCrawlDelay(USER_AGENT) ?? 0) * 1000)),
    refusal: null,
  };
}

/** The page URLs a sitemap lists (a sitemap index's children read too), the first `max` of them. */
export interface SitemapUrls {
  urls: string[];
  /** The sitemap listed more than `max`. */
  more: boolean;
}

async function textOf(body: Uint8Array, maxBytes: number): Promise<string> {
  // A gzipped sitemap (sitemap.xml.gz), inflated within the byte cap (a gzip bomb stops there).
  if (body[0] === 0x1f && body[1] === 0x8b) {
    try {
      return (await gunzipAsync(body, { maxOutputLength: maxBytes })).toString('utf8');
    } catch (err) {
      throw new FetchError(`the gzipped sitemap could not be inflated within ${maxBytes} bytes (${(err as { code?: string }).code ?? (err as Error).message})`);
    }
  }
  return Buffer.from(body).toString('utf8');
}

/** Items of a sitemap's XML through one of the package's parsers, stopped after `max`. */
async function parseItems(xml: string, parser: XMLToSitemapItemStream | XMLToSitemapIndexStream, max: number): Promise<{ urls: string[]; more: boolean }> {
  const urls: string[] = [];
  const source = Readable.from(slices(xml));
  source.pipe(parser);
  let more = false;
  for await (const item of parser as AsyncIterable<{ url: string }>) {
    if (urls.length >= max) {
      more = true;
      break;
    }
    urls.push(item.url);
  }
  source.destroy();
  parser.destroy();
  return { urls, more };
}

/** The page URLs of the sitemap at `url` (an index's children fetched too), on its own origin only. */
export async function sitemapUrls(url: string, max: number, o: FetchOptions, allowed: (u: string) => boolean): Promise<SitemapUrls> {
  const origin = new URL(url).origin;
  const read = async (at: string): Promise<string> => {
    const got = await fetchUrl(at, o);
    if (!got.body) throw new FetchError(`the sitemap ${at} answered HTTP ${got.status}`);
    return textOf(got.body, o.maxBytes);
  };
  const xml = await read(url);
  const opts = { level: ErrorLevel.SILENT, logger: false as const };
  const isIndex = /<sitemapindex[\s>]/.test(xml.slice(0, 4096));
  if (!isIndex) {
    const got = await parseItems(xml, new XMLToSitemapItemStream(opts), max);
    const urls = got.urls.filter((u) => URL.canParse(u) && new URL(u).origin === origin);
    if (!urls.length && !got.more && !/<urlset[\s>]/.test(xml.slice(0, 4096))) throw new FetchError(`${url} is not a sitemap (no <urlset> or <sitemapindex>)`);
    return { urls, more: got.more };
  }
  const children = await parseItems(xml, new XMLToSitemapIndexStream(opts), MAX_CHILD_SITEMAPS);
  const urls: string[] = [];
  let more = children.more;
  for (const child of children.urls) {
    if (!URL.canParse(child) || new URL(child).origin !== origin || !allowed(child)) continue;
    if (urls.length >= max) {
      more = true;
      break;
    }
    const got = await parseItems(await read(child), new XMLToSitemapItemStream(opts), max - urls.length);
    urls.push(...got.urls.filter((u) => URL.canParse(u) && new URL(u).origin === origin));
    more ||= got.more;
  }
  return { urls: [...new Set(urls)], more };
}

/** An HTML page's links (absolute, without fragments, from its first LINKS_CHARS) and what its robots meta tag asks. */
export async function linksOf(html: string, pageUrl: string): Promise<{ links: string[]; noindex: boolean; nofollow: boolean }> {
  let base = pageUrl;
  const links = new Set<string>();
  let noindex = false;
  let nofollow = false;
  const parser = new Parser(
    {
      onopentag(name, given) {
        const attrs = given as Partial<Record<string, string>>;
        if (name === 'base' && attrs.href && URL.canParse(attrs.href, pageUrl)) base = new URL(attrs.href, pageUrl).href;
        else if (name === 'meta' && /^(robots|switchboardbot)$/i.test(attrs.name ?? '')) {
          const content = (attrs.content ?? '').toLowerCase();
          noindex ||= /\b(noindex|none)\b/.test(content);
          nofollow ||= /\b(nofollow|none)\b/.test(content);
        } else if (name === 'a' && attrs.href && links.size < MAX_LINKS && !/\bnofollow\b/i.test(attrs.rel ?? '')) {
          if (!URL.canParse(attrs.href, base)) return;
          const u = new URL(attrs.href, base);
          if (u.protocol !== 'http:' && u.protocol !== 'https:') return;
          u.hash = '';
          links.add(u.href);
        }
      },
    },
    { decodeEntities: true },
  );
  for await (const slice of slices(html.slice(0, LINKS_CHARS))) parser.write(slice);
  parser.end();
  return { links: [...links], noindex, nofollow };
}
