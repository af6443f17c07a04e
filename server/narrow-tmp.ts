import { KnowledgeIndex } from './src/engine/knowledge.js';
let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const words =
  'order refund delivery parcel invoice account password payment return warranty card shipping address store credit voucher price discount tracking courier label receipt exchange cancel login email stock size colour gift basket checkout'.split(
    ' ',
  );
const passages = Array.from({ length: 100000 }, (_, i) => ({
  id: `n#${i}`,
  title: null,
  text: words.join(' ') + ' ' + Array.from({ length: 120 }, (_, k) => words[(k + Math.floor(random() * words.length)) % words.length]).join(' '),
}));
const index = await KnowledgeIndex.of(passages);
const qs = Array.from({ length: 200 }, () => [...words].sort(() => random() - 0.5).join(' '));
for (const q of qs.slice(0, 10)) index.search(q);
const ms = qs
  .map((q) => {
    const t = performance.now();
    index.search(q);
    return performance.now() - t;
  })
  .sort((a, b) => a - b);
console.log('p50', ms[100].toFixed(2), 'p99', ms[198].toFixed(2));
