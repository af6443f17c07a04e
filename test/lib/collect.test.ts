// Collections asked for when a cache lets go of memory outside V8's heap (lib/collect.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectGarbage, ReleasedBytes } from '../../server/src/lib/collect.js';
import { AgentService } from '../../server/src/service/agents/agent-service.js';
import { systemClock } from '../../server/src/lib/clock.js';
import type { Database } from '../../server/src/store/db.js';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import { databases } from '../helpers/databases.js';

describe('collectGarbage', () => {
  it('frees a buffer nothing refers to any more', async () => {
    let buffer: Buffer | null = Buffer.alloc(32 * 1048576, 1);
    const ref = new WeakRef(buffer);
    buffer = null;
    // A WeakRef holds its target until the task that made it ends.
    await new Promise((r) => setImmediate(r));
    await collectGarbage();
    await new Promise((r) => setImmediate(r));
    expect(ref.deref()).toBeUndefined();
  });

  it('runs one collection at a time: callers while one runs share it', async () => {
    const a = collectGarbage();
    const b = collectGarbage();
    expect(b).toBe(a);
    await a;
    expect(collectGarbage()).not.toBe(a);
  });
});

describe('ReleasedBytes', () => {
  it('asks for a collection when buffers beyond the cache exceed the slack, looking after every so many bytes let go of', () => {
    let asked = 0;
    let buffers = 150;
    const released = new ReleasedBytes({
      held: () => 100,
      slack: 40,
      checkEvery: 10,
      buffers: () => buffers,
      collect: () => {
        asked++;
        return Promise.resolve();
      },
    });
    released.add(9);
    expect(asked).toBe(0); // not looked yet
    released.add(1);
    expect(asked).toBe(1); // 50 beyond the cache
    buffers = 130;
    released.add(10);
    expect(asked).toBe(1); // 30: within the slack
    buffers = 141;
    released.add(4);
    expect(asked).toBe(1);
    released.add(6);
    expect(asked).toBe(2);
    expect(released.collections).toBe(2);
  });
});

describe('the cache of compiled versions', () => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await databases[0].create());
  });
  afterAll(async () => drop?.());

  it('tells what it evicts, so that it is collected soon after', async () => {
    const sizes: number[] = [];
    const released = { add: (bytes: number) => sizes.push(bytes) } as unknown as ReleasedBytes;
    const def = (n: number) => ({ name: `a${n}`, capabilities: [{ name: 'hello', examples: [`hello number ${n}`], phases: [{ id: 'p', say: 'Hi.' }] }] });
    const sizing = new AgentService(new AgentStore(db), systemClock);
    await sizing.put('sizing', 'agent', def(0) as never);
    const one = sizing.cachedBytes;
    // Room for one version: every version compiled evicts the one before.
    const agents = new AgentService(new AgentStore(db), systemClock, { cacheBytes: Math.ceil(one * 1.5), released });
    for (let n = 0; n < 3; n++) await agents.put('t', `agent-${n}`, def(n) as never);
    expect(sizes).toHaveLength(2);
    for (const s of sizes) expect(Math.abs(s - one)).toBeLessThan(one / 100);
  });
});
