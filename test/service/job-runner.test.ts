// The one background-job machine (service/jobs/job-runner.ts over store/job-table.ts), tested
// once here for every kind on it (replays, evaluations): admission per tenant under a lock, the
// stopped-job rule, failure and shutdown recorded with the progress made, expiry, and pages.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RateLimitedError } from '../../server/src/errors.js';
import { JobRunner } from '../../server/src/service/jobs/job-runner.js';
import type { Database } from '../../server/src/store/db.js';
import { JobTable, type JobRow } from '../../server/src/store/job-table.js';
import { FakeClock } from '../helpers/clock.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

interface NoteRow extends JobRow {
  note: string;
}

const KIND = {
  name: 'chore',
  notFound: 'not_found' as const,
  keepMs: 24 * 3600_000,
  maxRunning: 1,
  busy: () => new RateLimitedError(30, 'A chore of this tenant is running already'),
};

eachDatabase('the job runner on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let table: JobTable<NoteRow>;
  const clock = new FakeClock();
  const warnings: string[] = [];
  const log = { warn: (_o: object, m: string) => void warnings.push(m) };
  let runner: JobRunner<NoteRow>;
  let n = 0;
  const draft = (tenantId = 't1') => runner.draft({ id: `job-${++n}`, tenantId, agentId: 'a1', version: 1, total: 3, note: '' });

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    await db.knex.schema.createTable('chores', (t) => {
      for (const c of ['id', 'tenant_id', 'agent_id', 'status', 'error', 'created_at', 'updated_at', 'expires_at', 'note']) t.text(c);
      for (const c of ['version', 'done', 'total']) t.integer(c);
    });
    table = new JobTable<NoteRow>(db, { table: 'chores', read: (r) => ({ note: r.note as string }), write: (r) => ({ note: r.note }) });
    runner = new JobRunner(KIND, table, clock, log);
  });
  afterAll(async () => {
    await runner.close();
    await drop();
  });

  it("admits at most maxRunning of a tenant from concurrent starts, and another tenant's freely", async () => {
    const tries = await Promise.allSettled([draft(), draft(), draft()].map((r) => runner.admit(r)));
    expect(tries.filter((t) => t.status === 'fulfilled')).toHaveLength(1);
    const refused = tries.filter((t): t is PromiseRejectedResult => t.status === 'rejected');
    expect(refused).toHaveLength(2);
    for (const r of refused) expect(r.reason).toMatchObject({ status: 429 });
    await expect(runner.precheck('t1')).rejects.toMatchObject({ status: 429 });
    await expect(runner.admit(draft('t2'))).resolves.toBeUndefined();
  });

  it('reads a running job whose row has not moved in ten minutes, and that no process here runs, as failed; it no longer holds the tenant', async () => {
    clock.advance(11 * 60_000);
    const [row] = (await runner.list('t1', 'a1', { limit: 10 }, (r) => r)).data;
    expect(row).toMatchObject({ status: 'failed', error: 'the server running it stopped before it finished' });
    expect(await runner.get('t1', 'a1', row.id)).toMatchObject({ status: 'failed' });
    await expect(runner.precheck('t1')).resolves.toBeUndefined();
  });

  it('records a failure with its message and the progress it had made, and a job run here is never judged stopped', async () => {
    const row = draft('t3');
    await runner.admit(row);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    runner.run(row.id, async (job) => {
      await job.progress({ done: 2, columns: { note: 'two of three' } });
      await gate;
      throw new Error('the backend answered nonsense');
    });
    await new Promise((r) => setTimeout(r, 50));
    clock.advance(11 * 60_000);
    expect(await runner.get('t3', 'a1', row.id)).toMatchObject({ status: 'running', done: 2 });
    release();
    await runner.finished(row.id);
    expect(await runner.get('t3', 'a1', row.id)).toMatchObject({ status: 'failed', error: 'the backend answered nonsense', done: 2, note: 'two of three' });
    expect(warnings).toContain('chore failed');
  });

  it('stops its jobs on close: the next check throws and the job is recorded failed', async () => {
    const row = draft('t4');
    await runner.admit(row);
    let steps = 0;
    runner.run(row.id, async (job) => {
      for (;;) {
        await job.progress({ done: ++steps });
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    await new Promise((r) => setTimeout(r, 30));
    await runner.close();
    expect(await runner.get('t4', 'a1', row.id)).toMatchObject({ status: 'failed', error: 'the server stopped before the chore finished' });
  });

  it('completes a job with its final columns, forgets it once expired (404), and deletes expired rows at the next start', async () => {
    const fresh = new JobRunner(KIND, table, clock, log);
    const row = fresh.draft({ id: 'done-1', tenantId: 't5', agentId: 'a1', version: 1, total: 1, note: '' });
    await fresh.admit(row);
    fresh.run(row.id, async () => fresh.complete(row.id, { done: 1, columns: { note: 'all done' } }));
    await fresh.finished(row.id);
    expect(await fresh.get('t5', 'a1', 'done-1')).toMatchObject({ status: 'done', done: 1, note: 'all done', error: null });
    clock.advance(KIND.keepMs + 1000);
    await expect(fresh.get('t5', 'a1', 'done-1')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await fresh.precheck('t5');
    expect(await db.knex('chores').where({ id: 'done-1' }).first()).toBeUndefined();
  });

  it('lists newest first, a page at a time', async () => {
    const fresh = new JobRunner({ ...KIND, maxRunning: 10 }, table, clock, log);
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await fresh.admit(fresh.draft({ id: `00000000-0000-4000-8000-00000000000${i}`, tenantId: 't6', agentId: 'a1', version: 1, total: 1, note: String(i) }));
    }
    const first = await fresh.list('t6', 'a1', { limit: 3 }, (r) => r);
    expect(first.data.map((r) => r.note)).toEqual(['4', '3', '2']);
    const second = await fresh.list('t6', 'a1', { limit: 3, cursor: first.next_cursor! }, (r) => r);
    expect(second.data.map((r) => r.note)).toEqual(['1', '0']);
    expect(second.next_cursor).toBeNull();
  });
});
