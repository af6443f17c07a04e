// Tamper-evident audit log: each entry carries the hash of its data and a hash chained to the
// previous entry of its conversation; the conversation keeps the newest hash (the chain head).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.string('audit_hash', 64).nullable();
  });
  await knex.schema.alterTable('audit_entries', (t) => {
    t.string('data_hash', 64).nullable();
    t.string('hash', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_entries', (t) => {
    t.dropColumn('data_hash');
    t.dropColumn('hash');
  });
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('audit_hash');
  });
}
