// `npm run audit -- seal`: seals every hash chain (conversations' audit logs, agents' release
// records) whose newest entry is not keyed under AUDIT_CHAIN_KEY, in the database named by
// DATABASE_URL, once each is verified otherwise intact (service/chain-seals.ts). Run it once when
// the key is first set, and again after rotating it (the old key in AUDIT_CHAIN_PREVIOUS_KEYS).
import { loadConfig } from '../config.js';
import { systemClock } from '../lib/clock.js';
import { sealChains, type SealProgress } from '../service/conversations/chain-seals.js';
import { ChainSealStore } from '../store/conversations/chain-seals.js';
import { ConversationStore } from '../store/conversations/conversation-store.js';
import { migrate, openDatabase } from '../store/db.js';
import { ReleaseStore } from '../store/release-store.js';
import { program, run } from './program.js';

const cli = program('npm run audit --', 'Seal the hash chains in the database named by DATABASE_URL under AUDIT_CHAIN_KEY');

const what = (kind: SealProgress['kind']) => (kind === 'release' ? 'release records' : 'conversations');

cli
  .command('seal')
  .description('seal every chain whose newest entry predates AUDIT_CHAIN_KEY (run when the key is set or rotated)')
  .action(async () => {
    const config = loadConfig(process.env, {}, 'tool');
    if (!config.auditChainKey) throw new Error('AUDIT_CHAIN_KEY is not set: there is nothing to seal under');
    const db = openDatabase(config.databaseUrl);
    try {
      await migrate(db);
      const keys = { current: config.auditChainKey, previous: config.auditChainPreviousKeys };
      const result = await sealChains(
        {
          conversations: new ConversationStore(db, { chainKey: keys.current, previousKeys: keys.previous }),
          releases: new ReleaseStore(db, keys.current, keys.previous),
          seals: new ChainSealStore(db),
          keys,
          clock: systemClock,
        },
        (p) => process.stderr.write(`${what(p.kind)}: ${p.checked}/${p.total} checked, ${p.sealed} sealed\n`),
      );
      for (const p of result) {
        console.log(`${what(p.kind)}: ${p.checked} checked, ${p.sealed} sealed, ${p.keyed} already keyed or sealed, ${p.broken.length} broken (not sealed)`);
        for (const b of p.broken) console.log(`  BROKEN ${b.tenantId} ${b.id}: entry ${b.sequence}, ${b.reason}`);
      }
      if (result.some((p) => p.broken.length)) process.exitCode = 1;
    } finally {
      await db.close();
    }
  });

await run(cli);
