// The last updates a channel's provider sent that were not messages to answer (a bot's own
// message, a status notification, a button press the adapter could not read), with why: JSON,
// newest first, a few at most, so that the console can show them beside the channel.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('channels', (t) => {
    t.text('ignored');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('channels', (t) => {
    t.dropColumn('ignored');
  });
}
