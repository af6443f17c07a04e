// Trained routers, stored once per tenant and definition digest, so that a process that meets an
// agent version loads its router instead of training it again (after a restart, a deploy, a cache
// eviction, or on another replica). `format` is the layout of `state`; `model` the training
// method that produced it (docs/routing.md).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stored_routers', (t) => {
    t.string('tenant_id', 64).notNullable();
    t.string('digest', 64).notNullable();
    t.integer('format').notNullable();
    t.string('model', 64).notNullable();
    t.binary('state').notNullable();
    t.integer('bytes').notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['tenant_id', 'digest']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('stored_routers');
}
