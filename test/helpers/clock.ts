// A clock the test moves by hand: nothing sleeps for a timeout.
import type { Clock } from '../../server/src/lib/clock.js';

export class FakeClock implements Clock {
  private t: number;
  constructor(start = '2026-11-22T10:00:00.000Z') {
    this.t = Date.parse(start);
  }
  now(): Date {
    return new Date(this.t);
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
