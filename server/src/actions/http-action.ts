// Makes the HTTP calls of actions: guarded against SSRF at connect time (every redirect hop
// too), cut at a timeout and a response size, retried with backoff on timeouts, network errors
// and 5xx, and reported with secrets masked and bodies cut at 4 KiB for the audit log.
import pRetry, { AbortError } from 'p-retry';
import { request, type Dispatcher } from 'undici';
import type { ActionResult, AuditDraft } from '../domain.js';
import type { ActionRequest } from '../engine/run.js';
import { SECRET_MASK } from '../engine/compile.js';
import { BlockedAddressError, guardedDispatcher, type Lookup } from './ssrf.js';
import { withRedactedUrl } from '../lib/tracer.js';

const AUDIT_BODY_LIMIT = 4096;

export interface HttpActionOptions {
  /** Hosts each tenant may reach although they are private (`*`: every tenant). */
  allowedHosts: HostGrants;
  maxResponseBytes: number;
  /** First retry delay; doubles per attempt. */
  retryBaseMs?: number;
  /** The operator's log: blocked calls are reported there with the detail the audit entry leaves out. */
  log?: { warn(o: object, m: string): void };
  /** How calls resolve names (the system's getaddrinfo by default; tests give one whose name server never answers). */
  lookup?: Lookup;
}

/** Tenant → `host` or `host:port` entries; the `*` entry applies to every tenant. */
export type HostGrants = Readonly<Record<string, readonly string[]>>;

/** The hosts one tenant may reach although they are private: its own grants and everyone's. */
export function hostsFor(grants: HostGrants, tenantId: string): string[] {
  return [...new Set([...(grants['*'] ?? []), ...(grants[tenantId] ?? [])])].sort();
}

/**
 * One guarded dispatcher per distinct allow-list, shared by the tenants that have the same one
 * (most have none), so a tenant's connections only ever reach what it was granted.
 */
export class DispatcherPool {
  private readonly byList = new Map<string, Dispatcher>();
  constructor(
    private readonly grants: HostGrants,
    private readonly opts: { maxRedirections?: number; lookup?: Lookup } = {},
  ) {}
  for(tenantId: string): Dispatcher {
    const hosts = hostsFor(this.grants, tenantId);
    const key = hosts.join(',');
    let d = this.byList.get(key);
    if (!d) {
      d = guardedDispatcher(hosts, this.opts);
      this.byList.set(key, d);
    }
    return d;
  }
  async close(): Promise<void> {
    await Promise.all([...this.byList.values()].map((d) => d.close()));
    this.byList.clear();
  }
}

type Outcome = 'ok' | 'http_error' | 'timeout' | 'network_error' | 'blocked';

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}
class TooLargeError extends Error {}

export class HttpActionRunner {
  private readonly dispatchers: DispatcherPool;

  constructor(private readonly opts: HttpActionOptions) {
    this.dispatchers = new DispatcherPool(opts.allowedHosts, { maxRedirections: 3, lookup: opts.lookup });
  }

  async close(): Promise<void> {
    await this.dispatchers.close();
  }

  /**
   * Runs one action call to completion (all attempts) and returns its result and audit entry.
   * The result (which the flow may say) and the audit entry never carry the request's secrets:
   * the entry shows the request as rendered with masks, and what comes back has every secret
   * value, in the forms an echoing server would return it, replaced by the mask.
   */
  async run(
    req: ActionRequest,
    /** `traced`: the URL as a trace may show it (secrets already masked; personal data masked by the tenant's privacy policy). */
    meta: { tenantId: string; turnIndex: number; now: () => string; traced?: (url: string) => string },
  ): Promise<{ result: ActionResult; audit: AuditDraft }> {
    const masker = new Masker(req.secretValues);
    const started = performance.now();
    const startedAt = meta.now();
    let attempts = 0;
    let outcome: Outcome = 'ok';
    let response: { status: number; body: unknown } | null = null;
    let error: string | undefined;

    const headers: Record<string, string> = { 'user-agent': 'switchboard-actions/1', ...req.headers };
    let body: string | undefined;
    if (req.body !== undefined && !['GET', 'DELETE'].includes(req.method)) {
      body = JSON.stringify(req.body);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    }

    let url: URL | null = null;
    try {
      url = new URL(req.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('only http and https URLs');
    } catch (e) {
      url = null;
      outcome = 'blocked';
      error = `invalid URL: ${(e as Error).message}`;
    }

    if (url) {
      try {
        response = await pRetry(
          async () => {
            attempts++;
            // Traced as the audit log shows it: secrets masked.
            return await withRedactedUrl(meta.traced ? meta.traced(req.masked.url) : req.masked.url, () =>
              this.once(url, req.method, headers, body, req.action.timeoutMs, meta.tenantId),
            );
          },
          {
            retries: req.action.retries,
            minTimeout: this.opts.retryBaseMs ?? 200,
            factor: 2,
            maxTimeout: 5_000,
            randomize: true,
            shouldRetry: (err) => retryable(err),
          },
        );
      } catch (e) {
        const err = unwrap(e);
        if (err instanceof HttpStatusError) {
          outcome = 'http_error';
          response = { status: err.status, body: err.body };
        } else if (err instanceof BlockedAddressError) {
          outcome = 'blocked';
          this.opts.log?.warn(
            { tenant: meta.tenantId, action: req.action.name, host: err.host, detail: err.detail },
            'action blocked by the SSRF guard: grant the host to the tenant in ACTION_ALLOWED_HOSTS if it should be reachable',
          );
        } else if (isTimeout(err)) {
          outcome = 'timeout';
        } else if (err instanceof TooLargeError) {
          outcome = 'http_error';
        } else {
          outcome = 'network_error';
        }
        error = masker.text(err.message || String(err));
      }
    }

    const answered = response ? { status: response.status, body: masker.deep(response.body) } : null;
    const result: ActionResult = answered ? { ok: outcome === 'ok', status: answered.status, body: answered.body } : { ok: false, status: 0, body: null };
    const shownHeaders: Record<string, string> = { 'user-agent': headers['user-agent'], ...req.masked.headers };
    if (headers['content-type'] && !shownHeaders['content-type']) shownHeaders['content-type'] = headers['content-type'];
    const audit: AuditDraft = {
      type: 'action_call',
      turnIndex: meta.turnIndex,
      timestamp: startedAt,
      durationMs: round(performance.now() - started),
      data: {
        action: req.action.name,
        request: {
          method: req.method,
          url: req.masked.url,
          headers: shownHeaders,
          ...(req.body !== undefined && body !== undefined ? { body: cut(req.masked.body) } : {}),
        },
        response: answered ? { status: answered.status, body: cut(answered.body) } : null,
        outcome,
        attempts,
        ...(error ? { error } : {}),
        ...(req.via ? { via: req.via } : {}),
      },
    };
    return { result, audit };
  }

  private async once(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, tenantId: string) {
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Dispatcher.ResponseData;
    try {
      // undici does not abort a request whose connection is still being made (the guard's DNS
      // lookup under way): the action's timeout bounds that wait here, lookup included.
      res = await untilAborted(request(url, { method: method, headers, body, signal, dispatcher: this.dispatchers.for(tenantId) }), signal);
    } catch (e) {
      if (e instanceof BlockedAddressError || (e instanceof Error && e.cause instanceof BlockedAddressError)) {
        throw new AbortError(e instanceof BlockedAddressError ? e : (e.cause as Error));
      }
      throw e;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.opts.maxResponseBytes) {
        res.body.destroy();
        throw new AbortError(new TooLargeError(`response larger than ${this.opts.maxResponseBytes} bytes`));
      }
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const type = String(res.headers['content-type'] ?? '');
    let parsed: unknown = text;
    if (/json/i.test(type) || /^\s*[[{]/.test(text)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (res.statusCode >= 500) throw new HttpStatusError(res.statusCode, parsed);
    if (res.statusCode >= 300) throw new AbortError(new HttpStatusError(res.statusCode, parsed));
    return { status: res.statusCode, body: parsed };
  }
}

/**
 * Replaces secret values in what a server sent back, as they are and in the encodings an echo
 * would use (URL-encoded, base64, upper and lower case). Searching the output can only catch
 * forms it knows; that is why requests are recorded from a masked rendering instead, and this
 * is the second line for responses, which the service does not render.
 */
class Masker {
  private readonly forms: string[];
  constructor(values: readonly string[]) {
    const forms = new Set<string>();
    for (const v of values) {
      if (!v) continue;
      for (const f of [v, encodeURIComponent(v), Buffer.from(v).toString('base64'), Buffer.from(v).toString('base64url'), v.toUpperCase(), v.toLowerCase()]) {
        if (f) forms.add(f);
      }
    }
    // Longest first, so a form that contains another is masked whole.
    this.forms = [...forms].sort((a, b) => b.length - a.length);
  }

  text(s: string): string {
    let out = s;
    for (const f of this.forms) out = out.split(f).join(SECRET_MASK);
    return out;
  }

  deep(v: unknown): unknown {
    if (!this.forms.length) return v;
    if (typeof v === 'string') return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.deep(x));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v))
        Object.defineProperty(out, this.text(k), { value: this.deep(x), enumerable: true, writable: true, configurable: true });
      return out;
    }
    return v;
  }
}

function unwrap(e: unknown): Error {
  const original = typeof e === 'object' && e !== null ? (e as { originalError?: unknown }).originalError : undefined;
  return (original ?? e) as Error;
}

/** `p`, or the signal's reason once it aborts, whichever comes first. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function isTimeout(err: Error): boolean {
  return (
    err.name === 'TimeoutError' ||
    err.name === 'AbortError' ||
    (err as { code?: string }).code === 'UND_ERR_CONNECT_TIMEOUT' ||
    (err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' ||
    (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT'
  );
}

function retryable(err: Error): boolean {
  return !(err instanceof BlockedAddressError || err instanceof TooLargeError);
}

/** A body for the audit log: as it is when its JSON fits in 4 KiB, else its JSON cut there. */
function cut(v: unknown): unknown {
  if (v === undefined) return null;
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  if (s.length <= AUDIT_BODY_LIMIT) return v;
  return `${s.slice(0, AUDIT_BODY_LIMIT)}…[cut at ${AUDIT_BODY_LIMIT} of ${s.length} characters]`;
}

const round = (ms: number) => Math.round(ms * 100) / 100;
