// What made each stored version of an agent ("PUT", "agents apply agents/shop.yaml", "review:
// 2 messages added as examples of order_status"), shown beside it in the versions list. Older
// versions have none.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => {
    t.string('note', 300);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => {
    t.dropColumn('note');
  });
}
