// `npm run bench:channels`: what a messaging channel costs beside the API, on the production
// build, on SQLite and (with BENCH_DATABASE_URL or TEST_DATABASE_URL) PostgreSQL.
//   - the webhook's answer: signature check, the message stored once, the acknowledgement
//     (what the provider waits for; Slack allows 3 s);
//   - a message's whole way: from the webhook call to the reply reaching a scripted WhatsApp
//     Cloud API on loopback (queue, turn, delivery);
//   - beside them, in the same run, the same turns as converse calls over the API.
// Judge the ratios, not the milliseconds: this machine's speed moves from day to day.
// BENCH_USERS users each send BENCH_MESSAGES messages (default 40 × 5), 16 requests at a time.
import { randomBytes } from 'node:crypto';
import { CREDS, startFakeProviders, whatsappHeaders, whatsappMessage } from '../test/helpers/fake-providers.js';
import { cpuMicros, onEachDatabase, pct, startServer } from './server.js';

const USERS = Number(process.env.BENCH_USERS ?? 40);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5);
const CONCURRENCY = 16;
const TARGET = { ackP99Ms: 250 };

const agent = {
  name: 'Bench',
  capabilities: [
    { name: 'hello', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'p', say: 'Hi! How can I help?' }] },
    { name: 'orders', examples: ['where is my order', 'track my package'], phases: [{ id: 'q', say: 'Which order is it?' }] },
  ],
};
const WORDS = ['hello', 'where is my order', 'track my package', 'good morning', 'hi there'];

/** Runs `jobs` with at most CONCURRENCY at once, each user's jobs in order. */
async function inParallel(jobs: (() => Promise<void>)[][]): Promise<void> {
  const queue = [...jobs];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let chain = queue.shift(); chain; chain = queue.shift()) for (const job of chain) await job();
    }),
  );
}

const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms`;

await onEachDatabase('bench_channels', { value: process.env.BENCH_ONLY, variable: 'BENCH_ONLY' }, async (label, url) => {
  const providers = await startFakeProviders();
  const server = await startServer(url, {
    SECRETS_KEY: randomBytes(32).toString('hex'),
    CHANNEL_API_URLS: JSON.stringify({ whatsapp: providers.apiUrls.whatsapp }),
    CHANNEL_INTERVAL_MS: '200',
    CHANNEL_INBOUND_PER_MINUTE: '100000',
  });
  try {
    const h = { 'tenant-id': 'bench', 'content-type': 'application/json' };
    const put = await fetch(`${server.base}/api/v1/agents/bench`, { method: 'PUT', headers: h, body: JSON.stringify(agent) });
    if (!put.ok) throw new Error(`PUT agent answered ${put.status}`);
    const channel = await fetch(`${server.base}/api/v1/agents/bench/channels/whatsapp`, {
      method: 'PUT',
      headers: h,
      body: JSON.stringify({ credentials: CREDS.whatsapp }),
    });
    if (!channel.ok) throw new Error(`PUT channel answered ${channel.status}`);
    const hook = new URL(((await channel.json()) as { webhook_url: string }).webhook_url).pathname;

    // The API: the same turns, each user's messages in one conversation.
    const api: number[] = [];
    const cpuApi = cpuMicros(server.proc.pid!);
    const apiStarted = performance.now();
    await inParallel(
      Array.from({ length: USERS }, () => {
        let conversation: string | undefined;
        return Array.from({ length: MESSAGES }, (_, j) => async () => {
          const t = performance.now();
          const r = await fetch(`${server.base}/api/v1/agents/bench/converse`, {
            method: 'POST',
            headers: h,
            body: JSON.stringify({ message: WORDS[j % WORDS.length], ...(conversation ? { conversation_id: conversation } : {}) }),
          });
          conversation = ((await r.json()) as { conversation_id: string }).conversation_id;
          api.push(performance.now() - t);
        });
      }),
    );
    const apiSeconds = (performance.now() - apiStarted) / 1000;
    const apiCpu = (cpuMicros(server.proc.pid!) ?? 0) - (cpuApi ?? 0);

    // The channel: webhook calls, then every reply delivered.
    const ack: number[] = [];
    const sentAt = new Map<string, number[]>();
    const cpuChannel = cpuMicros(server.proc.pid!);
    const started = performance.now();
    await inParallel(
      Array.from({ length: USERS }, (_, u) => {
        const from = String(15550100000 + u);
        return Array.from({ length: MESSAGES }, (_, j) => async () => {
          const body = JSON.stringify(whatsappMessage(`wamid.bench${u}x${j}`, from, { type: 'text', text: { body: WORDS[j % WORDS.length] } }));
          const t = performance.now();
          const r = await fetch(`${server.base}${hook}`, { method: 'POST', headers: { 'content-type': 'application/json', ...whatsappHeaders(body) }, body });
          await r.arrayBuffer();
          if (r.status !== 200) throw new Error(`the webhook answered ${r.status}`);
          ack.push(performance.now() - t);
          sentAt.set(from, [...(sentAt.get(from) ?? []), t]);
        });
      }),
    );
    const total = USERS * MESSAGES;
    const deadline = Date.now() + 120_000;
    let shown = 0;
    while (providers.calls.length < total && Date.now() < deadline) {
      if (providers.calls.length - shown >= total / 10) {
        shown = providers.calls.length;
        process.stderr.write(`  ${label}: ${shown}/${total} replies delivered\n`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const channelCpu = (cpuMicros(server.proc.pid!) ?? 0) - (cpuChannel ?? 0);
    if (providers.calls.length !== total) throw new Error(`${providers.calls.length} of ${total} replies arrived`);
    if (providers.violations.length) throw new Error(`calls the provider refused: ${providers.violations.join('; ')}`);
    // The n-th reply to a user answers the n-th message (replies are ordered per user).
    const e2e: number[] = [];
    const seen = new Map<string, number>();
    for (const c of providers.calls) {
      const to = String(c.body.to);
      const n = seen.get(to) ?? 0;
      seen.set(to, n + 1);
      e2e.push(c.at - sentAt.get(to)![n]);
    }
    console.log(`\n${label}: ${USERS} users × ${MESSAGES} messages, ${CONCURRENCY} at a time`);
    console.log(`  API converse:          ${fmt(api)}; ${(total / apiSeconds).toFixed(0)} turns/s; server CPU ${(apiCpu / total).toFixed(0)} µs a turn`);
    console.log(`  webhook answer:        ${fmt(ack)}`);
    console.log(`  webhook to delivery:   ${fmt(e2e)}; ${(total / seconds).toFixed(0)} messages/s; server CPU ${(channelCpu / total).toFixed(0)} µs a message`);
    console.log(`  ratio, CPU a message over CPU a turn: ${(channelCpu / apiCpu).toFixed(2)}`);
    const met = pct(ack, 99) <= TARGET.ackP99Ms;
    console.log(`  webhook answer p99 ≤ ${TARGET.ackP99Ms} ms: ${met ? 'met' : 'NOT met'}`);
    return met;
  } finally {
    await server.stop();
    await providers.close();
  }
});
