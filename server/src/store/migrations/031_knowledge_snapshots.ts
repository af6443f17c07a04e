// Knowledge snapshots (docs/knowledge.md, "Knowledge in releases"). Every change of a tenant's
// passages (a file read, a page synced or dropped, a source deleted) is the tenant's next
// snapshot number; a passage records the snapshot it came in (`added`) and the one that replaced
// it (`removed`), so the passages of snapshot n are those added at or before n and not removed by
// then. An agent version whose definition asks for knowledge through releases pins the snapshot
// it was made at (and a digest of the passages its sources had then); replaced passages are kept
// while a version in use (current, split candidate, newest) pins a snapshot that sees them, and
// `kept_from` says from which snapshot on every one is whole.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('knowledge_passages', (t) => {
    t.integer('added').notNullable().defaultTo(0);
    t.integer('removed');
    t.index(['tenant_id', 'removed'], 'knowledge_passages_removed');
  });
  await knex.schema.createTable('knowledge_snapshots', (t) => {
    t.string('tenant_id', 128).notNullable().primary();
    t.integer('snapshot').notNullable();
    t.integer('kept_from').notNullable();
    t.string('changed_at', 32).notNullable();
  });
  await knex.schema.alterTable('agent_versions', (t) => {
    t.integer('knowledge_snapshot');
    t.string('knowledge_digest', 64);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => {
    t.dropColumn('knowledge_digest');
    t.dropColumn('knowledge_snapshot');
  });
  await knex.schema.dropTable('knowledge_snapshots');
  await knex.schema.alterTable('knowledge_passages', (t) => {
    t.dropIndex(['tenant_id', 'removed'], 'knowledge_passages_removed');
    t.dropColumn('removed');
    t.dropColumn('added');
  });
}
