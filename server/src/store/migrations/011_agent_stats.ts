// Hourly counters per agent for the analytics API, and the hourly distributions of closed
// conversations' turns and durations for its medians (service/agent-stats.ts says what each
// counts; every write adds its deltas in its own transaction), filled here from the
// conversations and audit entries already stored.
import type { Knex } from 'knex';
import { secondsBucket } from '../../lib/seconds-bucket.js';

const COUNTERS = ['started', 'completed', 'escalated', 'abandoned', 'routed', 'fallback'] as const;
type Counter = (typeof COUNTERS)[number];
const BATCH = 1000;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_stats', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('hour', 13).notNullable();
    t.string('capability', 255).notNullable();
    t.string('outcome', 255).notNullable();
    for (const c of COUNTERS) t.integer(c).notNullable().defaultTo(0);
    t.primary(['tenant_id', 'agent_id', 'hour', 'capability', 'outcome']);
  });
  await knex.schema.createTable('agent_closes', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('hour', 13).notNullable();
    t.string('measure', 16).notNullable();
    t.integer('value').notNullable();
    t.integer('n').notNullable().defaultTo(0);
    t.primary(['tenant_id', 'agent_id', 'hour', 'measure', 'value']);
  });
  await backfill(knex);
}

/**
 * The counters of the conversations stored, by the rules of agent-stats.ts. `perVersion`
 * (migration 019, once the tables key rows by version and conversations record their channel):
 * each row under its conversation's version, and the web chat widget's conversations counted
 * under the `web_*` measures too.
 */
export async function backfill(knex: Knex, perVersion = false): Promise<void> {
  const fallbacks = new Map<string, string>();
  const versions = await knex<{ agent_id: string; version: number | string; definition: string }>('agent_versions').select('agent_id', 'version', 'definition');
  for (const v of versions) {
    const def = JSON.parse(v.definition) as { routing?: { fallback?: string } };
    fallbacks.set(`${v.agent_id}:${Number(v.version)}`, def.routing?.fallback ?? 'fallback');
  }
  const totals = new Map<string, Record<Counter, number> & { tenant_id: string; agent_id: string; hour: string; capability: string; outcome: string }>();
  const versionOf = (c: { agent_version?: number | string }) => (perVersion ? { version: Number(c.agent_version) } : {});
  const add = (
    c: { tenant_id: string; agent_id: string; agent_version?: number | string },
    ts: string,
    capability: string,
    outcome: string,
    counter: Counter,
  ) => {
    const row = { tenant_id: c.tenant_id, agent_id: c.agent_id, hour: ts.slice(0, 13), ...versionOf(c), capability, outcome };
    const key = JSON.stringify(row);
    let t = totals.get(key);
    if (!t) totals.set(key, (t = { ...row, started: 0, completed: 0, escalated: 0, abandoned: 0, routed: 0, fallback: 0 }));
    t[counter]++;
  };
  const closes = new Map<string, { tenant_id: string; agent_id: string; hour: string; measure: string; value: number; n: number }>();
  const close = (c: { tenant_id: string; agent_id: string; agent_version?: number | string }, ts: string, measure: string, value: number) => {
    const row = { tenant_id: c.tenant_id, agent_id: c.agent_id, hour: ts.slice(0, 13), ...versionOf(c), measure, value };
    const key = JSON.stringify(row);
    const found = closes.get(key);
    if (found) found.n++;
    else closes.set(key, { ...row, n: 1 });
  };
  let after: string | null = null;
  for (;;) {
    const convs = (await knex('conversations')
      .select('id', 'tenant_id', 'agent_id', 'agent_version', 'capability', 'created_at', 'completed_at', 'turn_count', ...(perVersion ? ['channel'] : []))
      .modify((q) => (after === null ? q : q.where('id', '>', after)))
      .orderBy('id')
      .limit(BATCH)) as {
      id: string;
      tenant_id: string;
      agent_id: string;
      agent_version: number | string;
      capability: string;
      created_at: string;
      completed_at: string | null;
      turn_count: number | string;
      channel?: string | null;
    }[];
    if (!convs.length) break;
    after = convs[convs.length - 1].id;
    const entries = (await knex('audit_entries')
      .select('conversation_id', 'turn_index', 'type', 'timestamp', 'data')
      .whereIn(
        'conversation_id',
        convs.map((c) => c.id),
      )
      .whereIn('type', ['routing_decision', 'status_change'])
      .orderBy(['conversation_id', 'sequence'])) as { conversation_id: string; turn_index: number | null; type: string; timestamp: string; data: string }[];
    const byConversation = new Map<string, typeof entries>();
    for (const e of entries) {
      const list = byConversation.get(e.conversation_id) ?? [];
      list.push(e);
      byConversation.set(e.conversation_id, list);
    }
    for (const c of convs) {
      const fallback = fallbacks.get(`${c.agent_id}:${Number(c.agent_version)}`) ?? 'fallback';
      let capability: string | null = null;
      let startedUnder: string | null = null;
      for (const e of byConversation.get(c.id) ?? []) {
        const data = JSON.parse(e.data) as { selected?: { capability?: string }; to?: string; outcome?: string | null };
        if (e.type === 'routing_decision') {
          capability = data.selected?.capability ?? c.capability;
          if (e.turn_index === 0 || e.turn_index === null) startedUnder = capability;
          add(c, e.timestamp, capability, '', 'routed');
          if (capability === fallback) add(c, e.timestamp, capability, '', 'fallback');
        } else if (data.to === 'completed' || data.to === 'escalated' || data.to === 'abandoned') {
          add(c, e.timestamp, capability ?? c.capability, data.outcome ?? '', data.to);
          if (c.channel === 'web') close(c, e.timestamp, `web_${data.to}`, 0);
        }
      }
      add(c, c.created_at, startedUnder ?? c.capability, '', 'started');
      if (c.channel === 'web') close(c, c.created_at, 'web_started', 0);
      if (c.completed_at) {
        const seconds = (Date.parse(c.completed_at) - Date.parse(c.created_at)) / 1000;
        close(c, c.completed_at, 'turns', Number(c.turn_count));
        close(c, c.completed_at, 'seconds', secondsBucket(seconds));
      }
    }
  }
  const rows = [...totals.values()];
  for (let i = 0; i < rows.length; i += 100) await knex('agent_stats').insert(rows.slice(i, i + 100));
  const closeRows = [...closes.values()];
  for (let i = 0; i < closeRows.length; i += 100) await knex('agent_closes').insert(closeRows.slice(i, i + 100));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_closes');
  await knex.schema.dropTable('agent_stats');
}
