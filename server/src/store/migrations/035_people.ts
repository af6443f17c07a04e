// People who sign in with the tenant's OpenID provider (docs/people.md), their sessions, and the
// sign-ins under way.
// - people: one row per (tenant, issuer, subject): who the provider says the person is (the email
//   is shown, never trusted for identity), the roles granted to them here, and when they were
//   disabled.
// - person_sessions: a browser's session, found by the SHA-256 of its cookie (never the cookie),
//   with the roles the provider's groups gave at sign-in, its CSRF token, and idle and absolute
//   expiry; revoked sessions keep their row until they would have expired.
// - login_attempts: a sign-in between the redirect to the provider and its callback, found by its
//   state, used once.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('people', (t) => {
    t.uuid('id').primary();
    t.string('tenant_id', 128).notNullable();
    t.string('issuer', 512).notNullable();
    t.string('subject', 255).notNullable();
    t.string('email', 320).nullable();
    t.string('name', 200).nullable();
    t.text('roles').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('last_sign_in_at', 30).nullable();
    t.string('disabled_at', 30).nullable();
    t.unique(['tenant_id', 'issuer', 'subject']);
  });
  await knex.schema.createTable('person_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.uuid('id').notNullable().unique();
    t.string('tenant_id', 128).notNullable();
    t.uuid('person_id').notNullable();
    t.text('group_roles').notNullable();
    t.string('csrf', 64).notNullable();
    t.text('id_token').nullable();
    t.string('created_at', 30).notNullable();
    t.string('seen_at', 30).notNullable();
    t.string('expires_at', 30).notNullable();
    t.string('revoked_at', 30).nullable();
    t.index(['tenant_id', 'person_id']);
  });
  await knex.schema.createTable('login_attempts', (t) => {
    t.string('state', 128).primary();
    t.string('verifier', 128).notNullable();
    t.string('nonce', 128).notNullable();
    t.string('return_to', 1024).notNullable();
    t.string('created_at', 30).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_attempts');
  await knex.schema.dropTable('person_sessions');
  await knex.schema.dropTable('people');
}
