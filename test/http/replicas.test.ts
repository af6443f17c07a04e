// Two server processes on one PostgreSQL database: messages to one conversation still apply one
// at a time (row lock), whichever replica they reach.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { slowEchoAgent } from '../helpers/agents.js';
import { databases, PG_URL } from '../helpers/databases.js';
import { supertestDriver, type Driver } from '../helpers/drivers.js';
import { ordersHandler, startBackend, testApp, type Backend } from '../helpers/servers.js';

const postgres = databases.find((d) => d.name === 'postgres');

describe.skipIf(!postgres)(`two replicas on one PostgreSQL${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  let drop: () => Promise<void>;
  let second: Database;
  let apps: App[] = [];
  let replicas: Driver[] = [];
  let backend: Backend;

  beforeAll(async () => {
    const created = await postgres!.create();
    drop = created.drop;
    second = openDatabase(created.url, { poolMax: 20 });
    backend = await startBackend(ordersHandler);
    const allowed = { actionAllowedHosts: [`127.0.0.1:${backend.port}`] };
    apps = [testApp(created.db, allowed), testApp(second, allowed)];
    replicas = apps.map(supertestDriver);
    expect((await replicas[0].putAgent('slow-echo', slowEchoAgent(backend.url))).status).toBe(200);
  });
  afterAll(async () => {
    for (const a of apps) await a.close();
    await second?.close();
    await backend?.close();
    await drop?.();
  });

  it('applies 20 concurrent messages spread over both replicas one at a time, none lost', async () => {
    const s = await replicas[0].converse('slow-echo', { message: 'echo this' });
    const id = s.body.conversation_id;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicas[i % 2].converse('slow-echo', { message: `m${i}`, conversation_id: id })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const [i, r] of results.entries()) expect(r.body.response.message).toBe(`You said: m${i}`);
    const turns = (await replicas[1].history('slow-echo', id)).body.turns as { role: string; message: string }[];
    expect(turns).toHaveLength(42);
    for (let i = 2; i < turns.length; i += 2) expect(turns[i + 1].message).toBe(`You said: ${turns[i].message}`);
  });
});
