// Work a request starts and leaves running in this process (replays, evaluations): each job can
// be waited for, and shutdown asks every one to stop and waits for them. A job reads `stop`
// between its steps and ends itself, recording why.
/** A running job whose row has not moved for this long belonged to a process that stopped. */
const STALE_MS = 10 * 60 * 1000;

export interface JobControl {
  readonly stop: boolean;
}

export class BackgroundJobs {
  private readonly jobs = new Map<string, { stop: boolean; done: Promise<void> }>();

  /** Runs `work` in the background under `id`; it is forgotten once it settles. */
  start(id: string, work: (job: JobControl) => Promise<void>): void {
    const job = { stop: false, done: Promise.resolve() };
    this.jobs.set(id, job);
    job.done = work(job).finally(() => this.jobs.delete(id));
  }

  /** Resolves when job `id` has finished (at once when this process does not run it). */
  finished(id: string): Promise<void> {
    return this.jobs.get(id)?.done ?? Promise.resolve();
  }

  /** The time after which a running job's row must have moved for the job to count as running (ISO 8601). */
  static liveSince(now: Date): string {
    return new Date(now.getTime() - STALE_MS).toISOString();
  }

  /** Whether a job stored as running belonged to a process that stopped: its row has not moved, and this process does not run it. */
  stopped(row: { id: string; status: string; updatedAt: string }, now: Date): boolean {
    return row.status === 'running' && Date.parse(row.updatedAt) < now.getTime() - STALE_MS && !this.jobs.has(row.id);
  }

  /** Asks every job to stop, and waits for them. */
  async close(): Promise<void> {
    for (const job of this.jobs.values()) job.stop = true;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }
}
