// The web chat widget: publishable keys (api_keys rows whose scopes are `widget`, bound to agents
// and allowed origins; their key is public by design, so it is kept whole to show the snippet
// again), and where a conversation came from (its channel, the page's origin and URL). No index
// on the channel: a list filtered by it walks the agent's list index, and every turn's write
// stays as cheap as before.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('agents').nullable();
    t.text('origins').nullable();
    t.string('public_key', 64).nullable();
  });
  await knex.schema.alterTable('conversations', (t) => {
    t.string('channel', 16).nullable();
    t.string('origin', 255).nullable();
    t.text('page_url').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('page_url');
    t.dropColumn('origin');
    t.dropColumn('channel');
  });
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('public_key');
    t.dropColumn('origins');
    t.dropColumn('agents');
  });
}
