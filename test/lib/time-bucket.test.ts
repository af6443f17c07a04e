import { describe, expect, it } from 'vitest';
import { TimeBuckets } from '../../server/src/lib/time-bucket.js';

describe('time buckets', () => {
  it('lets a key burst to its capacity, then only what refills, and keeps keys apart', () => {
    let now = 0;
    const b = new TimeBuckets(100, 400, () => now);
    expect(b.available('a')).toBe(400);
    b.charge('a', 450);
    expect(b.available('a')).toBe(0);
    expect(b.available('b')).toBe(400);
    now += 1000; // 100 ms refilled, from -50
    expect(b.available('a')).toBeCloseTo(50);
    now += 10_000;
    expect(b.available('a')).toBe(400);
  });
});
