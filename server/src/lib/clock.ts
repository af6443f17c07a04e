// The service's only clock; tests inject their own.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const iso = (d: Date) => d.toISOString();

/** Milliseconds since `from` (a performance.now() reading), to two decimals: a duration as the audit records it. */
export const msSince = (from: number) => Math.round((performance.now() - from) * 100) / 100;
