// The fair gate's dispatch order and its waiters' time-outs (lib/fair-gate.ts).
import { describe, expect, it } from 'vitest';
import { FairGate, GateTimeoutError } from '../../server/src/lib/fair-gate.js';

/** Acquires for each key in turn, in this order, and records the order the slots are granted in. */
function queue(gate: FairGate, keys: string[]) {
  const order: string[] = [];
  const releases: (() => void)[] = [];
  const all = keys.map((key) =>
    gate.acquire(key, 10_000).then((release) => {
      order.push(key);
      releases.push(release);
    }),
  );
  return { order, releases, all };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FairGate', () => {
  it('serves keys in turn: with one slot, A three times then B is served A, B, A, A', async () => {
    const gate = new FairGate({ total: 1, perKey: 1 });
    const q = queue(gate, ['A', 'A', 'A', 'B']);
    for (let i = 0; i < 4; i++) {
      await tick();
      expect(q.order).toHaveLength(i + 1);
      q.releases[i]();
    }
    await Promise.all(q.all);
    expect(q.order).toEqual(['A', 'B', 'A', 'A']);
    expect(gate.stats).toEqual({ active: 0, waiting: 0 });
  });

  it('keeps to the total and to each key’s share', async () => {
    const gate = new FairGate({ total: 3, perKey: 2 });
    const q = queue(gate, ['A', 'A', 'A', 'A', 'B', 'C']);
    await tick();
    // A's two, then B: C waits for a slot although it has none of its own.
    expect(q.order).toEqual(['A', 'A', 'B']);
    expect(gate.stats).toEqual({ active: 3, waiting: 3 });
    q.releases[0]();
    await tick();
    // C has waited without being served: it goes before A's third.
    expect(q.order.at(-1)).toBe('C');
    for (let i = 1; i < 6; i++) {
      q.releases[i]?.();
      await tick();
    }
    await Promise.all(q.all);
    expect(q.order.sort()).toEqual(['A', 'A', 'A', 'A', 'B', 'C']);
  });

  it('a waiter that times out leaves the queue, and the slot goes to the next', async () => {
    const gate = new FairGate({ total: 1, perKey: 1 });
    const first = await gate.acquire('A', 1000);
    const late = gate.acquire('B', 30);
    const patient = gate.acquire('C', 10_000);
    await expect(late).rejects.toBeInstanceOf(GateTimeoutError);
    expect(gate.stats).toEqual({ active: 1, waiting: 1 });
    first();
    const release = await patient;
    expect(gate.stats).toEqual({ active: 1, waiting: 0 });
    release();
    release(); // a second call gives back nothing more
    expect(gate.stats).toEqual({ active: 0, waiting: 0 });
    (await gate.acquire('B', 10))();
  });
});
