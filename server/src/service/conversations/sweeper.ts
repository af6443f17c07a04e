// Runs the lifecycle sweep (abandonment after inactivity, retention) every interval, one pass
// at a time; with several processes each conversation is still swept once (LifecycleService.sweep).
// Ended sessions and abandoned sign-ins of people are deleted in the same pass.
import type { Logger } from 'pino';
import type { LifecycleService } from './lifecycle.js';

export class Sweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly lifecycle: LifecycleService,
    private readonly log: Pick<Logger, 'info' | 'warn'>,
    private readonly people?: { sweep(): Promise<void> },
  ) {}

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.lifecycle
        .sweep()
        .then(
          (r) =>
            (r.abandoned || r.erased || r.expiredKeys || r.partitionsMade.length || r.historyDropped.partitions.length || r.historyDropped.rows) &&
            this.log.info(r, 'sweep'),
        )
        .then(() => this.people?.sweep())
        .catch((err: unknown) => this.log.warn({ err }, 'sweep failed'))
        .finally(() => (this.running = null));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
