// Seals of hash chains (store/chain-seals.ts): one row per chain sealed under the operator's
// current AUDIT_CHAIN_KEY, naming the entry up to which entries written without it (before the key
// was set, or under an older key) are vouched for. A database writer can delete a seal, which only
// makes its chain fail verification, and cannot write one that verifies.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('chain_seals', (t) => {
    t.string('kind', 16).notNullable(); // 'conversation' or 'release'
    t.uuid('chain_id').notNullable(); // the conversation's id, or the agent's for its release record
    t.string('tenant_id', 64).notNullable();
    t.integer('sequence').notNullable();
    t.string('hash', 64).notNullable();
    t.string('seal', 64).notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['kind', 'chain_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('chain_seals');
}
