// An app on a fresh database for one suite, with agents put before the tests. Options that are
// functions are read in the fixture's beforeAll, so they may use what earlier hooks started
// (a backend's port); after-hooks run in reverse, so the app closes before those backends.
import request from 'supertest';
import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../server/src/app.js';
import type { Config } from '../../server/src/config.js';
import type { Clock } from '../../server/src/lib/clock.js';
import type { Logger } from 'pino';
import type { Database } from '../../server/src/store/db.js';
import type { TestDatabase } from './databases.js';
import { createSwitchboardClient, type SwitchboardClient } from '../../client/src/index.js';
import { listen, testApp } from './servers.js';

export interface Fixture {
  app: App;
  db: Database;
}

type Lazy<T> = T | (() => T);

export interface FixtureOptions {
  /** Agents by slug, put under `tenant` (default "acme"). */
  agents?: Lazy<Record<string, unknown>>;
  tenant?: string;
  config?: Lazy<Partial<Config>>;
  clock?: Clock;
  /** The app's logger (silent when absent). */
  logger?: Logger;
}

const read = <T>(v: Lazy<T>): T => (typeof v === 'function' ? (v as () => T)() : v);

/** Registers beforeAll/afterAll hooks; the returned object is filled in before the first test. */
export function appFixture(database: TestDatabase, opts: FixtureOptions = {}): Fixture {
  const f = {} as Fixture;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const created = await database.create();
    drop = created.drop;
    f.db = created.db;
    f.app = testApp(created.db, read(opts.config ?? {}), opts.clock, opts.logger);
    for (const [slug, def] of Object.entries(read(opts.agents ?? {}))) {
      await request(f.app.app)
        .put(`/api/v1/agents/${slug}`)
        .set('tenant-id', opts.tenant ?? 'acme')
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

/** The fixture's app listening on loopback, with a typed client for `tenantId`; filled in before the first test. */
export function clientFixture(f: Fixture, tenantId = 'acme'): { sb: SwitchboardClient; url: string } {
  const c = {} as { sb: SwitchboardClient; url: string };
  let server: Awaited<ReturnType<typeof listen>> | undefined;
  beforeAll(async () => {
    server = await listen(f.app);
    c.url = server.url;
    c.sb = createSwitchboardClient({ baseUrl: server.url, tenantId });
  });
  afterAll(async () => server?.close());
  return c;
}
