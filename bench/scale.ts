// `npm run bench:scale`: costs as data grows. Seeds, through the store's own row builders
// (store/turn-rows.ts) in bulk, BENCH_SCALE_CONVERSATIONS conversations (default 1,000,000) of
// 5 turns each across 100 tenants, on SQLite and (with BENCH_DATABASE_URL or TEST_DATABASE_URL)
// on PostgreSQL (BENCH_SCALE_DATABASES=postgres runs only that one, =sqlite only SQLite); then
// starts the server on that database and measures over HTTP:
//   converse at turn 1 vs turn 900, list pages 50 deep with each filter, get and history of a
//   1,000-turn conversation, verify of a 2,000-entry audit chain, the review inbox (a quarter of
//   the conversations fell to the fallback, a twelfth were routed with a small margin: about 3,300
//   messages in some 2,600 groups per agent) 20 pages deep with and without filters, and the
//   erasure of one user's 1,000 conversations with other traffic running; then the retention
//   sweep's pass and the history horizon passing the seed's first month (on PostgreSQL the
//   tables are partitioned by month from the seed's first, as a database written since then is).
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import autocannon from 'autocannon';
import type { AuditDraft, Conversation, TurnRow } from '../server/src/domain.js';
import { AgentStore } from '../server/src/store/agents/agent-store.js';
import { ConversationStore } from '../server/src/store/conversations/conversation-store.js';
import { migrate, openDatabase, type Database } from '../server/src/store/db.js';
import { dropHistoryBefore, keyOf, listPartitions, monthStart, partitionName, PARTITIONED, type PartitionedTable } from '../server/src/store/partitions.js';
import { ERASURE } from '../server/src/service/conversations/erasure.js';
import { writeRows, type TurnWrite, type WriteRows } from '../server/src/store/writer/turn-rows.js';
import type { ReviewReason } from '@switchboard/contract';
import type { ReviewFinding } from '../server/src/domain.js';
import { groupKey } from '../server/src/service/review/review-findings.js';
import { insertBatch, type Tables } from './bulk.js';
import { onEachDatabase, pct, startServer } from './server.js';

const CONVERSATIONS = Number(process.env.BENCH_SCALE_CONVERSATIONS ?? 1_000_000);
const TENANTS = 100;
const BATCH = 2_000;
const ONLY = process.env.BENCH_SCALE_DATABASES;
const ERASED_USER = 'erase-me';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const agent = {
  name: 'Scale',
  capabilities: [
    {
      name: 'order_status',
      examples: ['where is my order', 'track my package', 'has my order shipped'],
      phases: [
        { id: 'ask', say: 'What is your order number?', collect: { slot: 'order_id', type: 'text' } },
        { id: 'thanks', say: 'Looking up {{ slots.order_id }}.', next: 'ask_again' },
        { id: 'ask_again', say: 'Another one?', collect: { slot: 'order_id', type: 'text' }, next: 'thanks' },
      ],
    },
    { name: 'billing', examples: ['I have a billing question', 'refund please'], phases: [{ id: 'b', say: 'Billing.', end: 'completed' }] },
    { name: 'human', examples: ['talk to a human', 'real person please'], phases: [{ id: 'h', say: 'Handing over.', end: 'escalated' }] },
  ],
};

const tenantOf = (i: number) => `tenant-${i % TENANTS}`;
const iso = (ms: number) => new Date(ms).toISOString();
const STATUSES = ['active', 'active', 'active', 'paused', 'completed', 'completed', 'abandoned', 'escalated'] as const;
const CAPABILITIES = ['order_status', 'billing', 'human'];

/** A word for a number, so that near-identical grouping (which ignores digits) tells the seeded messages apart. */
const word = (n: number) => [...n.toString(26)].map((d) => String.fromCharCode(97 + parseInt(d, 26))).join('');

/** A seeded conversation's review finding: a quarter fell to the fallback, a twelfth had a small margin; 2,000 texts per tenant. */
function findingOf(i: number, at: number): ReviewFinding[] {
  // The conversation's number within its tenant: every tenant's inbox is alike.
  const k = Math.floor(i / TENANTS);
  const reason: ReviewReason | null = k % 4 === 1 ? 'fallback' : k % 12 === 3 ? 'low_margin' : null;
  if (!reason) return [];
  const message = `can you help with the ${word((k * 7) % 2000)} thing`;
  return [
    {
      reason,
      groupKey: groupKey(reason, message),
      turnIndex: 0,
      auditSequence: 1,
      message,
      capability: reason === 'fallback' ? 'fallback' : CAPABILITIES[i % 3],
      version: 1,
      detail: reason === 'fallback' ? { routing_reason: 'below_threshold' } : { margin: 0.04 },
      at: iso(at),
    },
  ];
}

/** The write of one seeded conversation: five turns, a routing decision and a timing entry. */
function seeded(i: number, agentId: string): TurnWrite {
  const at = T0 + i * 1000;
  const status = STATUSES[i % STATUSES.length];
  const closed = status === 'completed' || status === 'abandoned';
  // Tenant 0's first conversations belong to the user whose erasure is measured.
  const userId = i % TENANTS === 0 && i / TENANTS < 1000 ? ERASED_USER : `user-${i % 5000}`;
  const turns: TurnRow[] = Array.from({ length: 5 }, (_, k) => ({
    idx: k,
    role: k % 2 ? 'agent' : 'user',
    message: k % 2 ? 'What is your order number?' : `message ${k} of conversation ${i}`,
    timestamp: iso(at + k),
    ...(k % 2 ? { phase: 'ask', options: [] } : {}),
  }));
  const audit: AuditDraft[] = [
    { type: 'routing_decision', turnIndex: 0, timestamp: iso(at), durationMs: 0.2, data: { selected: { capability: CAPABILITIES[i % 3], score: 0.9 } } },
    { type: 'turn_timing', turnIndex: 0, timestamp: iso(at), durationMs: 1.1, data: { total_ms: 1.1 } },
  ];
  const conversation: Conversation = {
    id: randomUUID(),
    tenantId: tenantOf(i),
    agentId,
    agentVersion: 1,
    userId,
    status,
    outcome: closed ? status : null,
    capability: CAPABILITIES[i % 3],
    capabilityId: randomUUID(),
    phase: 'ask',
    awaitingInput: !closed,
    flow: { slots: {}, actions: {}, attempts: 0, wait: closed ? 'closed' : 'open' },
    context: null,
    turnCount: 5,
    auditSeq: audit.length,
    auditHash: null,
    createdAt: iso(at),
    updatedAt: iso(at + 5),
    completedAt: closed ? iso(at + 5) : null,
    lastUserTurnAt: iso(at + 4),
    inactiveAfter: null,
    erasedAt: null,
    eventSeq: 0,
    channel: null,
  };
  return {
    conversation,
    isNew: true,
    expectedAuditSeq: 0,
    previousAuditHash: null,
    turns,
    audit,
    requestId: `seed-${i}`,
    events: [{ type: 'turn.created', data: { index: 0 }, createdAt: iso(at) }],
    review: findingOf(i, at),
  };
}

const TABLES: Tables = [
  ['conversations', (w) => [w.conversation]],
  ['turns', (w) => w.turns],
  ['audit_entries', (w) => w.audit],
  ['conversation_events', (w) => w.events],
  ['review_occurrences', (w) => w.reviewOccurrences],
];

async function seed(db: Database): Promise<{ agents: Map<string, string>; seconds: number }> {
  const agentStore = new AgentStore(db);
  const agents = new Map<string, string>();
  for (let t = 0; t < TENANTS; t++) {
    const { agent: row } = await agentStore.put(`tenant-${t}`, 'scale', agent, 'scale-v1', iso(T0));
    agents.set(`tenant-${t}`, row.id);
  }
  const started = performance.now();
  let last = started;
  // The review groups the writes would have upserted, counted here and inserted at the end.
  const groups = new Map<string, WriteRows['reviewGroups'][number]>();
  for (let from = 0; from < CONVERSATIONS; from += BATCH) {
    const writes: WriteRows[] = [];
    for (let i = from; i < Math.min(CONVERSATIONS, from + BATCH); i++) writes.push(writeRows(seeded(i, agents.get(tenantOf(i))!)));
    for (const w of writes) {
      for (const g of w.reviewGroups) {
        const key = `${g.tenant_id} ${g.group_key}`;
        const had = groups.get(key);
        if (had) {
          had.count += g.count;
          had.last_seen_at = g.last_seen_at;
        } else groups.set(key, { ...g });
      }
    }
    await insertBatch(db, TABLES, writes);
    const done = Math.min(CONVERSATIONS, from + BATCH);
    if (performance.now() - last > 5000 || done === CONVERSATIONS) {
      last = performance.now();
      const s = (last - started) / 1000;
      console.log(
        `  seeded ${done.toLocaleString('en')} of ${CONVERSATIONS.toLocaleString('en')} conversations in ${s.toFixed(0)}s (${Math.round(done / s)}/s)`,
      );
    }
  }
  await db.knex.batchInsert('review_groups', [...groups.values()], 500);
  console.log(`  ${groups.size.toLocaleString('en')} review groups`);
  // Vacuumed as autovacuum leaves a settled table (its visibility map set: index-only scans read no heap), and analyzed.
  if (db.dialect === 'postgres') await db.knex.raw('vacuum analyze');
  return { agents, seconds: (performance.now() - started) / 1000 };
}

/** Appends `turns` turns and `entries` chained audit entries to a conversation, through the store. */
async function grow(store: ConversationStore, tenantId: string, agentId: string, id: string, more: { turns: number; entries: number }): Promise<void> {
  await store.exclusive(`grow:${id}`, { tenantId, id }, async (unit) => {
    const c = (await unit.load(tenantId, agentId, id))!;
    const at = Date.parse(c.updatedAt);
    const turns: TurnRow[] = Array.from({ length: more.turns }, (_, k) => ({
      idx: c.turnCount + k,
      role: k % 2 ? 'agent' : 'user',
      message: `grown turn ${c.turnCount + k}`,
      timestamp: iso(at + k),
      ...(k % 2 ? { phase: c.phase, options: [] } : {}),
    }));
    const audit: AuditDraft[] = Array.from({ length: more.entries }, (_, k) => ({
      type: 'turn_timing',
      turnIndex: null,
      timestamp: iso(at + k),
      durationMs: 1,
      data: { total_ms: 1, k },
    }));
    await unit.commit({
      conversation: { ...c, turnCount: c.turnCount + more.turns, auditSeq: c.auditSeq + more.entries },
      isNew: false,
      expectedAuditSeq: c.auditSeq,
      previousAuditHash: c.auditHash,
      turns,
      audit,
      requestId: 'grow',
    });
  });
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

async function timed(fn: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const r = await fn();
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`${r.url}: ${r.status}`);
  return performance.now() - started;
}

interface Check {
  what: string;
  figure: string;
  met: boolean;
}

async function measure(base: string, db: Database, agents: Map<string, string>): Promise<Check[]> {
  const h = (tenant: string) => ({ 'tenant-id': tenant, 'content-type': 'application/json' });
  const api = (tenant: string, path: string, init: RequestInit = {}) => fetch(`${base}/api/v1${path}`, { ...init, headers: h(tenant) });
  const converse = async (tenant: string, body: object) => {
    const r = await api(tenant, '/agents/scale/converse', { method: 'POST', body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`converse: ${r.status} ${await r.text()}`);
    return (await r.json()) as { conversation_id: string };
  };
  const store = new ConversationStore(db);
  const checks: Check[] = [];
  const T = 'tenant-1';

  // Converse on conversations at turn 1 against one at turn 900.
  const fresh: string[] = [];
  for (let i = 0; i < 100; i++) fresh.push((await converse(T, { message: 'where is my order' })).conversation_id);
  const long = (await converse(T, { message: 'where is my order' })).conversation_id;
  await grow(store, T, agents.get(T)!, long, { turns: 898, entries: 0 });
  const early: number[] = [];
  const late: number[] = [];
  for (let i = 0; i < 100; i++) {
    early.push(await timed(() => api(T, '/agents/scale/converse', { method: 'POST', body: JSON.stringify({ message: `A-${i}`, conversation_id: fresh[i] }) })));
    late.push(await timed(() => api(T, '/agents/scale/converse', { method: 'POST', body: JSON.stringify({ message: `B-${i}`, conversation_id: long }) })));
  }
  const ratio = pct(late, 50) / pct(early, 50);
  checks.push({
    what: 'converse p50, turn 900 vs turn 1 (≤ 1.5×)',
    figure: `${fmt(pct(late, 50))} vs ${fmt(pct(early, 50))} (${ratio.toFixed(2)}×)`,
    met: ratio <= 1.5,
  });

  // List pages, 50 deep, with each filter.
  const filters = ['', 'status=active', 'user_id=user-100', 'capability=billing', 'created_after=2026-01-01T00:00:00.000Z'];
  for (const f of filters) {
    const times: number[] = [];
    for (const tenant of ['tenant-2', 'tenant-3', 'tenant-4', 'tenant-6']) {
      let cursor: string | null = null;
      for (let page = 0; page < 50; page++) {
        const q = [f, 'limit=20', cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&');
        const started = performance.now();
        const r = await api(tenant, `/agents/scale/conversations?${q}`);
        const body = (await r.json()) as { next_cursor: string | null };
        times.push(performance.now() - started);
        cursor = body.next_cursor;
        if (!cursor) break;
      }
    }
    checks.push({
      what: `list ${f || '(no filter)'}, pages to 50 deep, p99 (< 20 ms)`,
      figure: `${fmt(pct(times, 99))} over ${times.length} pages`,
      met: pct(times, 99) < 20,
    });
  }

  // Get and history of a 1,000-turn conversation.
  const thousand = (await converse(T, { message: 'where is my order' })).conversation_id;
  await grow(store, T, agents.get(T)!, thousand, { turns: 998, entries: 0 });
  const gets: number[] = [];
  const histories: number[] = [];
  // 200 samples each: with fewer, the p99 is the single slowest request.
  for (let i = 0; i < 200; i++) {
    gets.push(await timed(() => api(T, `/agents/scale/conversations/${thousand}`)));
    histories.push(await timed(() => api(T, `/agents/scale/conversations/${thousand}/history`)));
  }
  checks.push({ what: 'get of a 1,000-turn conversation, p99 (< 30 ms)', figure: fmt(pct(gets, 99)), met: pct(gets, 99) < 30 });
  checks.push({ what: 'history of a 1,000-turn conversation, p99 (< 30 ms)', figure: fmt(pct(histories, 99)), met: pct(histories, 99) < 30 });

  // Verify of a 2,000-entry chain.
  const chained = (await converse(T, { message: 'where is my order' })).conversation_id;
  const c = await store.get(T, agents.get(T)!, chained);
  await grow(store, T, agents.get(T)!, chained, { turns: 0, entries: 2000 - c!.auditSeq });
  const verifies: number[] = [];
  for (let i = 0; i < 10; i++) verifies.push(await timed(() => api(T, `/agents/scale/conversations/${chained}/audit-logs/verify`)));
  checks.push({
    what: 'verify of a 2,000-entry audit chain (< 200 ms)',
    figure: `${fmt(pct(verifies, 50))} p50, ${fmt(Math.max(...verifies))} max`,
    met: Math.max(...verifies) < 200,
  });

  // The review inbox, 20 pages deep: all open items, one reason, and a time window.
  // The window: the second quarter of the seeded conversations' span.
  const span = CONVERSATIONS * 1000;
  for (const f of ['', 'reason=low_margin', `since=${iso(T0 + span / 4)}&until=${iso(T0 + span / 2)}`]) {
    const times: number[] = [];
    let items = 0;
    for (const tenant of ['tenant-2', 'tenant-3', 'tenant-4', 'tenant-6']) {
      let cursor: string | null = null;
      for (let page = 0; page < 20; page++) {
        const q = [f, 'limit=20', cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&');
        const started = performance.now();
        const r = await api(tenant, `/agents/scale/review?${q}`);
        const body = (await r.json()) as { data: unknown[]; next_cursor: string | null };
        times.push(performance.now() - started);
        items += body.data.length;
        cursor = body.next_cursor;
        if (!cursor) break;
      }
    }
    checks.push({
      what: `review inbox ${f || '(open, no filter)'}, pages to 20 deep with counts, p99 (< 20 ms)`,
      figure: `${fmt(pct(times, 99))} over ${times.length} pages (${items} items)`,
      met: pct(times, 99) < 20 && items > 0,
    });
  }

  // Erasure of one user's 1,000 conversations, with other traffic running.
  const other = (await converse('tenant-5', { message: 'where is my order' })).conversation_id;
  const traffic = (seconds: number) =>
    autocannon({
      url: `${base}/api/v1/agents/scale/converse`,
      method: 'POST',
      headers: h('tenant-5'),
      connections: 4,
      duration: seconds,
      body: JSON.stringify({ message: 'C-1', conversation_id: other }),
    });
  const before = await traffic(3);
  const during = traffic(4);
  await new Promise((r) => setTimeout(r, 500));
  const eraseStarted = performance.now();
  const erased = await api('tenant-0', `/users/${ERASED_USER}/conversations`, { method: 'DELETE' });
  const result = (await erased.json()) as { erased: number };
  const eraseMs = performance.now() - eraseStarted;
  const duringResult = await during;
  const expected = Math.min(1000, Math.ceil(CONVERSATIONS / TENANTS));
  checks.push({
    what: `erasure of one user's ${expected} conversations (< 2 s)`,
    figure: `${result.erased} erased in ${fmt(eraseMs)}`,
    met: result.erased === expected && eraseMs < 2000,
  });
  checks.push({
    what: 'other traffic during the erasure: p99 (not more than doubled)',
    figure: `${duringResult.latency.p99} ms during vs ${before.latency.p99} ms before`,
    met: duringResult.latency.p99 <= Math.max(2 * before.latency.p99, 20),
  });
  checks.push(...(await retention(db, traffic)));
  return checks;
}

/**
 * The two ways history goes: the sweeper's retention pass (RETENTION_DAYS: 200 closed
 * conversations erased, as LifecycleService.sweep does it) and the history horizon
 * (HISTORY_RETENTION_DAYS) passing the seed's first month: on PostgreSQL that month's partitions
 * dropped, on SQLite one sweep's batch of deletes.
 */
async function retention(db: Database, traffic: (seconds: number) => Promise<autocannon.Result>): Promise<Check[]> {
  const store = new ConversationStore(db);
  const checks: Check[] = [];
  const started = performance.now();
  const due = await store.dueForRetention({ before: iso(T0 + CONVERSATIONS * 1000), limit: 200 });
  const byTenant = new Map<string, string[]>();
  for (const d of due) byTenant.set(d.tenantId, [...(byTenant.get(d.tenantId) ?? []), d.id]);
  let erased = 0;
  const now = new Date().toISOString();
  for (const [tenant, ids] of byTenant)
    erased += await store.eraseMany(tenant, ids, { accept: (c) => !c.erasedAt, now: () => now, rules: ERASURE, skipIfBusy: true });
  const passMs = performance.now() - started;
  checks.push({
    what: 'retention sweep: one pass erasing 200 closed conversations (< 2 s)',
    figure: `${erased} erased in ${fmt(passMs)}`,
    met: erased === 200 && passMs < 2000,
  });

  const month = monthStart(T0, 1);
  const count = async (table: PartitionedTable, before?: string) => {
    const q = db.knex(table);
    if (before) q.where(keyOf(table), '<', before);
    return Number(((await q.count({ n: '*' }).first()) as { n: unknown }).n);
  };
  const old = (await count('turns', month)) + (await count('audit_entries', month)) + (await count('conversation_events', month));
  // With other traffic running: its writes wait for each table's detach (the catalog's change), not for the files' removal.
  const quiet = await traffic(3);
  const busy = traffic(4);
  await new Promise((r) => setTimeout(r, 500));
  const dropStarted = performance.now();
  const dropped = await dropHistoryBefore(db.knex, month, 5000);
  const dropMs = performance.now() - dropStarted;
  const during = await busy;
  const what =
    db.dialect === 'postgres'
      ? "history horizon: the seed's first month dropped, other traffic's p99 during it (not more than doubled)"
      : "history horizon: one sweep of deletes, 5,000 rows a table, other traffic's p99 during it (not more than doubled)";
  const figure =
    db.dialect === 'postgres'
      ? `${dropped.partitions.length} partitions, ${old.toLocaleString('en')} rows, in ${fmt(dropMs)}; p99 ${during.latency.p99} ms during vs ${quiet.latency.p99} ms before`
      : `${dropped.rows.toLocaleString('en')} of ${old.toLocaleString('en')} rows in ${fmt(dropMs)} (${Math.round(dropped.rows / (dropMs / 1000)).toLocaleString('en')} rows/s); p99 ${during.latency.p99} ms during vs ${quiet.latency.p99} ms before`;
  const gone = db.dialect === 'postgres' ? (await count('turns', month)) === 0 : dropped.rows > 0;
  checks.push({ what, figure, met: gone && during.latency.p99 <= Math.max(2 * quiet.latency.p99, 20) });
  return checks;
}

/**
 * PostgreSQL: a partition for each month from the seed's first on. The migration partitioned the
 * empty tables from today's month (everything before in `_legacy`), and the seed lies in the past.
 */
async function monthsFromSeed(db: Database): Promise<void> {
  if (db.dialect !== 'postgres') return;
  for (const { table } of PARTITIONED) {
    const legacy = `${table}_legacy`;
    await db.knex.raw(`drop table ${legacy}`);
    await db.knex.raw(`create table ${legacy} partition of ${table} for values from (minvalue) to ('${monthStart(T0)}')`);
    const first = (await listPartitions(db.knex, table)).find((p) => !p.isDefault && p.name !== legacy)!.from!;
    for (let m = monthStart(T0); m < first; m = monthStart(Date.parse(m), 1)) {
      await db.knex.raw(`create table ${partitionName(table, m)} partition of ${table} for values from ('${m}') to ('${monthStart(Date.parse(m), 1)}')`);
    }
  }
}

async function benchOne(label: string, url: string): Promise<boolean> {
  console.log(`\n## ${label}: ${CONVERSATIONS.toLocaleString('en')} conversations of 5 turns across ${TENANTS} tenants`);
  const db = openDatabase(url, { poolMax: 4, queryTimeoutMs: 600_000 });
  await migrate(db);
  await monthsFromSeed(db);
  const { agents, seconds } = await seed(db);
  const size =
    db.dialect === 'sqlite'
      ? statSync(new URL(url.replace('sqlite://', 'file://')).pathname).size
      : Number(((await db.knex.raw('select pg_database_size(current_database()) as n')) as { rows: { n: string }[] }).rows[0].n);
  console.log(`  seeding took ${seconds.toFixed(0)}s; the database is ${(size / 1048576).toFixed(0)} MiB`);
  const server = await startServer(url, { MAX_TURNS_PER_CONVERSATION: '100000' });
  try {
    const checks = await measure(server.base, db, agents);
    console.log('\n| measure | figure | target |');
    console.log('|---|---|---|');
    for (const c of checks) console.log(`| ${c.what} | ${c.figure} | ${c.met ? 'met' : 'NOT met'} |`);
    return checks.every((c) => c.met);
  } finally {
    await server.stop();
    await db.close();
  }
}

async function main() {
  await onEachDatabase('scale', { value: ONLY, variable: 'BENCH_SCALE_DATABASES' }, benchOne);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
