// Releases (service/releases.ts): each agent's release record, a hash chain of its own
// (release_records, the head and length on the agent row, written in the transaction that
// changes the agent), its traffic split (three columns of the agent row, so that the converse
// path reads it with the agent and no other query), the digests an evaluation measured (so that
// a gate reuses one of the same versions and test suite), and the hourly counters kept per
// version: agent_stats and agent_closes take `version` into their keys, refilled by a recount.
import type { Knex } from 'knex';
import { backfill } from './011_agent_stats.js';

/**
 * agent_stats and agent_closes made again with `version` in their keys, and filled by a recount
 * of the stored conversations and their audit entries (migration 011's backfill, per version):
 * the counters of conversations stored before stay exact, now per version.
 */
export async function rebuildStats(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_stats');
  await knex.schema.dropTableIfExists('agent_closes');
  await knex.schema.createTable('agent_stats', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('hour', 13).notNullable();
    t.integer('version').notNullable();
    t.string('capability', 255).notNullable();
    t.string('outcome', 255).notNullable();
    for (const c of ['started', 'completed', 'escalated', 'abandoned', 'routed', 'fallback']) t.integer(c).notNullable().defaultTo(0);
    t.primary(['tenant_id', 'agent_id', 'hour', 'version', 'capability', 'outcome']);
  });
  await knex.schema.createTable('agent_closes', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.string('hour', 13).notNullable();
    t.integer('version').notNullable();
    t.string('measure', 16).notNullable();
    t.integer('value').notNullable();
    t.integer('n').notNullable().defaultTo(0);
    t.primary(['tenant_id', 'agent_id', 'hour', 'version', 'measure', 'value']);
  });
  await backfill(knex, true);
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.integer('split_version').nullable();
    t.integer('split_share').nullable(); // hundredths of a percent, 0–10000
    t.string('split_started_at', 30).nullable();
    t.integer('release_seq').notNullable().defaultTo(0);
    t.string('release_hash', 64).nullable();
  });
  await knex.schema.createTable('release_records', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 64).notNullable();
    t.uuid('agent_id').notNullable();
    t.integer('sequence').notNullable();
    t.string('action', 16).notNullable();
    t.integer('version').notNullable();
    t.string('request_id', 200).notNullable();
    t.string('created_at', 30).notNullable();
    t.text('data').notNullable();
    t.string('data_hash', 64).notNullable();
    t.string('hash', 64).notNullable();
    t.unique(['tenant_id', 'agent_id', 'sequence'], { indexName: 'release_records_seq' });
  });
  await knex.schema.alterTable('evaluations', (t) => {
    t.string('digest', 64).nullable();
    t.string('baseline_digest', 64).nullable();
    t.string('inputs_digest', 64).nullable(); // the test suite, replay size and folds it ran with
    t.index(['tenant_id', 'agent_id', 'digest', 'baseline_digest', 'created_at'], 'evaluations_digest_idx');
  });
  await rebuildStats(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('release_records');
  await knex.schema.alterTable('evaluations', (t) => {
    t.dropIndex([], 'evaluations_digest_idx');
    t.dropColumn('digest');
    t.dropColumn('baseline_digest');
    t.dropColumn('inputs_digest');
  });
  await knex.schema.alterTable('agents', (t) => {
    for (const c of ['split_version', 'split_share', 'split_started_at', 'release_seq', 'release_hash']) t.dropColumn(c);
  });
}
