// The history horizon over HTTP (HISTORY_RETENTION_DAYS, store/partitions.ts): the sweeper deletes
// what was written before it (whole months on PostgreSQL), a conversation that spans it keeps
// going with what is left, and its audit chain verifies from its first kept entry, through the
// typed client as well.
import request from 'supertest';
import { expect, it } from 'vitest';
import { loadConfig } from '../../server/src/config.js';
import { FakeClock } from '../helpers/clock.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };
const DAY = 86_400_000;

it('takes HISTORY_RETENTION_DAYS of 0 (keep everything) or a week and more', () => {
  expect(loadConfig({}).retention.historyDays).toBe(0);
  expect(loadConfig({ HISTORY_RETENTION_DAYS: '400' }).retention.historyDays).toBe(400);
  expect(() => loadConfig({ HISTORY_RETENTION_DAYS: '3' })).toThrow(/HISTORY_RETENTION_DAYS.*at least 7 days/);
});

eachDatabase('history horizon on $name', (database) => {
  const clock = new FakeClock(new Date().toISOString());
  const f = appFixture(database, {
    config: () => ({ retention: { days: 0, tenants: {}, idempotencyHours: 24, historyDays: 7 } }),
    agents: () => ({
      notes: {
        name: 'Notes',
        inactivity_timeout_seconds: 31_536_000,
        capabilities: [
          { name: 'note', examples: ['take a note', 'write this down'], phases: [{ id: 'n', say: 'Noted: {{ slots.text }}', collect: { slot: 'text' } }] },
        ],
      },
    }),
    clock,
  });
  const client = clientFixture(f);

  it('deletes what was written before the horizon; the conversation goes on, and its chain verifies from its first kept entry', async () => {
    const say = (message: string, id?: string) =>
      request(f.app.app)
        .post('/api/v1/agents/notes/converse')
        .set(T)
        .send({ message, ...(id ? { conversation_id: id } : {}) })
        .expect(200);
    const id = (await say('take a note')).body.conversation_id as string;
    await say('milk', id);
    const before = (await request(f.app.app).get(`/api/v1/agents/notes/conversations/${id}`).set(T).expect(200)).body;
    expect(before.turns).toHaveLength(4);

    clock.advance(45 * DAY);
    await say('eggs', id);
    const swept = await f.app.lifecycle.sweep();
    expect(swept.historyDropped.partitions.length + swept.historyDropped.rows).toBeGreaterThan(0);

    const after = (await request(f.app.app).get(`/api/v1/agents/notes/conversations/${id}`).set(T).expect(200)).body;
    expect(after.turns).toHaveLength(2);
    expect(after.turns[0]).toMatchObject({ role: 'user', message: 'eggs' });
    const audit = (await request(f.app.app).get(`/api/v1/agents/notes/conversations/${id}/audit-logs`).set(T).expect(200)).body.data as { sequence: number }[];
    expect(audit.length).toBeGreaterThan(0);
    const first = audit[0].sequence;
    expect(first).toBeGreaterThan(1);

    const verified = await client.sb.api.verifyAuditLogs({ params: { slug: 'notes', id } });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({ conversation_id: id, entries: audit.length, keyed_entries: 0, valid: true, first_broken: null, first_sequence: first });

    // Still a conversation: it answers, and its chain grows from there.
    await say('bread', id);
    expect((await request(f.app.app).get(`/api/v1/agents/notes/conversations/${id}`).set(T).expect(200)).body.turns).toHaveLength(4);
    expect((await request(f.app.app).get(`/api/v1/agents/notes/conversations/${id}/audit-logs/verify`).set(T).expect(200)).body).toMatchObject({
      valid: true,
      first_sequence: first,
    });
  });
});
