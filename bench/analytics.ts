// `npm run bench:analytics`: the analytics API on a large agent. Seeds BENCH_ANALYTICS_CONVERSATIONS
// conversations (default 1,000,000) of one agent across 90 days, with the hourly counters and
// distributions their writes would have added (service/agent-stats.ts), on SQLite and (with BENCH_DATABASE_URL or
// TEST_DATABASE_URL) on PostgreSQL; then starts the server on that database and times, over
// HTTP, a 30-day query by day and a 24-hour query by hour. Target: under 500 ms each.
import { randomUUID } from 'node:crypto';
import { STAT_COUNTERS, type AuditDraft, type CloseDelta, type Conversation, type StatDelta } from '../server/src/domain.js';
import { closeDeltas, statDeltas } from '../server/src/service/agents/agent-stats.js';
import { AgentStore } from '../server/src/store/agents/agent-store.js';
import { migrate, openDatabase, type Database } from '../server/src/store/db.js';
import { writeRows, type WriteRows } from '../server/src/store/writer/turn-rows.js';
import { insertBatch } from './bulk.js';
import { onEachDatabase, startServer } from './server.js';

const CONVERSATIONS = Number(process.env.BENCH_ANALYTICS_CONVERSATIONS ?? 1_000_000);
const ONLY = process.env.BENCH_ANALYTICS_DATABASES;
const BATCH = 5_000;
const RUNS = 10;
const TARGET_MS = 500;
const DAY = 86_400_000;
const END = Date.parse('2026-11-01T00:00:00.000Z');
const START = END - 90 * DAY;
const TENANT = 'bench';
const CAPABILITIES = ['order_status', 'returns', 'billing', 'shipping', 'account', 'human', 'store_hours', 'fallback'];
const OUTCOMES = ['resolved', 'order_found', 'refund_started', 'address_changed'];
const iso = (ms: number) => new Date(ms).toISOString();

/** A deterministic pseudo-random number in [0, 1) for conversation i and salt k. */
const rand = (i: number, k: number) => {
  let x = (i * 2654435761 + k * 40503) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x45d9f3b) >>> 0;
  x ^= x >>> 16;
  return (x >>> 0) / 4294967296;
};

/** One seeded conversation: its row, and the routing decision and close its counters come from. */
function seeded(i: number, agentId: string): { write: WriteRows; stats: StatDelta[]; closes: CloseDelta[] } {
  const at = START + Math.floor((i * 90 * DAY) / CONVERSATIONS);
  const capability = CAPABILITIES[Math.floor(rand(i, 1) * CAPABILITIES.length)];
  const r = rand(i, 2);
  // Open ones are the most recent; the others closed after 30 s to 2 h.
  const recent = at > END - DAY;
  const status = recent && r < 0.3 ? 'active' : r < 0.55 ? 'completed' : r < 0.7 ? 'escalated' : r < 0.9 ? 'abandoned' : 'completed';
  const closedAt = at + 30_000 + Math.floor(rand(i, 3) * 7_170_000);
  const closes = status !== 'active';
  const outcome = status === 'completed' ? OUTCOMES[Math.floor(rand(i, 4) * OUTCOMES.length)] : status === 'active' ? null : status;
  const audit: AuditDraft[] = [
    { type: 'routing_decision', turnIndex: 0, timestamp: iso(at), durationMs: 0.2, data: { selected: { capability, score: 0.8 } } },
    ...(closes
      ? [
          {
            type: 'status_change' as const,
            turnIndex: null,
            timestamp: iso(Math.min(closedAt, END - 1)),
            durationMs: null,
            data: { from: 'active', to: status, outcome },
          },
        ]
      : []),
  ];
  const finished = status === 'completed' || status === 'abandoned';
  const conversation: Conversation = {
    id: randomUUID(),
    tenantId: TENANT,
    agentId,
    agentVersion: 1,
    userId: `user-${i % 50_000}`,
    status,
    outcome,
    capability,
    capabilityId: randomUUID(),
    phase: 'ask',
    awaitingInput: !finished,
    flow: { slots: {}, actions: {}, attempts: 0, wait: finished ? 'closed' : 'open' },
    context: null,
    turnCount: 2 + 2 * Math.floor(rand(i, 5) * 6),
    auditSeq: audit.length,
    auditHash: null,
    createdAt: iso(at),
    updatedAt: iso(closes ? Math.min(closedAt, END - 1) : at),
    completedAt: finished ? iso(Math.min(closedAt, END - 1)) : null,
    lastUserTurnAt: iso(at),
    inactiveAfter: null,
    erasedAt: null,
    eventSeq: 0,
    channel: null,
  };
  const draft = { conversation, isNew: true, expectedAuditSeq: 0, previousAuditHash: null, turns: [], audit, requestId: `seed-${i}` };
  return { write: writeRows(draft), stats: statDeltas(draft, 'fallback'), closes: closeDeltas(draft) };
}

async function seed(db: Database): Promise<string> {
  const { agent } = await new AgentStore(db).put(TENANT, 'support', { name: 'Support' }, 'bench-v1', iso(START));
  const totals = new Map<string, StatDelta>();
  const closes = new Map<string, CloseDelta>();
  const started = performance.now();
  let last = started;
  for (let from = 0; from < CONVERSATIONS; from += BATCH) {
    const writes: WriteRows[] = [];
    for (let i = from; i < Math.min(CONVERSATIONS, from + BATCH); i++) {
      const { write, stats, closes: closed } = seeded(i, agent.id);
      writes.push(write);
      for (const d of closed) {
        const key = `${d.hour}\0${d.measure}\0${d.value}`;
        const t = closes.get(key);
        if (!t) closes.set(key, { ...d });
        else t.n += d.n;
      }
      for (const d of stats) {
        const key = `${d.hour}\0${d.capability}\0${d.outcome}`;
        const t = totals.get(key);
        if (!t) totals.set(key, { ...d });
        else for (const c of STAT_COUNTERS) t[c] += d[c];
      }
    }
    await insertBatch(db, [['conversations', (w) => [w.conversation]]], writes);
    const done = Math.min(CONVERSATIONS, from + BATCH);
    if (performance.now() - last > 5000 || done === CONVERSATIONS) {
      last = performance.now();
      console.log(`  seeded ${done.toLocaleString('en')} of ${CONVERSATIONS.toLocaleString('en')} conversations in ${((last - started) / 1000).toFixed(0)}s`);
    }
  }
  const rows = [...totals.values()].map((d) => ({ tenant_id: TENANT, agent_id: agent.id, ...d }));
  for (let i = 0; i < rows.length; i += 500) await db.knex('agent_stats').insert(rows.slice(i, i + 500));
  const closeRows = [...closes.values()].map((d) => ({ tenant_id: TENANT, agent_id: agent.id, ...d }));
  for (let i = 0; i < closeRows.length; i += 500) await db.knex('agent_closes').insert(closeRows.slice(i, i + 500));
  console.log(`  ${rows.length.toLocaleString('en')} hourly counter rows, ${closeRows.length.toLocaleString('en')} distribution rows`);
  if (db.dialect === 'postgres') await db.knex.raw('analyze');
  return agent.id;
}

async function time(url: string): Promise<{ median: number; max: number; body: { conversations: { started: number } } }> {
  const ms: number[] = [];
  let body: unknown;
  for (let i = 0; i < RUNS + 2; i++) {
    const t = performance.now();
    const res = await fetch(url, { headers: { 'tenant-id': TENANT } });
    body = await res.json();
    if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
    if (i >= 2) ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1], body: body as { conversations: { started: number } } };
}

async function benchOne(label: string, url: string): Promise<boolean> {
  console.log(`\n## ${label}: ${CONVERSATIONS.toLocaleString('en')} conversations of one agent across 90 days`);
  const db = openDatabase(url, { poolMax: 4, queryTimeoutMs: 600_000 });
  await migrate(db);
  try {
    await seed(db);
  } finally {
    await db.close();
  }
  const server = await startServer(url);
  try {
    const base = `${server.base}/api/v1/agents/support/analytics`;
    const queries = [
      { what: '30 days by day', q: `?from=${iso(END - 30 * DAY)}&to=${iso(END)}&interval=day` },
      { what: '24 hours by hour', q: `?from=${iso(END - DAY)}&to=${iso(END)}&interval=hour` },
    ];
    console.log(`\n| query | conversations started | median | max of ${RUNS} | target |`);
    console.log('|---|---|---|---|---|');
    let met = true;
    for (const { what, q } of queries) {
      const r = await time(base + q);
      const ok = r.max < TARGET_MS;
      met &&= ok;
      console.log(
        `| ${what} | ${r.body.conversations.started.toLocaleString('en')} | ${r.median.toFixed(1)} ms | ${r.max.toFixed(1)} ms | < ${TARGET_MS} ms: ${ok ? 'met' : 'NOT met'} |`,
      );
    }
    return met;
  } finally {
    await server.stop();
  }
}

async function main() {
  await onEachDatabase('analytics', { value: ONLY, variable: 'BENCH_ANALYTICS_DATABASES' }, benchOne);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
