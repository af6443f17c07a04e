// Secrets the service makes for itself and every replica shares, such as the key that signs the
// web chat widget's visitor tokens: made at random by the first process that needs one, kept here
// so that a token one replica signed is good on every other, with nothing to configure.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('service_secrets', (t) => {
    t.string('name', 64).primary();
    t.string('secret', 128).notNullable();
    t.string('created_at', 32).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('service_secrets');
}
