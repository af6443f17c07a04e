// Which definition each stored router belongs to (the digest of the version it routes), so that
// routers no kept version references can be deleted (router-store.ts). A router of a model
// server's embeddings is stored under a digest of the definition's and the embeddings' ids, so
// its key alone does not say. Rows stored before this migration whose key is a version's digest
// get it; the others (routers of server embeddings) stay unattributed and are bounded only by
// the tenant's stored bytes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stored_routers', (t) => {
    t.string('definition', 64).nullable();
  });
  await knex.raw(
    `update stored_routers set definition = digest
     where exists (select 1 from agent_versions v where v.tenant_id = stored_routers.tenant_id and v.digest = stored_routers.digest)`,
  );
  await knex.schema.alterTable('agent_versions', (t) => t.index(['tenant_id', 'digest'], 'agent_versions_digest_idx'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_versions', (t) => t.dropIndex([], 'agent_versions_digest_idx'));
  await knex.schema.alterTable('stored_routers', (t) => t.dropColumn('definition'));
}
