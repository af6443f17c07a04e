// A tenant's model tokens of the day, as the model gate reserves and settles them: whatever a
// model server reports, the day's total never goes below zero.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LlmUsageStore } from '../../server/src/store/llm-usage-store.js';
import type { Database } from '../../server/src/store/db.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

eachDatabase('llm usage on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await database.create());
  });
  afterAll(async () => drop());

  it('settles a call to what it spent, never below zero, and ignores a delta that is not a whole number', async () => {
    const usage = new LlmUsageStore(db);
    expect(await usage.reserve('t', '2026-11-26', 100, 1000)).toBe(100);
    expect(await usage.settle('t', '2026-11-26', -40)).toBe(60);
    // A reported count of −999,989 would have made the day −999,929: a cap of 1,000 then allows a million.
    expect(await usage.settle('t', '2026-11-26', -1_000_000)).toBe(0);
    expect(await usage.settle('t', '2026-11-26', Number.NaN)).toBe(0);
    expect(await usage.settle('t', '2026-11-26', 2.5)).toBe(0);
    expect(await usage.reserve('t', '2026-11-26', 1000, 1000)).toBe(1000);
    expect(await usage.reserve('t', '2026-11-26', 1, 1000)).toBeNull();
  });
});
