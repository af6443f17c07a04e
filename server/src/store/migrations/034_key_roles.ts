// API keys with roles (contract/src/access.ts): the grants as JSON, each a role for the whole
// tenant or for named agents. Null for a key made with scopes (or by a replica that predates
// roles), whose scopes stand for roles as SCOPE_ROLES says.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('roles').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('roles');
  });
}
