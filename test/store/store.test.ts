// The store on every database: writes, reads, tenant isolation, ordering and migrations.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation } from '../../server/src/domain.js';
import { ERASURE } from '../../server/src/service/conversations/erasure.js';
import { AgentStore } from '../../server/src/store/agents/agent-store.js';
import {
  ConcurrentUpdateError,
  ConversationStore,
  DuplicateIdempotencyKeyError,
  type TurnWrite,
} from '../../server/src/store/conversations/conversation-store.js';
import { migrate, rollbackAll, type Database } from '../../server/src/store/db.js';
import { conversation } from '../helpers/conversations.js';
import { databases, eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';

warnIfPostgresSkipped();

const T0 = '2026-11-22T10:00:00.000Z';

function write(c: Conversation, over: Partial<TurnWrite> = {}): TurnWrite {
  return {
    conversation: c,
    isNew: true,
    expectedAuditSeq: 0,
    previousAuditHash: null,
    turns: [
      { idx: 0, role: 'user', message: 'hi', timestamp: c.updatedAt },
      { idx: 1, role: 'agent', message: 'hello', timestamp: c.updatedAt, phase: 'p', options: [{ label: 'A', value: 'a' }] },
    ],
    audit: [{ type: 'turn_timing', turnIndex: 0, timestamp: c.updatedAt, durationMs: 1, data: { total_ms: 1 } }],
    requestId: 'r1',
    ...over,
  };
}

eachDatabase('store on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let store: ConversationStore;
  let agents: AgentStore;
  let agentA: string;
  let agentB: string;

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    store = new ConversationStore(db);
    agents = new AgentStore(db);
    agentA = (await agents.put('tenant-a', 'bot', { name: 'a' }, 'd1', T0)).agent.id;
    agentB = (await agents.put('tenant-b', 'bot', { name: 'b' }, 'd1', T0)).agent.id;
  });
  afterAll(async () => drop?.());

  it('writes a turn atomically and reads it back', async () => {
    const c = conversation('tenant-a', agentA);
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    const stored = await store.get('tenant-a', agentA, c.id);
    expect({ ...stored, auditHash: null }).toEqual(c);
    expect(stored!.auditHash).toMatch(/^[0-9a-f]{64}$/);
    expect(await store.turns('tenant-a', c.id)).toEqual([
      { idx: 0, role: 'user', message: 'hi', timestamp: T0, phase: null, options: null, author: null },
      { idx: 1, role: 'agent', message: 'hello', timestamp: T0, phase: 'p', options: [{ label: 'A', value: 'a' }], author: null },
    ]);
    const audit = await store.audit({ tenantId: 'tenant-a', id: c.id }, { limit: 10, afterSeq: 0 });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ sequence: 1, type: 'turn_timing', requestId: 'r1', durationMs: 1, data: { total_ms: 1 } });
  });

  it('never shows one tenant the rows of another', async () => {
    const c = conversation('tenant-a', agentA);
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    expect(await store.get('tenant-b', agentA, c.id)).toBeNull();
    expect(await store.get('tenant-b', agentB, c.id)).toBeNull();
    expect(await store.turns('tenant-b', c.id)).toEqual([]);
    expect(await store.audit({ tenantId: 'tenant-b', id: c.id }, { limit: 10, afterSeq: 0 })).toEqual([]);
    expect(await store.list({ tenantId: 'tenant-b', agentId: agentA }, {}, { limit: 100, after: null })).toEqual([]);
    expect(await agents.bySlug('tenant-b', 'bot')).toMatchObject({ id: agentB });
    expect(await agents.version('tenant-b', agentA, 1)).toBeNull();
    await store.exclusive(c.id, { tenantId: 'tenant-b', id: c.id }, async (u) => expect(await u.load('tenant-b', agentB, c.id)).toBeNull());
  });

  it('updates a conversation with what changed, whichever indexed columns change, and finds it by each of them', async () => {
    const c = conversation('tenant-a', agentA, { userId: 'writer-u1', capability: 'first' });
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    const steps: Partial<Conversation>[] = [
      { phase: 'q' },
      { capability: 'second' },
      { userId: 'writer-u2', status: 'paused' },
      { status: 'completed', outcome: 'done', capability: 'third', completedAt: T0 },
    ];
    let current = c;
    for (const [i, over] of steps.entries()) {
      const next = { ...current, ...over, turnCount: current.turnCount + 1, auditSeq: current.auditSeq + 1, updatedAt: `2026-11-22T10:0${i + 1}:00.000Z` };
      const stored = await store.get('tenant-a', agentA, c.id);
      await store.exclusive(c.id, { tenantId: 'tenant-a', id: c.id }, (u) =>
        u.commit(
          write(next, {
            isNew: false,
            stored: stored!,
            expectedAuditSeq: stored!.auditSeq,
            previousAuditHash: stored!.auditHash,
            turns: [{ idx: current.turnCount, role: 'user', message: `step ${i}`, timestamp: T0 }],
            audit: [],
          }),
        ),
      );
      const read = await store.get('tenant-a', agentA, c.id);
      expect({ ...read, auditHash: null }).toEqual({ ...next, auditHash: null });
      current = next;
    }
    const ids = async (f: Parameters<ConversationStore['list']>[1]) =>
      (await store.list({ tenantId: 'tenant-a', agentId: agentA }, f, { limit: 100, after: null })).map((r) => r.id);
    expect(await ids({ status: 'completed' })).toContain(c.id);
    expect(await ids({ status: 'active' })).not.toContain(c.id);
    expect(await ids({ capability: 'third' })).toEqual([c.id]);
    expect(await ids({ capability: 'first' })).toEqual([]);
    expect(await ids({ userId: 'writer-u2' })).toEqual([c.id]);
    expect(await ids({ userId: 'writer-u1' })).toEqual([]);
    expect(await store.idsOfUser('tenant-a', 'writer-u2')).toEqual([c.id]);
    expect((await store.dueForRetention({ before: '2026-11-23T00:00:00.000Z', limit: 100 })).map((r) => r.id)).toContain(c.id);
  });

  it('writes nothing of a turn whose conversation changed underneath it', async () => {
    const c = conversation('tenant-a', agentA);
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    const stale = write(
      { ...c, turnCount: 4, auditSeq: 2, updatedAt: '2026-11-22T10:01:00.000Z' },
      {
        isNew: false,
        expectedAuditSeq: 0,
        turns: [{ idx: 2, role: 'user', message: 'again', timestamp: T0 }],
      },
    );
    await expect(store.exclusive(c.id, { tenantId: 'tenant-a', id: c.id }, (u) => u.commit(stale))).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(await store.turns('tenant-a', c.id)).toHaveLength(2);
    expect((await store.get('tenant-a', agentA, c.id))!.turnCount).toBe(2);
  });

  it('refuses a second write of the same idempotency key and rolls the whole turn back', async () => {
    const a = conversation('tenant-a', agentA);
    const b = conversation('tenant-a', agentA);
    const idem = { agentId: agentA, key: 'k1', requestHash: 'h', response: { ok: 1 } };
    await store.exclusive(a.id, null, (u) => u.commit(write(a, { idempotency: idem })));
    await expect(store.exclusive(b.id, null, (u) => u.commit(write(b, { idempotency: idem })))).rejects.toBeInstanceOf(DuplicateIdempotencyKeyError);
    expect(await store.get('tenant-a', agentA, b.id)).toBeNull();
    expect(await store.findIdempotency('tenant-a', agentA, 'k1')).toEqual({ requestHash: 'h', conversationId: a.id, response: { ok: 1 } });
    expect(await store.findIdempotency('tenant-b', agentA, 'k1')).toBeNull();
  });

  it('rolls back a continuing turn whose idempotency key another request stored meanwhile, conversation included', async () => {
    const c = conversation('tenant-a', agentA);
    const idem = { agentId: agentA, key: 'k-continuing', requestHash: 'h', response: { ok: 1 } };
    await store.exclusive(c.id, null, (u) => u.commit(write(c, { idempotency: idem })));
    const next = write(
      { ...c, turnCount: 4, auditSeq: 2, updatedAt: '2026-11-22T10:01:00.000Z' },
      { isNew: false, expectedAuditSeq: 1, turns: [{ idx: 2, role: 'user', message: 'again', timestamp: T0 }], idempotency: idem },
    );
    await expect(store.exclusive(c.id, { tenantId: 'tenant-a', id: c.id }, (u) => u.commit(next))).rejects.toBeInstanceOf(DuplicateIdempotencyKeyError);
    expect(await store.turns('tenant-a', c.id)).toHaveLength(2);
    expect((await store.get('tenant-a', agentA, c.id))!.auditSeq).toBe(1);
  });

  it('commits writes that arrive together each on its own: one that is refused leaves the others written', async () => {
    const fresh = [conversation('tenant-a', agentA), conversation('tenant-a', agentA), conversation('tenant-a', agentA)];
    const taken = conversation('tenant-a', agentA);
    const idem = { agentId: agentA, key: 'k-together', requestHash: 'h', response: { ok: 1 } };
    await store.exclusive(taken.id, null, (u) => u.commit(write(taken, { idempotency: idem })));
    const stale = write(
      { ...taken, turnCount: 4, auditSeq: 2 },
      { isNew: false, expectedAuditSeq: 0, turns: [{ idx: 2, role: 'user', message: 'late', timestamp: T0 }] },
    );
    const duplicate = conversation('tenant-a', agentA);
    // Started in one turn of the event loop: on SQLite they share one transaction.
    const outcomes = await Promise.allSettled([
      store.exclusive(fresh[0].id, null, (u) => u.commit(write(fresh[0]))),
      store.exclusive(taken.id, { tenantId: 'tenant-a', id: taken.id }, (u) => u.commit(stale)),
      store.exclusive(fresh[1].id, null, (u) => u.commit(write(fresh[1]))),
      store.exclusive(duplicate.id, null, (u) => u.commit(write(duplicate, { idempotency: idem }))),
      store.exclusive(fresh[2].id, null, (u) => u.commit(write(fresh[2]))),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConcurrentUpdateError);
    expect((outcomes[3] as PromiseRejectedResult).reason).toBeInstanceOf(DuplicateIdempotencyKeyError);
    for (const c of fresh) expect(await store.turns('tenant-a', c.id)).toHaveLength(2);
    expect(await store.turns('tenant-a', taken.id)).toHaveLength(2);
    expect(await store.get('tenant-a', agentA, duplicate.id)).toBeNull();
  });

  it.runIf(database.name === 'sqlite')('fails every write of a transaction that SQLite rolls back as a whole, and stores none of them', async () => {
    // RAISE(ROLLBACK) ends the whole transaction, as a full disk or an I/O error does.
    await db.knex.raw(
      "create trigger turn_rollback before insert on turns when new.message = 'roll everything back' begin select raise(rollback, 'rolled back'); end",
    );
    try {
      const cs = [conversation('tenant-a', agentA), conversation('tenant-a', agentA), conversation('tenant-a', agentA)];
      const outcomes = await Promise.allSettled([
        store.exclusive(cs[0].id, null, (u) => u.commit(write(cs[0]))),
        store.exclusive(cs[1].id, null, (u) => u.commit(write(cs[1], { turns: [{ idx: 0, role: 'user', message: 'roll everything back', timestamp: T0 }] }))),
        store.exclusive(cs[2].id, null, (u) => u.commit(write(cs[2]))),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const c of cs) expect(await store.get('tenant-a', agentA, c.id)).toBeNull();
      // The connection is usable afterwards.
      const after = conversation('tenant-a', agentA);
      await store.exclusive(after.id, null, (u) => u.commit(write(after)));
      expect(await store.turns('tenant-a', after.id)).toHaveLength(2);
    } finally {
      await db.knex.raw('drop trigger turn_rollback');
    }
  });

  it('lists newest first by creation time, then id, and pages from a position', async () => {
    const agent = (await agents.put('tenant-c', 'lister', { name: 'l' }, 'd', T0)).agent.id;
    const made: Conversation[] = [];
    for (let i = 0; i < 4; i++) {
      const c = conversation('tenant-c', agent, { createdAt: i < 2 ? T0 : `2026-11-22T10:00:0${i}.000Z` });
      made.push(c);
      await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    }
    const all = await store.list({ tenantId: 'tenant-c', agentId: agent }, {}, { limit: 10, after: null });
    const expected = [...made].sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? 1 : -1) : x.createdAt < y.createdAt ? 1 : -1));
    expect(all.map((c) => c.id)).toEqual(expected.map((c) => c.id));
    const rest = await store.list({ tenantId: 'tenant-c', agentId: agent }, {}, { limit: 10, after: { createdAt: all[1].createdAt, id: all[1].id } });
    expect(rest.map((c) => c.id)).toEqual(expected.slice(2).map((c) => c.id));
  });

  it('versions an agent only when its definition changes', async () => {
    const first = await agents.put('tenant-d', 'v', { name: 'x' }, 'digest-1', T0);
    expect(first).toMatchObject({ changed: true, agent: { currentVersion: 1 } });
    expect(await agents.put('tenant-d', 'v', { name: 'x' }, 'digest-1', T0)).toMatchObject({ changed: false, agent: { currentVersion: 1 } });
    expect(await agents.put('tenant-d', 'v', { name: 'y' }, 'digest-2', T0)).toMatchObject({ changed: true, agent: { currentVersion: 2 } });
    expect((await agents.version('tenant-d', first.agent.id, 1))!.definition).toEqual({ name: 'x' });
    expect(await agents.archive('tenant-d', 'v', T0)).toBe(true);
    expect(await agents.list('tenant-d')).toEqual([]);
    expect(await agents.put('tenant-d', 'v', { name: 'y' }, 'digest-2', T0)).toMatchObject({ changed: true, agent: { currentVersion: 2, archivedAt: null } });
  });
});

eachDatabase('migrations on $name', (database) => {
  it('roll back to nothing and forward again', async () => {
    const { db, drop } = await database.create();
    try {
      await db.knex('agents').insert({ id: randomUUID(), tenant_id: 't', slug: 's', current_version: 1, created_at: T0, updated_at: T0 });
      await rollbackAll(db);
      expect(await db.knex.schema.hasTable('conversations')).toBe(false);
      expect(await migrate(db)).toEqual([
        '001_initial',
        '002_lifecycle',
        '003_audit_chain',
        '004_api_keys',
        '005_event_notify',
        '006_tenant_model',
        '007_scale_indexes',
        '008_llm_usage',
        '009_replays',
        '010_lease_index',
        '011_agent_stats',
        '012_idempotency_expiry',
        '013_stored_routers',
        '014_stored_router_model',
        '015_lighter_turn_indexes',
        '016_stored_router_definition',
        '017_widget',
        '018_review',
        '019_releases',
        '020_channels',
        '021_lighter_postgres_turns',
        '022_partitioned_history',
        '023_hot_turn_updates',
        '024_service_secrets',
        '025_chain_seals',
        '026_channel_ignored',
        '027_version_notes',
        '028_knowledge_sources',
        '029_turn_citations',
        '030_knowledge_web',
        '031_knowledge_snapshots',
        '032_knowledge_stats',
        '033_tenant_privacy',
        '034_key_roles',
        '035_people',
      ]);
      expect(await db.knex.schema.hasTable('conversations')).toBe(true);
      expect(await migrate(db)).toEqual([]);
    } finally {
      await drop();
    }
  });
});

/** `n` conversations of `userId` with an action call, its result and an idempotency record each. */
async function seedUser(store: ConversationStore, agentId: string, n: number, userId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const c = conversation('tenant-a', agentId, { userId, context: { version: 'v1', context: { identity: { user_id: userId } } } });
    const w = write(c, {
      audit: [
        {
          type: 'action_call',
          turnIndex: 0,
          timestamp: T0,
          durationMs: 1,
          data: { action: 'a', request: { method: 'GET', url: `http://x/${userId}` }, response: { status: 200, body: userId }, outcome: 'ok', attempts: 1 },
        },
      ],
    });
    await store.exclusive(c.id, null, (u) => u.commit({ ...w, idempotency: { agentId, key: `k-${c.id}`, requestHash: 'h', response: { said: userId } } }));
    ids.push(c.id);
  }
  return ids;
}

eachDatabase('erasure in batches on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let store: ConversationStore;
  let agentA: string;

  beforeAll(async () => {
    ({ db, drop } = await database.create());
    store = new ConversationStore(db, { leaseMs: 2_000 });
    agentA = (await new AgentStore(db).put('tenant-a', 'bot', { name: 'a' }, 'd1', T0)).agent.id;
  });
  afterAll(async () => drop?.());

  const seed = (n: number, userId: string) => seedUser(store, agentA, n, userId);

  const erase = (ids: string[], userId: string, skipIfBusy = false) =>
    store.eraseMany('tenant-a', ids, { accept: (c) => !c.erasedAt && c.userId === userId, now: () => '2026-11-22T11:00:00.000Z', rules: ERASURE, skipIfBusy });

  it('erases a user across several batches, each chain still verifying, and leaves everyone else alone', async () => {
    const mine = await seed(230, 'zed');
    const theirs = await seed(3, 'yan');
    // Not this user's any more by the time it is held: accept refuses it.
    expect(await erase([...mine, theirs[0]], 'zed')).toBe(230);
    const rows = await db.knex('conversations').whereIn('id', mine).select('user_id', 'erased_at', 'context', 'audit_seq');
    expect(rows.every((r) => r.user_id === null && r.context === null && r.erased_at === '2026-11-22T11:00:00.000Z' && Number(r.audit_seq) === 2)).toBe(true);
    expect(Number((await db.knex('turns').whereIn('conversation_id', mine).count({ n: '*' }))[0].n)).toBe(0);
    expect(Number((await db.knex('idempotency_keys').whereIn('conversation_id', mine).count({ n: '*' }))[0].n)).toBe(0);
    const audit = await db.knex('audit_entries').whereIn('conversation_id', mine).select('type', 'data', 'erased_at');
    expect(audit.filter((a) => a.type === 'erasure')).toHaveLength(230);
    expect(JSON.stringify(audit)).not.toContain('zed');
    expect(audit.filter((a) => a.type === 'action_call').every((a) => a.erased_at !== null && JSON.parse(a.data).erased === true)).toBe(true);
    for (const id of [mine[0], mine[150], mine[229]]) expect(await store.verifyAudit('tenant-a', id)).toMatchObject({ valid: true });
    for (const id of theirs) expect(await store.get('tenant-a', agentA, id)).toMatchObject({ userId: 'yan', erasedAt: null });
    expect(await store.turns('tenant-a', theirs[0])).toHaveLength(2);
    expect(await erase(mine, 'zed')).toBe(0);
  });

  it('waits for a conversation a call in this process holds', async () => {
    const ids = await seed(3, 'busy');
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const call = store.exclusive(`conv:${ids[1]}`, { tenantId: 'tenant-a', id: ids[1] }, async () => {
      held();
      await new Promise((r) => setTimeout(r, 300));
      // The erasure has not touched it while this call holds it.
      return (await store.get('tenant-a', agentA, ids[1]))?.erasedAt;
    });
    await holding;
    expect(await erase(ids, 'busy')).toBe(3);
    expect(await call).toBeNull();
    expect((await store.get('tenant-a', agentA, ids[1]))?.erasedAt).toEqual(expect.any(String));
  });
});

describe.each(databases.filter((d) => d.name === 'postgres'))('conversation leases on $name', (database) => {
  let db: Database;
  let drop: () => Promise<void>;
  let store: ConversationStore;
  let agentA: string;
  beforeAll(async () => {
    ({ db, drop } = await database.create());
    store = new ConversationStore(db);
    agentA = (await new AgentStore(db).put('tenant-a', 'bot', { name: 'a' }, 'd1', T0)).agent.id;
  });
  afterAll(async () => drop?.());

  it('writes nothing for a call whose lease another process took over, and its load was of the leased row', async () => {
    const c = conversation('tenant-a', agentA);
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    const next = write(
      { ...c, turnCount: 4, auditSeq: 2, updatedAt: '2026-11-22T10:01:00.000Z' },
      { isNew: false, expectedAuditSeq: 1, turns: [{ idx: 2, role: 'user', message: 'again', timestamp: T0 }] },
    );
    const attempt = store.exclusive(c.id, { tenantId: 'tenant-a', id: c.id }, async (u) => {
      const loaded = await u.load('tenant-a', agentA, c.id);
      expect(loaded).toMatchObject({ id: c.id, auditSeq: 1 });
      // Another process's lease, as after this one's ran out.
      await db.knex('conversations').where({ id: c.id }).update({ lease_id: randomUUID() });
      await u.commit(next);
    });
    await expect(attempt).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(await store.turns('tenant-a', c.id)).toHaveLength(2);
    await db.knex('conversations').where({ id: c.id }).update({ lease_id: null, lease_until: null });
  });

  it('waits for a conversation another process holds, or skips it when asked to', async () => {
    const ids = await seedUser(store, agentA, 3, 'held');
    const erase = (skipIfBusy: boolean) =>
      store.eraseMany('tenant-a', ids, { accept: (c) => !c.erasedAt && c.userId === 'held', now: () => T0, rules: ERASURE, skipIfBusy });
    const lease = () =>
      db
        .knex('conversations')
        .where({ id: ids[1] })
        .update({ lease_id: randomUUID(), lease_until: new Date(Date.now() + 60_000).toISOString() });
    await lease();
    expect(await erase(true)).toBe(2);
    expect((await store.get('tenant-a', agentA, ids[1]))?.erasedAt).toBeNull();
    // A Knex query runs when awaited or then-ed: the other process gives its lease up after 300 ms.
    const release = setTimeout(() => {
      db.knex('conversations')
        .where({ id: ids[1] })
        .update({ lease_id: null, lease_until: null })
        .then(
          () => undefined,
          () => undefined,
        );
    }, 300);
    expect(await erase(false)).toBe(1);
    clearTimeout(release);
    expect((await store.get('tenant-a', agentA, ids[1]))?.erasedAt).toEqual(expect.any(String));
    expect(Number((await db.knex('conversations').whereIn('id', ids).whereNotNull('lease_id').count({ n: '*' }))[0].n)).toBe(0);
  });

  /** The turn after `c`'s stored one: one more user turn, the audit sequence moved on. */
  const nextTurn = (c: Conversation, stored: number, message: string) =>
    write(
      { ...c, turnCount: c.turnCount + stored, auditSeq: stored + 1, updatedAt: T0 },
      { isNew: false, expectedAuditSeq: stored, turns: [{ idx: c.turnCount + stored - 1, role: 'user', message, timestamp: T0 }] },
    );
  const started = async () => {
    const c = conversation('tenant-a', agentA);
    await store.exclusive(c.id, null, (u) => u.commit(write(c)));
    return c;
  };
  const ref = (c: Conversation) => ({ tenantId: 'tenant-a', id: c.id });

  it('runs an optimistic call as one read and one write, taking no lease', async () => {
    const c = await started();
    const leased: unknown[] = [];
    const runs = await store.exclusive(
      `conv:${c.id}`,
      ref(c),
      async (u) => {
        const loaded = await u.load('tenant-a', agentA, c.id);
        leased.push((await db.knex('conversations').where({ id: c.id }).first('lease_id'))?.lease_id);
        await u.commit(nextTurn(c, loaded!.auditSeq, 'one'));
        return 1;
      },
      { optimistic: true },
    );
    expect(runs).toBe(1);
    expect(leased).toEqual([null]);
    expect((await store.turns('tenant-a', c.id)).map((t) => t.message)).toEqual(['hi', 'hello', 'one']);
  });

  it('runs an optimistic call again, holding the lease, when another process wrote between its read and its write', async () => {
    const c = await started();
    let runs = 0;
    await store.exclusive(
      `conv:${c.id}`,
      ref(c),
      async (u) => {
        runs++;
        const loaded = await u.load('tenant-a', agentA, c.id);
        // Another process's turn lands between this call's read and its write, the first time only.
        if (runs === 1) await db.knex('conversations').where({ id: c.id }).update({ audit_seq: 2 });
        else expect((await db.knex('conversations').where({ id: c.id }).first('lease_id'))?.lease_id).not.toBeNull();
        await u.commit(nextTurn(c, loaded!.auditSeq, `run ${runs}`));
      },
      { optimistic: true },
    );
    expect(runs).toBe(2);
    expect((await store.turns('tenant-a', c.id)).map((t) => t.message)).toEqual(['hi', 'hello', 'run 2']);
    expect((await db.knex('conversations').where({ id: c.id }).first('audit_seq', 'lease_id')) as object).toMatchObject({ lease_id: null });
  });

  it('takes its first load from the row read with the agent, and runs again holding the lease when that row was stale', async () => {
    const c = await started();
    const read = await db.knex('conversations').where({ id: c.id }).first();
    await db.knex('conversations').where({ id: c.id }).update({ audit_seq: 2 });
    const loads: number[] = [];
    await store.exclusive(
      `conv:${c.id}`,
      ref(c),
      async (u) => {
        const loaded = await u.load('tenant-a', agentA, c.id);
        loads.push(loaded!.auditSeq);
        await u.commit(nextTurn(c, loaded!.auditSeq, `after ${loaded!.auditSeq}`));
      },
      { optimistic: true, read },
    );
    expect(loads).toEqual([1, 2]);
    expect((await store.turns('tenant-a', c.id)).map((t) => t.message)).toEqual(['hi', 'hello', 'after 2']);
  });

  it('takes the lease before an effect, and once it has, does not run again: a conflict after it is the caller’s error', async () => {
    const c = await started();
    let runs = 0;
    const call = store.exclusive(
      `conv:${c.id}`,
      ref(c),
      async (u) => {
        runs++;
        const loaded = await u.load('tenant-a', agentA, c.id);
        await u.beforeEffect();
        const row = await db.knex('conversations').where({ id: c.id }).first('lease_id', 'lease_until');
        expect(row?.lease_id).not.toBeNull();
        // The lease is lost meanwhile (it ran out and another process took it).
        await db.knex('conversations').where({ id: c.id }).update({ lease_id: randomUUID() });
        await u.commit(nextTurn(c, loaded!.auditSeq, 'late'));
      },
      { optimistic: true },
    );
    await expect(call).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(runs).toBe(1);
    expect(await store.turns('tenant-a', c.id)).toHaveLength(2);
    await db.knex('conversations').where({ id: c.id }).update({ lease_id: null, lease_until: null });
  });

  it('waits, holding the lease, for a conversation another process holds when an optimistic call reads or reaches an effect', async () => {
    for (const when of ['read', 'effect'] as const) {
      const c = await started();
      const other = randomUUID();
      const hold = () =>
        db
          .knex('conversations')
          .where({ id: c.id })
          .update({ lease_id: other, lease_until: new Date(Date.now() + 60_000).toISOString() });
      if (when === 'read') await hold();
      const seen: string[] = [];
      const release = setTimeout(() => {
        db.knex('conversations')
          .where({ id: c.id, lease_id: other })
          .update({ lease_id: null, lease_until: null })
          .then(
            () => undefined,
            () => undefined,
          );
      }, 300);
      await store.exclusive(
        `conv:${c.id}`,
        ref(c),
        async (u) => {
          const loaded = await u.load('tenant-a', agentA, c.id);
          seen.push('loaded');
          if (when === 'effect' && seen.length === 1) await hold();
          await u.beforeEffect();
          seen.push('effect');
          await u.commit(nextTurn(c, loaded!.auditSeq, when));
        },
        { optimistic: true },
      );
      clearTimeout(release);
      // Read: straight to the lease, one run; effect: the first run stops at the effect, the second holds the lease.
      expect(seen).toEqual(when === 'read' ? ['loaded', 'effect'] : ['loaded', 'loaded', 'effect']);
      expect((await store.turns('tenant-a', c.id)).map((t) => t.message)).toEqual(['hi', 'hello', when]);
    }
  });

  /** The payloads PostgreSQL announced on `channel` while `fn` ran (and shortly after). */
  async function heardOn(channel: string, fn: () => Promise<void>): Promise<string[]> {
    const heard: string[] = [];
    const listener = await db.knex.client.acquireConnection();
    try {
      listener.on('notification', (n: { channel: string; payload: string }) => {
        if (n.channel === channel) heard.push(n.payload);
      });
      await listener.query(`listen ${channel}`);
      await fn();
      await new Promise((r) => setTimeout(r, 200));
      return heard;
    } finally {
      await listener.query(`unlisten ${channel}`);
      await db.knex.client.releaseConnection(listener);
    }
  }

  it('announces new events only for a conversation an event stream follows', async () => {
    const [quiet, followed] = [await started(), await started()];
    const said = (c: Conversation, stored: number, text: string) => ({
      ...nextTurn(c, stored, text),
      events: [{ type: 'turn.created' as const, data: { text }, createdAt: T0 }],
    });
    const heard = await heardOn('switchboard_events', async () => {
      await store.eventLog.watch('tenant-a', [followed.id], new Date(Date.now() + 60_000).toISOString());
      for (const c of [quiet, followed]) await store.exclusive(`conv:${c.id}`, ref(c), (u) => u.commit(said(c, 1, 'hello')), { optimistic: true });
      // A mark that lapsed announces nothing either.
      await store.eventLog.watch('tenant-a', [followed.id], new Date(Date.now() - 1_000).toISOString());
      await store.exclusive(`conv:${followed.id}`, ref(followed), (u) => u.commit(said({ ...followed, eventSeq: 1 }, 2, 'again')));
    });
    expect(heard).toEqual([followed.id]);
    expect(await store.eventLog.events('tenant-a', quiet.id, { row: 0, index: 0 })).toHaveLength(1);
  });

  it('announces a released lease only when a call waits for it', async () => {
    const c = await started();
    const take = () =>
      db
        .knex('conversations')
        .where({ id: c.id })
        .update({ lease_id: randomUUID(), lease_until: new Date(Date.now() + 60_000).toISOString() });
    const free = () => db.knex('conversations').where({ id: c.id }).update({ lease_id: null, lease_until: null });
    const heard = await heardOn('switchboard_leases', async () => {
      await take();
      await free();
      await take();
      await db.knex('conversations').where({ id: c.id }).update({ lease_wanted: true });
      await free();
    });
    expect(heard).toEqual([c.id]);
  });
});
