// Web knowledge sources (docs/knowledge.md, "A web page or a site"): a source may be a page or a
// site (by sitemap or by following links), fetched and synced on a schedule. Each page fetched is
// a row of knowledge_pages with what a conditional request needs (ETag, Last-Modified), its
// content hash and its failures in a row; its passages carry its URL so that a changed page
// replaces only its own. A sync is claimed by one server at a time through `sync_until` (a lease
// renewed while it works), and the syncs a tenant starts are counted per day.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.text('site');
    t.string('schedule', 16);
    t.string('next_sync_at', 32);
    t.string('sync_until', 32);
    t.string('fetched_at', 32);
    t.string('changed_at', 32);
    t.integer('synced_revision');
  });
  await knex.schema.alterTable('knowledge_passages', (t) => {
    t.text('url');
  });
  await knex.schema.createTable('knowledge_pages', (t) => {
    t.string('tenant_id', 128).notNullable();
    t.string('source', 64).notNullable();
    t.string('url', 2048).notNullable();
    t.text('title');
    t.text('etag');
    t.text('last_modified');
    t.string('sha256', 64);
    t.bigInteger('bytes').notNullable();
    t.integer('passages').notNullable();
    t.text('links');
    t.integer('failures').notNullable();
    t.text('error');
    t.string('fetched_at', 32);
    t.string('changed_at', 32);
    t.primary(['tenant_id', 'source', 'url']);
  });
  await knex.schema.createTable('knowledge_sync_days', (t) => {
    t.string('tenant_id', 128).notNullable();
    t.string('day', 10).notNullable();
    t.integer('syncs').notNullable();
    t.primary(['tenant_id', 'day']);
  });
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.index(['next_sync_at'], 'knowledge_sources_next_sync');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.dropIndex(['next_sync_at'], 'knowledge_sources_next_sync');
  });
  await knex.schema.dropTable('knowledge_sync_days');
  await knex.schema.dropTable('knowledge_pages');
  await knex.schema.alterTable('knowledge_passages', (t) => {
    t.dropColumn('url');
  });
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.dropColumn('synced_revision');
    t.dropColumn('changed_at');
    t.dropColumn('fetched_at');
    t.dropColumn('sync_until');
    t.dropColumn('next_sync_at');
    t.dropColumn('schedule');
    t.dropColumn('site');
  });
}
