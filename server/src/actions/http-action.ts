// Makes the HTTP calls of actions: guarded against SSRF at connect time (every redirect hop
// too), cut at a timeout and a response size, retried with backoff on timeouts, network errors
// and 5xx, and reported with secrets masked and bodies cut at 4 KiB for the audit log.
import pRetry, { AbortError } from 'p-retry';
import { request, type Dispatcher } from 'undici';
import type { ActionResult, AuditDraft } from '../domain.js';
import type { ActionRequest } from '../engine/run.js';
import { BlockedAddressError, guardedDispatcher } from './ssrf.js';

export const AUDIT_BODY_LIMIT = 4096;

export interface HttpActionOptions {
  allowedHosts: readonly string[];
  secrets: Readonly<Record<string, string>>;
  maxResponseBytes: number;
  /** First retry delay; doubles per attempt. */
  retryBaseMs?: number;
}

type Outcome = 'ok' | 'http_error' | 'timeout' | 'network_error' | 'blocked';

class HttpStatusError extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    super(`HTTP ${status}`);
  }
}
class TooLargeError extends Error {}

export class HttpActionRunner {
  private readonly dispatcher: Dispatcher;
  private readonly secretValues: string[];

  constructor(private readonly opts: HttpActionOptions) {
    this.dispatcher = guardedDispatcher(opts.allowedHosts, { maxRedirections: 3 });
    // Longest first, so a secret that contains another is masked whole.
    this.secretValues = Object.values(opts.secrets)
      .filter((v) => v.length >= 4)
      .sort((a, b) => b.length - a.length);
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  /** Runs one action call to completion (all attempts) and returns its result and audit entry. */
  async run(req: ActionRequest, meta: { turnIndex: number; now: () => string }): Promise<{ result: ActionResult; audit: AuditDraft }> {
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
            return await this.once(url!, req.method, headers, body, req.action.timeoutMs);
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
        } else if (isTimeout(err)) {
          outcome = 'timeout';
        } else if (err instanceof TooLargeError) {
          outcome = 'http_error';
        } else {
          outcome = 'network_error';
        }
        error = this.mask(err.message || String(err));
      }
    }

    const result: ActionResult = response
      ? { ok: outcome === 'ok', status: response.status, body: response.body }
      : { ok: false, status: 0, body: null };
    const audit: AuditDraft = {
      type: 'action_call',
      turnIndex: meta.turnIndex,
      timestamp: startedAt,
      durationMs: round(performance.now() - started),
      data: {
        action: req.action.name,
        request: {
          method: req.method,
          url: this.mask(req.url),
          headers: this.maskDeep(headers) as Record<string, string>,
          ...(req.body !== undefined && body !== undefined ? { body: cut(this.maskDeep(req.body)) } : {}),
        },
        response: response ? { status: response.status, body: cut(this.maskDeep(response.body)) } : null,
        outcome,
        attempts,
        ...(error ? { error } : {}),
      },
    };
    return { result, audit };
  }

  private async once(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number) {
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, { method: method as Dispatcher.HttpMethod, headers, body, signal, dispatcher: this.dispatcher });
    } catch (e) {
      if (e instanceof BlockedAddressError || (e as Error)?.cause instanceof BlockedAddressError) {
        throw new AbortError(e instanceof BlockedAddressError ? e : ((e as Error).cause as Error));
      }
      throw e;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > this.opts.maxResponseBytes) {
        res.body.destroy();
        throw new AbortError(new TooLargeError(`response larger than ${this.opts.maxResponseBytes} bytes`));
      }
      chunks.push(chunk as Buffer);
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

  mask(s: string): string {
    let out = s;
    for (const v of this.secretValues) out = out.split(v).join('***');
    return out;
  }

  maskDeep(v: unknown): unknown {
    if (typeof v === 'string') return this.mask(v);
    if (Array.isArray(v)) return v.map((x) => this.maskDeep(x));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: this.maskDeep(x), enumerable: true, writable: true, configurable: true });
      return out;
    }
    return v;
  }
}

function unwrap(e: unknown): Error {
  const err = e as Error & { originalError?: Error };
  return err?.originalError ?? err;
}

function isTimeout(err: Error): boolean {
  return err.name === 'TimeoutError' || err.name === 'AbortError' || (err as { code?: string }).code === 'UND_ERR_CONNECT_TIMEOUT' || (err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' || (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
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
