// WAL checkpoints on their own thread: committed pages reach the database file without the
// server's connection checkpointing, and closing the database leaves no WAL behind.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../server/src/store/db.js';
import { BACKSTOP_AUTOCHECKPOINT_PAGES } from '../../server/src/store/sqlite-checkpointer.js';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Polls `check` every 50 ms until it holds or `ms` pass; answers whether it held. */
async function eventually(check: () => boolean, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) if (check()) return true;
  return check();
}

describe('SQLite checkpoints', () => {
  it('copies committed pages into the database file from another thread, and closes without leaving a WAL', async () => {
    const file = join(dir, 'checkpoints.db');
    const db = openDatabase(`sqlite://${file}`);
    await migrate(db);
    expect((await db.knex.raw('pragma wal_autocheckpoint')) as { wal_autocheckpoint: number }[]).toEqual([
      { wal_autocheckpoint: BACKSTOP_AUTOCHECKPOINT_PAGES },
    ]);
    await db.knex.raw('create table filler (id integer primary key, body text)');
    // Let the checkpoints of the migrations land, then note the file's size.
    await new Promise((r) => setTimeout(r, 500));
    const before = statSync(file).size;
    // About 2 MB of new pages: far fewer than the server connection's own checkpoint threshold.
    await db.knex.transaction(async (trx) => {
      for (let i = 0; i < 20; i++) await trx('filler').insert(Array.from({ length: 100 }, (_, j) => ({ id: i * 100 + j, body: 'x'.repeat(1000) })));
    });
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(2_000_000);
    expect(await eventually(() => statSync(file).size >= before + 2_000_000, 5_000)).toBe(true);
    await db.close();
    expect(existsSync(`${file}-wal`)).toBe(false);
  });
});
