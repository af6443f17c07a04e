// Indexes for costs that stay flat as tables grow: an agent's conversations filtered by status,
// by capability or by user, each in list order (a filter that matches few rows would otherwise
// scan all of a tenant's conversations to fill a page), and closed conversations by age for the
// retention sweep (which otherwise scans every conversation of every tenant). Checked by
// test/store/query-plans.test.ts on both databases.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.index(['tenant_id', 'agent_id', 'status', 'created_at', 'id'], 'conversations_status_idx');
    t.index(['tenant_id', 'agent_id', 'capability', 'created_at', 'id'], 'conversations_capability_idx');
    t.index(['tenant_id', 'agent_id', 'user_id', 'created_at', 'id'], 'conversations_agent_user_idx');
    t.index(['status', 'updated_at'], 'conversations_closed_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.dropIndex([], 'conversations_status_idx');
    t.dropIndex([], 'conversations_capability_idx');
    t.dropIndex([], 'conversations_agent_user_idx');
    t.dropIndex([], 'conversations_closed_idx');
  });
}
