// Stored routers are bounded per tenant: routers no kept version references go after a grace
// period, and past the tenant's bytes the oldest go first; one larger than the bound alone is not
// stored. Another tenant's are never touched.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import type { Database } from '../../server/src/store/db.js';
import { RouterStore } from '../../server/src/store/agents/router-store.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const router = (bytes: number) => ({ format: 3, model: 'm', state: Buffer.alloc(bytes, 7) });
const at = (minutes: number) => new Date(Date.UTC(2026, 10, 1) + minutes * 60_000).toISOString();
const digest = (n: number) => n.toString(16).padStart(64, '0');

eachDatabase('stored routers on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await database.create());
  });
  afterAll(async () => drop());

  const digests = async (tenant: string) =>
    (await db.knex('stored_routers').where({ tenant_id: tenant }).orderBy('digest').select('digest')).map((r: { digest: string }) => r.digest);

  it('keeps a tenant within its bytes, the oldest going first, and never stores one larger than the bound', async () => {
    const agents = new AgentStore(db);
    const store = new RouterStore(db, { tenantMaxBytes: 1000 });
    // Each router is of a kept version: only the bound deletes them.
    for (let n = 1; n <= 4; n++) await agents.put('bounded', `a${n}`, { name: 'A', capabilities: [] }, digest(n), at(0), true);
    await agents.put('neighbour', 'a1', { name: 'A', capabilities: [] }, digest(1), at(0), true);
    expect(await store.save('neighbour', digest(1), router(900), at(0), digest(1))).toEqual({ stored: true, deleted: 0 });
    expect(await store.save('bounded', digest(1), router(400), at(1), digest(1))).toEqual({ stored: true, deleted: 0 });
    expect(await store.save('bounded', digest(2), router(400), at(2), digest(2))).toEqual({ stored: true, deleted: 0 });
    expect(await store.save('bounded', digest(3), router(400), at(3), digest(3))).toEqual({ stored: true, deleted: 1 });
    expect(await digests('bounded')).toEqual([digest(2), digest(3)]);
    expect(await store.tenantBytes('bounded')).toBe(800);
    // Stored again, a router is the newest: the other one goes instead.
    expect(await store.save('bounded', digest(2), router(700), at(4), digest(2))).toEqual({ stored: true, deleted: 1 });
    expect(await digests('bounded')).toEqual([digest(2)]);
    expect(await store.save('bounded', digest(4), router(1001), at(5), digest(4))).toEqual({ stored: false, deleted: 0 });
    expect(await digests('bounded')).toEqual([digest(2)]);
    expect(await digests('neighbour')).toEqual([digest(1)]);
  });

  it('deletes routers no kept version references, once they are a day old', async () => {
    const agents = new AgentStore(db);
    const store = new RouterStore(db);
    await agents.put('refs', 'kept', { name: 'K', capabilities: [] }, digest(10), at(0), true);
    await store.save('refs', digest(10), router(10), at(0), digest(10));
    // A PUT's router, stored before its version: kept for the day it may take to store that version.
    await store.save('refs', digest(11), router(10), at(0), digest(11));
    // A router of server embeddings of the kept version (its key is not the version's digest).
    await store.save('refs', digest(12), router(10), at(0), digest(10));
    await store.save('refs', digest(13), router(10), at(60), digest(13));
    expect(await digests('refs')).toEqual([digest(10), digest(11), digest(12), digest(13)]);
    expect((await store.save('refs', digest(14), router(10), at(24 * 60 + 30), digest(10))).deleted).toBe(1);
    expect(await digests('refs')).toEqual([digest(10), digest(12), digest(13), digest(14)]);
  });
});
