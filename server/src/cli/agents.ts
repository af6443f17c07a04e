// `npm run agents -- …`: the command-line tool, one command module per resource: agent files and
// versions (definitions.ts), releases, channels, test files and routing (testing.ts), replays, the
// review inbox and evaluations, chat, conformance, the routing report (evaluation.ts), a tenant
// copied to another database (tenants.ts), knowledge sources (knowledge.ts), the tenant's privacy
// policy (privacy.ts) and the tenant's use of its quotas (usage.ts).
import { register as channels } from './channels.js';
import { register as chat } from './chat.js';
import { register as conformance } from './conformance.js';
import { register as definitions } from './definitions.js';
import { register as evaluation } from './evaluation.js';
import { register as knowledge } from './knowledge.js';
import { register as privacy } from './privacy.js';
import { program, run } from './program.js';
import { register as releases } from './releases.js';
import { register as replay } from './replay.js';
import { register as review } from './review.js';
import { register as tenants } from './tenants.js';
import { register as testing } from './testing.js';
import { register as usage } from './usage.js';

const cli = program('npm run agents --', 'Check agent definition files, and apply them to the database named by DATABASE_URL');
for (const add of [definitions, releases, channels, testing, replay, review, chat, conformance, evaluation, tenants, knowledge, privacy, usage]) add(cli);

await run(cli);
