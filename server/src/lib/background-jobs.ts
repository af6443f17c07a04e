// Work a request starts and leaves running in this process (replays, evaluations): each job can
// be waited for, and shutdown asks every one to stop and waits for them. A job reads `stop`
// between its steps and ends itself, recording why.
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

  /** Whether this process runs job `id` now. */
  has(id: string): boolean {
    return this.jobs.has(id);
  }

  /** Resolves when job `id` has finished (at once when this process does not run it). */
  finished(id: string): Promise<void> {
    return this.jobs.get(id)?.done ?? Promise.resolve();
  }

  /** Asks every job to stop, and waits for them. */
  async close(): Promise<void> {
    for (const job of this.jobs.values()) job.stop = true;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }
}
