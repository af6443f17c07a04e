// The passages an agent turn's answer cites (an answer phase's quotes, a generative phase's
// named passages): JSON, as the converse response's `citations`, kept so that the history, the
// event stream, the widget and the console show them after the turn.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('turns', (t) => {
    t.text('citations');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('turns', (t) => {
    t.dropColumn('citations');
  });
}
