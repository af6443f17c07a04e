// Turn writes in batches (store/postgres-writer.ts): on PostgreSQL the continuing turns that reach
// the writer within one turn of the event loop go in one statement, and each must come out as it
// would alone: refused on its own conditions, its rows only when it applied, its counters added
// up, and a fault of one write failing that write only. Two apps on one database stand for two
// replicas; a third writes every turn alone, the reference the batches must match. Where a test
// needs a batch, the writer gathers the calls' writes (`writer.gather(n)`), so that the batch
// forms however the event loop interleaves them.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { openDatabase, type Database } from '../../server/src/store/db.js';
import { withPooledConnection } from '../../server/src/store/knex-adapter.js';
import { batchStatement } from '../../server/src/store/writer/postgres-sql.js';
import { echoAgent } from '../helpers/agents.js';
import { databases, PG_URL } from '../helpers/databases.js';
import { testApp } from '../helpers/servers.js';

const postgres = databases.find((d) => d.name === 'postgres');
const T = { 'tenant-id': 'acme' };

describe.skipIf(!postgres)(`turn writes in batches${PG_URL ? '' : ' (SKIPPED: set TEST_DATABASE_URL)'}`, () => {
  let drop: () => Promise<void>;
  let db: Database;
  let second: Database;
  let alone: Database;
  let app: App;
  let other: App;
  let single: App;

  beforeAll(async () => {
    const created = await postgres!.create();
    drop = created.drop;
    db = created.db;
    second = openDatabase(created.url, { poolMax: 5 });
    alone = openDatabase(created.url, { poolMax: 5, turnBatches: false });
    [app, other, single] = [testApp(db), testApp(second), testApp(alone)];
    await request(app.app).put('/api/v1/agents/echo').set(T).send(echoAgent).expect(200);
    await request(app.app).put('/api/v1/agents/echo-alone').set(T).send(echoAgent).expect(200);
  });
  afterAll(async () => {
    for (const a of [app, other, single]) await a?.close();
    await second?.close();
    await alone?.close();
    await drop?.();
  });

  /** New conversations of `slug`, each begun by `via`, which keeps their rows. */
  async function begin(via: App, slug: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push((await request(via.app).post(`/api/v1/agents/${slug}/converse`).set(T).send({ message: 'echo this' }).expect(200)).body.conversation_id);
    return ids;
  }

  /** Continues each conversation at once, in one turn of the event loop: `messages[i]` to `ids[i]` (undefined: a new conversation). */
  const together = (via: App, slug: string, ids: (string | undefined)[], messages: string[]) =>
    Promise.allSettled(
      ids.map((id, i) =>
        via.conversations.converse({ tenantId: 'acme', slug, body: { message: messages[i], ...(id ? { conversation_id: id } : {}) }, requestId: `batch-${i}` }),
      ),
    );

  /** New conversations of `slug` begun at once, in one turn of the event loop. */
  async function beginTogether(via: App, slug: string, n: number): Promise<string[]> {
    const results = await together(via, slug, Array<undefined>(n).fill(undefined), Array<string>(n).fill('echo this'));
    return results.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      expect(r.value.response.message).toBe('Say something.');
      return r.value.conversation_id;
    });
  }

  const batches = (d: Database) => ({ ...(d.writer.batches ?? { writes: NaN, statements: NaN, refused: NaN }) });
  /** The next `n` writes of `d`'s writer go in one batch. */
  const gather = (d: Database, n: number) => d.writer.gather!(n);
  const messagesOf = async (slug: string, id: string) =>
    (
      (
        await request(app.app)
          .get(`/api/v1/agents/${slug}/conversations/${id}`)
          .set(T)
          .expect((r) => {
            if (r.status !== 200) throw new Error(JSON.stringify(r.body));
          })
      ).body.turns as { role: string; message: string }[]
    ).map((t) => `${t.role}: ${t.message}`);
  const verify = async (slug: string, id: string) =>
    (await request(app.app).get(`/api/v1/agents/${slug}/conversations/${id}/audit-logs/verify`).set(T).expect(200)).body as { valid: boolean };

  it('finds each conversation of a batch by its primary key, in the generic plan a named statement keeps', async () => {
    // The plan a prepared statement settles on is made without the parameters' values, often while
    // the table is still small: a join or a scan chosen then would read every conversation later.
    // (A batch of new conversations inserts them and reads none.)
    const text = batchStatement(2, ['turns', 'audit_entries', 'agent_stats'], false);
    const params = [new Date().toISOString(), '{}', 1, null, null, '{}', 1, null, null, '[]', '[]', '[]'];
    const plan = await withPooledConnection(
      db.knex,
      async (conn: { query(text: string, values?: unknown[]): Promise<{ rows: { 'QUERY PLAN': string }[] }> }) => {
        await conn.query(`prepare batch_plan as ${text}`);
        try {
          await conn.query('set plan_cache_mode = force_generic_plan');
          const r = await conn.query(`explain execute batch_plan(${params.map((p) => (p === null ? 'null' : `'${String(p)}'`)).join(', ')})`);
          return r.rows.map((x) => x['QUERY PLAN']).join('\n');
        } finally {
          await conn.query('reset plan_cache_mode');
          await conn.query('deallocate batch_plan');
        }
      },
    );
    expect(plan).not.toMatch(/Seq Scan on conversations/);
    expect(plan.match(/Index Scan using conversations_pkey on conversations t/g)?.length, plan).toBe(2);
  });

  it('writes the turns that reach the writer together in shared statements, each as it would alone', async () => {
    const ids = await begin(app, 'echo', 12);
    const before = batches(db);
    const messages = ids.map((_, i) => `m${i}`);
    gather(db, 12);
    const results = await together(app, 'echo', ids, messages);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.response.message : String(r.reason)))).toEqual(messages.map((m) => `You said: ${m}`));
    const after = batches(db);
    // Twelve writes in one turn of the event loop: a statement of up to sixteen.
    expect([after.writes - before.writes, after.statements - before.statements]).toEqual([12, 1]);
    // As /metrics exports them.
    const metrics = (await request(app.app).get('/metrics').expect(200)).text;
    const metric = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN);
    expect([metric('switchboard_turn_writes_batched_total'), metric('switchboard_turn_write_batches_total')]).toEqual([after.writes, after.statements]);
    for (const [i, id] of ids.entries()) {
      expect((await messagesOf('echo', id)).slice(-2)).toEqual([`user: m${i}`, `agent: You said: m${i}`]);
      expect((await verify('echo', id)).valid).toBe(true);
    }
    // And the next call on each goes on from the rows the batch kept, without a read.
    const kept = db.writer.kept!.tallies.kept;
    gather(db, 12);
    const next = await together(
      app,
      'echo',
      ids,
      messages.map((m) => `${m} again`),
    );
    expect(next.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(db.writer.kept!.tallies.kept - kept).toBe(12);
    expect((await messagesOf('echo', ids[5])).slice(-2)).toEqual(['user: m5 again', 'agent: You said: m5 again']);
  });

  it('starts the conversations that reach the writer together in shared statements', async () => {
    // Connections for every agent read at once, so that no read waits for one to be opened.
    await Promise.all(Array.from({ length: 12 }, () => db.knex.raw('select pg_sleep(0.05)')));
    const before = batches(db);
    gather(db, 9);
    const ids = await beginTogether(app, 'echo', 9);
    expect(new Set(ids).size).toBe(9);
    const after = batches(db);
    expect([after.writes - before.writes, after.statements - before.statements]).toEqual([9, 1]);
    for (const id of ids) {
      expect(await messagesOf('echo', id)).toEqual(['user: echo this', 'agent: Say something.']);
      expect((await verify('echo', id)).valid).toBe(true);
    }
    // Their rows were kept: the next calls, together again, read nothing.
    const kept = db.writer.kept!.tallies.kept;
    gather(db, 9);
    const next = await together(
      app,
      'echo',
      ids,
      ids.map((_, i) => `k${i}`),
    );
    expect(next.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(db.writer.kept!.tallies.kept - kept).toBe(9);
  });

  it("adds up the batch's counters as the writes alone would have", async () => {
    // The same conversations of two new agents: one app writes in batches, the other each turn alone.
    await request(app.app).put('/api/v1/agents/counted').set(T).send(echoAgent).expect(200);
    await request(app.app).put('/api/v1/agents/counted-alone').set(T).send(echoAgent).expect(200);
    const before = batches(db);
    gather(db, 6);
    const [batched, unbatched] = [await beginTogether(app, 'counted', 6), await beginTogether(single, 'counted-alone', 6)];
    for (let round = 0; round < 2; round++) {
      const messages = batched.map((_, i) => `n${round}.${i}`);
      gather(db, 6);
      await together(app, 'counted', batched, messages);
      await together(single, 'counted-alone', unbatched, messages);
    }
    // Six new conversations and twice six turns, in three batches.
    expect([batches(db).writes - before.writes, batches(db).statements - before.statements]).toEqual([18, 3]);
    const counters = async (slug: string) => {
      const agent = await db.knex('agents').where({ tenant_id: 'acme', slug }).first('id');
      const rows = await db
        .knex('agent_stats')
        .where({ agent_id: agent!.id })
        .select('version', 'capability', 'outcome')
        .sum({ started: 'started', completed: 'completed', escalated: 'escalated', abandoned: 'abandoned', routed: 'routed', fallback: 'fallback' })
        .groupBy('version', 'capability', 'outcome')
        .orderBy(['version', 'capability', 'outcome']);
      return rows.map((r: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v])),
      );
    };
    const alone = await counters('counted-alone');
    expect(alone.length).toBeGreaterThan(0);
    expect(await counters('counted')).toEqual(alone);
  });

  it('refuses a write whose kept row another process changed, and that write alone; the call then runs again', async () => {
    const ids = await begin(app, 'echo', 6);
    // Another replica continues the fourth conversation: this process's kept row of it is out of date.
    await request(other.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'elsewhere', conversation_id: ids[3] }).expect(200);
    const stale = db.writer.kept!.tallies.stale;
    const messages = ids.map((_, i) => `s${i}`);
    const before = batches(db);
    gather(db, 6);
    const results = await together(app, 'echo', ids, messages);
    expect(batches(db).statements - before.statements).toBe(1);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.response.message : String(r.reason)))).toEqual(messages.map((m) => `You said: ${m}`));
    expect(db.writer.kept!.tallies.stale - stale).toBe(1);
    expect((await messagesOf('echo', ids[3])).slice(-4)).toEqual(['user: elsewhere', 'agent: You said: elsewhere', 'user: s3', 'agent: You said: s3']);
    for (const id of ids) expect((await verify('echo', id)).valid).toBe(true);
  });

  it('keeps every message when two processes batch turns of the same conversations at once', async () => {
    const ids = await begin(app, 'echo', 8);
    // The other process reads the rows first, so that both work from rows of the same version.
    for (const id of ids) await request(other.app).get(`/api/v1/agents/echo/conversations/${id}`).set(T).expect(200);
    gather(db, 8);
    gather(second, 8);
    const [mine, theirs] = await Promise.all([
      together(
        app,
        'echo',
        ids,
        ids.map((_, i) => `here ${i}`),
      ),
      together(
        other,
        'echo',
        ids,
        ids.map((_, i) => `there ${i}`),
      ),
    ]);
    expect([...mine, ...theirs].map((r) => r.status)).toEqual(Array(16).fill('fulfilled'));
    for (const [i, id] of ids.entries()) {
      const turns = await messagesOf('echo', id);
      // Both messages, each answered, one after the other in either order.
      expect(turns).toHaveLength(6);
      expect(new Set(turns.slice(2))).toEqual(new Set([`user: here ${i}`, `agent: You said: here ${i}`, `user: there ${i}`, `agent: You said: there ${i}`]));
      expect(turns[3]).toBe(turns[2].replace('user: ', 'agent: You said: '));
      expect((await verify('echo', id)).valid).toBe(true);
    }
  });

  it('goes write by write when PostgreSQL refuses the batch, so that only the faulty write fails', async () => {
    const ids = await begin(app, 'echo', 5);
    // A rule the third write breaks: the whole batch statement is refused, and nothing of it stays.
    await db.knex.raw(`create function refuse_turn() returns trigger language plpgsql as $$
      begin if new.message = 'refuse me' then raise exception 'refused by the test'; end if; return new; end $$`);
    await db.knex.raw('create trigger refuse_turn before insert on turns for each row execute function refuse_turn()');
    try {
      const before = batches(db);
      const messages = ids.map((_, i) => (i === 2 ? 'refuse me' : `f${i}`));
      gather(db, 5);
      const results = await together(app, 'echo', ids, messages);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/refused by the test/);
      // The batch was refused whole and wrote nothing; each write then went alone.
      expect([batches(db).refused - before.refused, batches(db).statements - before.statements]).toEqual([1, 0]);
      for (const [i, id] of ids.entries()) {
        const turns = await messagesOf('echo', id);
        if (i === 2) expect(turns).toEqual(['user: echo this', 'agent: Say something.']);
        else expect(turns.slice(-2)).toEqual([`user: f${i}`, `agent: You said: f${i}`]);
        expect((await verify('echo', id)).valid).toBe(true);
      }
    } finally {
      await db.knex.raw('drop trigger refuse_turn on turns');
      await db.knex.raw('drop function refuse_turn()');
    }
    // The faulty conversation goes on once the rule is gone.
    const r = await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'later', conversation_id: ids[2] }).expect(200);
    expect(r.body.response.message).toBe('You said: later');
  });

  it('fails every write of a batch whose connection died mid-statement, and stores none of them twice', async () => {
    const ids = await begin(app, 'echo', 3);
    // The first write's turn keeps the statement busy long enough to cut its connection.
    await db.knex.raw(`create function slow_turn() returns trigger language plpgsql as $$
      begin if new.message = 'slow' then perform pg_sleep(10); end if; return new; end $$`);
    await db.knex.raw('create trigger slow_turn before insert on turns for each row execute function slow_turn()');
    try {
      gather(db, 3);
      const pending = together(app, 'echo', ids, ['slow', 'b', 'c']);
      let killed = false;
      for (let i = 0; i < 100 && !killed; i++) {
        await new Promise((r) => setTimeout(r, 50));
        const r = await db.knex.raw<{ rows: { t: boolean }[] }>(
          `select pg_terminate_backend(pid) as t from pg_stat_activity where datname = current_database() and state = 'active' and query like 'with c0 as%'`,
        );
        killed = r.rows.some((x) => x.t);
      }
      expect(killed).toBe(true);
      const results = await pending;
      // Its fate unknown to the writer, no write was made again: each call failed as a lone write would.
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const id of ids) expect(await messagesOf('echo', id)).toEqual(['user: echo this', 'agent: Say something.']);
    } finally {
      await db.knex.raw('drop trigger slow_turn on turns');
      await db.knex.raw('drop function slow_turn()');
    }
    // The next calls go on, from rows read again.
    for (const id of ids) await request(app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'after', conversation_id: id }).expect(200);
  });
});
