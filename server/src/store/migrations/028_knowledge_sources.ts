// Knowledge sources: a tenant's documents (docs/knowledge.md) and the passages they were read
// into. A source keeps answering with its passages while a replacement file is read, and after
// one that could not be read; passages are swapped for a new file's in one transaction.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('knowledge_sources', (t) => {
    t.string('tenant_id', 128).notNullable();
    t.string('name', 64).notNullable();
    t.text('title');
    t.text('doc_title');
    t.text('url');
    t.string('language', 35);
    t.text('tags').notNullable();
    t.text('filename');
    t.string('kind', 16);
    t.string('state', 16).notNullable();
    t.text('error');
    t.bigInteger('bytes').notNullable();
    t.integer('pages');
    t.integer('passages').notNullable();
    t.bigInteger('chars').notNullable();
    t.string('sha256', 64).notNullable();
    t.integer('revision').notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.string('indexed_at', 32);
    t.primary(['tenant_id', 'name']);
  });
  await knex.schema.createTable('knowledge_passages', (t) => {
    t.string('tenant_id', 128).notNullable();
    t.string('source', 64).notNullable();
    t.integer('seq').notNullable();
    t.integer('page');
    t.text('heading');
    t.text('text').notNullable();
    t.primary(['tenant_id', 'source', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('knowledge_passages');
  await knex.schema.dropTable('knowledge_sources');
}
