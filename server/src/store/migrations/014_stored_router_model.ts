// A stored router's `model` names the embeddings it was trained with (`tfidf-logreg-v3+embeddings:
// <the model server's model>`), which can be longer than the 64 characters first allowed.
// SQLite does not enforce a varchar's length; PostgreSQL's column is widened.
import type { Knex } from 'knex';

const isPostgres = (knex: Knex) => (knex.client as { dialect?: string }).dialect === 'postgresql';

export async function up(knex: Knex): Promise<void> {
  if (isPostgres(knex)) await knex.raw('alter table stored_routers alter column model type varchar(255)');
}

export async function down(knex: Knex): Promise<void> {
  if (isPostgres(knex)) await knex.raw('alter table stored_routers alter column model type varchar(64)');
}
