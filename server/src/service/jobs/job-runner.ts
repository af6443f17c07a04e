// The one background-job machine (replays, evaluations; knowledge ingestion next): a request
// starts a job, which runs in the process that started it, writes its progress to its row as it
// goes and its result at the end, and is kept until it expires. What every kind shares is here:
//
// - admission: at most `maxRunning` of a tenant at once, checked and stored under the tenant's
//   lock (store/job-table.ts), so concurrent starts on any replica cannot exceed it; others 429;
// - the stopped-job rule: a job stored as running whose row has not moved for STALE_MS, and that
//   this process does not run, belonged to a process that stopped; it reads as failed, and no
//   longer counts against the tenant's running jobs;
// - failure: a job that throws is recorded as failed with its message and the progress it made;
// - shutdown: `close()` asks every job to stop (the next `check()` throws) and waits for them;
// - reads: get (404 once expired) and list (newest first, a page at a time).
import { AppError, NotFoundError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { decodeCursor, isTimeAndId, pageOf } from '../../lib/cursor.js';
import type { JobProgress, JobRow, JobTable } from '../../store/job-table.js';

/** A running job whose row has not moved for this long belonged to a process that stopped. */
const STALE_MS = 10 * 60 * 1000;
const STOPPED = 'the server running it stopped before it finished';

export interface JobKind {
  /** Its name in messages and logs: "replay", "evaluation". */
  name: string;
  /** The problem code of an id that is not found. */
  notFound: ConstructorParameters<typeof NotFoundError>[0];
  /** How long a job is kept. */
  keepMs: number;
  /** Jobs of one tenant at once. */
  maxRunning: number;
  /** The 429 when the tenant has `maxRunning` running. */
  busy: () => AppError;
}

/** What a running job is handed. */
export interface JobContext {
  /** Throws when the process is stopping: called between steps. */
  check(): void;
  /** Records progress (`check` first); the last progress is what a failure keeps. */
  progress(u: Omit<JobProgress, 'now' | 'status' | 'error'>): Promise<void>;
}

export class JobRunner<Row extends JobRow> {
  private readonly jobs = new Map<string, { stop: boolean; done: Promise<void> }>();

  constructor(
    private readonly kind: JobKind,
    private readonly table: JobTable<Row>,
    private readonly clock: Clock,
    private readonly log: { warn(o: object, m: string): void },
  ) {}

  /** A new job's row, running from now and kept `keepMs`. */
  draft<Extra>(o: { id: string; tenantId: string; agentId: string; version: number; total: number } & Extra) {
    const now = this.clock.now();
    return {
      ...o,
      status: 'running' as const,
      done: 0,
      error: null,
      createdAt: iso(now),
      updatedAt: iso(now),
      expiresAt: iso(new Date(now.getTime() + this.kind.keepMs)),
    };
  }

  /** Expired rows go first; a tenant at `maxRunning` is refused before anything is stored. */
  async precheck(tenantId: string): Promise<void> {
    const now = this.clock.now();
    await this.table.deleteExpired(iso(now));
    if ((await this.table.running(tenantId, this.liveSince())) >= this.kind.maxRunning) throw this.kind.busy();
  }

  /** Stores the job's row if the tenant has room (else the kind's 429). */
  async admit(row: Row): Promise<void> {
    if (!(await this.table.start(row, { maxRunning: this.kind.maxRunning, since: this.liveSince() }))) throw this.kind.busy();
  }

  /** Runs `work` in the background; what it throws is recorded as the job's failure. */
  run(id: string, work: (ctx: JobContext) => Promise<void>): void {
    const job = { stop: false, done: Promise.resolve() };
    let last: Omit<JobProgress, 'now'> = { done: 0 };
    const ctx: JobContext = {
      check: () => {
        if (job.stop) throw new Error(`the server stopped before the ${this.kind.name} finished`);
      },
      progress: async (u) => {
        ctx.check();
        last = { ...last, ...u, columns: { ...last.columns, ...u.columns } };
        await this.table.progress(id, { ...u, now: iso(this.clock.now()) });
      },
    };
    this.jobs.set(id, job);
    job.done = work(ctx)
      .catch(async (err: unknown) => {
        this.log.warn({ err, [this.kind.name]: id }, `${this.kind.name} failed`);
        await this.table
          .progress(id, { ...last, now: iso(this.clock.now()), status: 'failed', error: (err as Error).message })
          .catch((e: unknown) => this.log.warn({ err: e, [this.kind.name]: id }, `${this.kind.name} could not record its failure`));
      })
      .finally(() => this.jobs.delete(id));
  }

  /** Records the job done with its final columns. */
  async complete(id: string, u: Omit<JobProgress, 'now' | 'status' | 'error'>): Promise<void> {
    await this.table.progress(id, { ...u, now: iso(this.clock.now()), status: 'done' });
  }

  /** The job as stored, the stopped-job rule applied; null when there is none or it expired. */
  async find(tenantId: string, agentId: string, id: string): Promise<Row | null> {
    const row = await this.table.get(tenantId, agentId, id);
    if (!row || row.expiresAt < iso(this.clock.now())) return null;
    return this.judged(row);
  }

  /** As `find`, a 404 when there is none. */
  async get(tenantId: string, agentId: string, id: string): Promise<Row> {
    const row = await this.find(tenantId, agentId, id);
    if (!row) throw new NotFoundError(this.kind.notFound, `No ${this.kind.name} ${id}`);
    return row;
  }

  /** An agent's jobs, newest first, a page at a time, each as `view` shows it (a summary, without its result). */
  async list<View>(
    tenantId: string,
    agentId: string,
    q: { limit: number; cursor?: string },
    view: (row: Row) => View,
  ): Promise<{ data: View[]; next_cursor: string | null }> {
    const after = decodeCursor(q.cursor, isTimeAndId);
    const rows = await this.table.list(tenantId, agentId, { limit: q.limit + 1, after, now: iso(this.clock.now()) });
    const { page, next_cursor } = pageOf(rows, q.limit, (last) => [last.createdAt, last.id]);
    return { data: page.map((r) => view(this.judged(r))), next_cursor };
  }

  /** Whether a job stored as running belonged to a process that stopped: its row has not moved, and this process does not run it. */
  stopped(row: Pick<JobRow, 'id' | 'status' | 'updatedAt'>): boolean {
    return row.status === 'running' && Date.parse(row.updatedAt) < Date.parse(this.liveSince()) && !this.jobs.has(row.id);
  }

  /** Resolves when this process's job `id` has finished (at once when it runs elsewhere or is done). */
  finished(id: string): Promise<void> {
    return this.jobs.get(id)?.done ?? Promise.resolve();
  }

  /** Asks every job of this process to stop, and waits for them (each records its failure). */
  async close(): Promise<void> {
    for (const job of this.jobs.values()) job.stop = true;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }

  private judged(row: Row): Row {
    return this.stopped(row) ? { ...row, status: 'failed', error: STOPPED } : row;
  }

  /** The time after which a running job's row must have moved for the job to count as running. */
  private liveSince(): string {
    return new Date(this.clock.now().getTime() - STALE_MS).toISOString();
  }
}
