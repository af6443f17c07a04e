// Background work of one kind in flight in this process, keyed by job: at most `total` jobs at
// once and `perTenant` of one tenant, asked before each start (a worker's pass polls for room
// rather than queueing, unlike fair-gate.ts, which makes callers wait their turn).

export class Lane {
  readonly jobs = new Map<string, Promise<void>>();
  private readonly perTenant = new Map<string, number>();

  constructor(private readonly limits: { total: number; perTenant: number }) {}

  get free(): number {
    return this.limits.total - this.jobs.size;
  }

  room(tenantId: string): boolean {
    return this.free > 0 && (this.perTenant.get(tenantId) ?? 0) < this.limits.perTenant;
  }

  /** Jobs in flight by tenant (a copy). */
  counts(): Map<string, number> {
    return new Map(this.perTenant);
  }

  /** Runs `work` (which never rejects) in a slot; `after` runs once the slot is free again. */
  run(key: string, tenantId: string, work: () => Promise<void>, after: () => void): void {
    this.perTenant.set(tenantId, (this.perTenant.get(tenantId) ?? 0) + 1);
    const done = work().finally(() => {
      this.jobs.delete(key);
      const n = (this.perTenant.get(tenantId) ?? 1) - 1;
      if (n > 0) this.perTenant.set(tenantId, n);
      else this.perTenant.delete(tenantId);
      after();
    });
    this.jobs.set(key, done);
  }
}
