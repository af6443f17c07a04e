// The service's only clock; tests inject their own.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const iso = (d: Date) => d.toISOString();
