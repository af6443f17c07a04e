// The one outbox engine (service/outbox/outbox.ts) and its shared queries (store/outbox-rows.ts),
// tested once here for every queue on it (webhooks, channel replies): fairness across tenants,
// the lease, order per key, backoff with Retry-After, and passes started by an attempt's end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Outbox, retryAt, type Candidate, type Outcome, type OutboxKind } from '../../server/src/service/outbox/outbox.js';
import { claimDue, dueInOrder, type OutboxTable } from '../../server/src/store/outbox-rows.js';
import type { Database } from '../../server/src/store/db.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const T0 = new Date('2026-11-28T10:00:00.000Z');
const clock = { now: () => new Date(T0) };
const log = { warn: () => undefined };

interface Row extends Candidate<number> {
  key: string;
}

/** A queue in memory: its rows, a due query like the tables' (in order per key, ranked per tenant), and attempts the test releases. */
class MemoryKind implements OutboxKind<number, Row> {
  readonly name = 'memory';
  readonly leaseMs = 60_000;
  rows: (Row & { due: number; done: boolean })[] = [];
  started: Row[] = [];
  private releases = new Map<number, (o: Outcome) => void>();
  outcome: (row: Row) => Outcome | Promise<Outcome> = () => new Promise<Outcome>(() => undefined);

  add(tenant: string, key: string, n = 1): void {
    for (let i = 0; i < n; i++) this.rows.push({ id: this.rows.length + 1, tenant_id: tenant, key, due: T0.getTime(), done: false });
  }

  async due(now: string, perTenant: number, limit: number) {
    const t = Date.parse(now);
    const first = new Map<string, number>();
    for (const r of this.rows) if (!r.done && !first.has(r.key)) first.set(r.key, r.id);
    const rank = new Map<string, number>();
    const out: Candidate<number>[] = [];
    for (const r of [...this.rows].sort((a, b) => a.due - b.due || a.id - b.id)) {
      if (r.done || r.due > t || first.get(r.key) !== r.id) continue;
      const n = (rank.get(r.tenant_id) ?? 0) + 1;
      rank.set(r.tenant_id, n);
      if (n <= perTenant) out.push({ id: r.id, tenant_id: r.tenant_id });
    }
    return out.slice(0, limit);
  }

  async claim(ids: number[], now: string, until: string) {
    const got = this.rows.filter((r) => ids.includes(r.id) && !r.done && r.due <= Date.parse(now));
    for (const r of got) r.due = Date.parse(until);
    return got.map((r) => ({ id: r.id, tenant_id: r.tenant_id, key: r.key }));
  }

  async attempt(row: Row): Promise<Outcome> {
    this.started.push(row);
    const outcome = await new Promise<Outcome>((resolve, reject) => {
      this.releases.set(row.id, resolve);
      Promise.resolve()
        .then(() => this.outcome(row))
        .then(resolve, reject);
    });
    const r = this.rows.find((x) => x.id === row.id)!;
    if (outcome === 'delivered' || outcome === 'failed') r.done = true;
    return outcome;
  }

  release(id: number, outcome: Outcome = 'delivered'): void {
    this.releases.get(id)?.(outcome);
  }
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('the outbox engine', () => {
  it("starts a quiet tenant's row in the first pass while a noisy tenant's slow rows hold only their share", async () => {
    const kind = new MemoryKind();
    kind.add('noisy', 'a', 1);
    for (let i = 0; i < 40; i++) kind.add('noisy', `k${i}`);
    kind.add('quiet', 'q');
    const outbox = new Outbox(kind, { concurrency: { total: 6, perTenant: 4 }, clock, log });
    outbox.kick();
    await settle();
    const byTenant = (t: string) => kind.started.filter((r) => r.tenant_id === t).length;
    expect(byTenant('quiet')).toBe(1);
    expect(byTenant('noisy')).toBe(4);
    expect(outbox.inFlight).toBe(5);
    // Another pass while the noisy rows hang: the noisy tenant still holds 4, however long its queue.
    outbox.kick();
    await settle();
    expect(byTenant('noisy')).toBe(4);
    kind.outcome = () => 'delivered';
    for (const r of kind.started) kind.release(r.id);
    await outbox.stop();
  });

  it('keeps order per key: a row waits until the one before it of its key is done, and goes when it ends', async () => {
    const kind = new MemoryKind();
    kind.add('t', 'conv', 3);
    const outbox = new Outbox(kind, { concurrency: { total: 8, perTenant: 8 }, clock, log });
    outbox.kick();
    await settle();
    expect(kind.started.map((r) => r.id)).toEqual([1]);
    kind.release(1);
    await settle();
    // The attempt's end started the next pass: no timer, no kick.
    expect(kind.started.map((r) => r.id)).toEqual([1, 2]);
    kind.outcome = () => 'delivered';
    kind.release(2);
    await settle();
    expect(kind.started.map((r) => r.id)).toEqual([1, 2, 3]);
    await outbox.stop();
  });

  it('counts outcomes in runOnce and reports each to onOutcome; a failing attempt is retried after its lease', async () => {
    const kind = new MemoryKind();
    kind.add('t', 'a');
    kind.add('t', 'b');
    kind.outcome = (r) => (r.id === 1 ? 'delivered' : Promise.reject(new Error('database gone')));
    const seen: string[] = [];
    const outbox = new Outbox(kind, { concurrency: { total: 8, perTenant: 8 }, clock, log, onOutcome: (q, o) => seen.push(`${q}:${o}`) });
    const counts = await outbox.runOnce();
    expect(counts).toMatchObject({ delivered: 1, retried: 1, failed: 0 });
    expect(seen.sort()).toEqual(['memory:delivered', 'memory:retried']);
    // Row 2's claim holds it for the lease: not due again now, due once the lease has run out.
    expect((await kind.due(T0.toISOString(), 8, 10)).map((c) => c.id)).toEqual([]);
    expect((await kind.due(new Date(T0.getTime() + kind.leaseMs).toISOString(), 8, 10)).map((c) => c.id)).toEqual([2]);
  });

  it('stops: no pass starts after stop, and stop waits for attempts under way', async () => {
    const kind = new MemoryKind();
    kind.add('t', 'a');
    const outbox = new Outbox(kind, { concurrency: { total: 8, perTenant: 8 }, clock, log });
    outbox.kick();
    await settle();
    let stopped = false;
    const stopping = outbox.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    kind.release(1);
    await stopping;
    kind.add('t', 'b');
    outbox.kick();
    await settle();
    expect(kind.started.map((r) => r.id)).toEqual([1]);
  });
});

describe('retryAt', () => {
  const schedule = [5, 30, 120];
  it("waits the schedule's time for the attempt, or the receiver's Retry-After when longer, up to its cap", () => {
    expect(retryAt(T0, 1, schedule)?.getTime()).toBe(T0.getTime() + 5_000);
    expect(retryAt(T0, 3, schedule)?.getTime()).toBe(T0.getTime() + 120_000);
    expect(retryAt(T0, 1, schedule, 90)?.getTime()).toBe(T0.getTime() + 90_000);
    expect(retryAt(T0, 2, schedule, 10)?.getTime()).toBe(T0.getTime() + 30_000);
    expect(retryAt(T0, 1, schedule, 1e9, 3600)?.getTime()).toBe(T0.getTime() + 3_600_000);
  });
  it('answers null once the schedule is spent', () => {
    expect(retryAt(T0, 4, schedule)).toBeNull();
  });
});

eachDatabase('the outbox queries on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  const table: OutboxTable = { table: 'outbox_test_rows', orderKey: ['k1', 'k2'], seq: 'seq' };
  const at = (s: number) => new Date(T0.getTime() + s * 1000).toISOString();

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    await db.knex.schema.createTable(table.table, (t) => {
      t.string('id').primary();
      t.string('tenant_id').notNullable();
      t.string('k1').notNullable();
      t.string('k2').notNullable();
      t.integer('seq').notNullable();
      t.string('status').notNullable();
      t.string('next_attempt_at');
    });
    const rows = [
      // Tenant a: five due rows of five keys, the oldest due first; and a key whose first row is pending later.
      ...[0, 1, 2, 3, 4].map((i) => ({ id: `a${i}`, tenant_id: 'a', k1: `c${i}`, k2: 'u', seq: i, status: 'pending', next_attempt_at: at(-10 + i) })),
      { id: 'w1', tenant_id: 'a', k1: 'w', k2: 'u', seq: 10, status: 'pending', next_attempt_at: at(60) },
      { id: 'w2', tenant_id: 'a', k1: 'w', k2: 'u', seq: 11, status: 'pending', next_attempt_at: at(-100) },
      // The same k1 under another k2 is another key, and a delivered row holds nothing back.
      { id: 'x0', tenant_id: 'b', k1: 'w', k2: 'v', seq: 1, status: 'delivered', next_attempt_at: null },
      { id: 'x1', tenant_id: 'b', k1: 'w', k2: 'v', seq: 2, status: 'pending', next_attempt_at: at(-1) },
      { id: 'late', tenant_id: 'b', k1: 'z', k2: 'v', seq: 3, status: 'pending', next_attempt_at: at(30) },
    ];
    await db.knex(table.table).insert(rows);
  });
  afterAll(async () => drop());

  it('answers due rows whose key has no earlier pending row, at most perTenant of each tenant, oldest due first', async () => {
    const due = await dueInOrder(db.knex, table, at(0), 3, 100);
    expect(due.map((r) => r.id)).toEqual(['a0', 'a1', 'a2', 'x1']);
    expect((await dueInOrder(db.knex, table, at(0), 10, 3)).map((r) => r.id)).toEqual(['a0', 'a1', 'a2']);
  });

  it('claims only rows still due, so of two claimers one gets each', async () => {
    const until = at(120);
    const first = await claimDue(db.knex, table.table, ['a0', 'a1', 'late'], at(0), until).returning(['id']);
    const second = await claimDue(db.knex, table.table, ['a0', 'a1', 'a2'], at(0), until).returning(['id']);
    expect((first as { id: string }[]).map((r) => r.id).sort()).toEqual(['a0', 'a1']);
    expect((second as { id: string }[]).map((r) => r.id)).toEqual(['a2']);
    expect((await dueInOrder(db.knex, table, at(0), 10, 100)).map((r) => r.id)).toEqual(['a3', 'a4', 'x1']);
  });
});
