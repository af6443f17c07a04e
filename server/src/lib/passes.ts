// Passes of a background worker, one at a time: `kick` starts one, or, while one runs, asks for
// another right after it (many kicks meanwhile make one more pass, not many). The outbox and the
// channels' inbound workers start their passes this way.

export class Passes {
  private current: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly pass: () => Promise<unknown>,
    private readonly failed: (err: unknown) => void,
  ) {}

  /** The pass under way, if any (it never rejects). */
  get running(): Promise<void> | null {
    return this.current;
  }

  kick(): void {
    if (this.stopped) return;
    if (this.current) {
      this.again = true;
      return;
    }
    this.current = this.pass()
      .then(
        () => undefined,
        (err: unknown) => this.failed(err),
      )
      .finally(() => {
        this.current = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** No pass starts after this; waits for the one under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.current;
  }
}
