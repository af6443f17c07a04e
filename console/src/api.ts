// Calls through the typed client: a response other than the expected status becomes an ApiError
// with the server's problem document, which the pages show with what to do about it.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { SwitchboardError, type Problem } from '@switchboard/client';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem>,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
  }
}

/** The body of a response with the expected status (200 unless given); an ApiError otherwise. */
export function ok<R extends { status: number; body: unknown }>(res: R): Extract<R, { status: 200 }>['body'];
export function ok<R extends { status: number; body: unknown }, S extends R['status']>(res: R, expected: S): Extract<R, { status: S }>['body'];
export function ok(res: { status: number; body: unknown }, expected = 200): unknown {
  if (res.status === expected) return res.body;
  const body = res.body as Partial<Problem> | undefined;
  throw new ApiError(res.status, body && typeof body === 'object' ? body : { detail: `HTTP ${res.status}` });
}

/** Every item of a paged list, page after page (`next_cursor`), up to `maxPages` pages. */
export async function allPages<T>(page: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor: string | null }>, maxPages = 20): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const p = await page(cursor);
    out.push(...p.data);
    if (!p.next_cursor) break;
    cursor = p.next_cursor;
  }
  return out;
}

/** Turns anything thrown by a call into the problem a page shows. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof SwitchboardError) return new ApiError(err.status, err.problem);
  // fetch rejects with a TypeError when the server cannot be reached.
  return new ApiError(0, { title: 'No answer', detail: err instanceof Error ? err.message : String(err) });
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Loads `fn()` when the dependencies change; `reload()` loads again and keeps what is shown meanwhile. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (err: unknown) => mine === seq.current && setState((s) => ({ data: s.data, error: asApiError(err), loading: false })),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Calls `fn` every `ms` while the page is visible. */
export function useInterval(fn: () => void, ms: number | null): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (ms === null) return;
    const id = setInterval(() => document.visibilityState === 'visible' && saved.current(), ms);
    return () => clearInterval(id);
  }, [ms]);
}

/** An action a user starts (a form sent, a button pressed): busy while it runs, its failure as a problem to show. */
export function useAction(): { busy: boolean; error: ApiError | null; run: (fn: () => Promise<void>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run };
}
