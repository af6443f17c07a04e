// An app on a fresh database for one suite, with agents put under tenant "acme" before the tests.
import request from 'supertest';
import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../server/src/app.js';
import type { Config } from '../../server/src/config.js';
import type { Clock } from '../../server/src/lib/clock.js';
import type { Database } from '../../server/src/store/db.js';
import type { TestDatabase } from './databases.js';
import { testApp } from './servers.js';

export interface Fixture {
  app: App;
  db: Database;
}

/** Registers beforeAll/afterAll hooks; the returned object is filled in before the first test. */
export function appFixture(database: TestDatabase, agents: Record<string, unknown>, config: Partial<Config> = {}, clock?: Clock): Fixture {
  const f = {} as Fixture;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await database.create();
    drop = created.drop;
    f.db = created.db;
    f.app = testApp(created.db, config, clock);
    for (const [slug, def] of Object.entries(agents)) {
      await request(f.app.app)
        .put(`/api/v1/agents/${slug}`)
        .set('tenant-id', 'acme')
        .send(def as object)
        .expect(200);
    }
  });
  afterAll(async () => {
    await f.app?.close();
    await drop?.();
  });
  return f;
}
