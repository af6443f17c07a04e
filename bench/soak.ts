// `npm run soak`: conversations talking at once for a bounded time, on SQLite (one server
// process) and, when SOAK_DATABASE_URL (or TEST_DATABASE_URL) names a PostgreSQL server, on
// PostgreSQL with two server processes taking turns. Then every conversation's history is read
// back and checked against what its client sent and received: nothing lost, nothing duplicated,
// nothing out of order.
// The noisy-neighbour run: well-behaved tenants talk at a steady pace (with think time), once
// alone and once beside a hostile tenant (slow actions, heavy templates, hundreds of open event
// streams, test conversations and replays of heavy drafts, generative phases with tools and 2 MB
// of knowledge against a model server that takes a second, as fast as it can); their p99 beside
// it must stay within 1.5x of their p99 alone, and their replies must be exactly as alone. The
// model server here is a scripted loopback stand-in that answers every call alike after a delay:
// it measures what waiting on a model costs the server, not what a model says.
// Prints the figures; exits 1 on any mismatch, error or a p99 over that bound.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as httpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { echoAgent as agent, freshPostgres, startServer } from './server.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 15);
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS ?? 300);
const PG = process.env.SOAK_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
/** The noisy-neighbour comparison: quiet tenants, their conversations each, think time between messages. */
const QUIET_TENANTS = 5;
const QUIET_CONVERSATIONS = 20;
const THINK_MS = 200;
const NOISY_BOUND = 1.5;
const headers = (tenant: string) => ({ 'tenant-id': tenant, 'content-type': 'application/json' });

/** The noisy tenant's agents: every turn calls a slow action, or burns its whole template budget. */
const slowAgent = (backend: string) => ({
  name: 'Noisy slow',
  capabilities: [
    {
      name: 'slow',
      examples: ['start talking'],
      phases: [
        { id: 'listen', say: 'Go on.', collect: { slot: 'said' } },
        { id: 'wait', call: 'slow', on_error: 'again' },
        { id: 'again', say: 'Done.', collect: { slot: 'said' }, next: 'wait' },
      ],
    },
  ],
  actions: { slow: { type: 'http', method: 'GET', url: `${backend}/slow?x={{ slots.said }}`, timeout_ms: 10_000 } },
});
const heavyAgent = {
  name: 'Noisy heavy',
  capabilities: [
    {
      name: 'heavy',
      examples: ['start talking'],
      phases: [
        { id: 'burn', say: '{% for i in (1..50000000) %}{% endfor %}' },
        { id: 'burn2', say: '{% for i in (1..50000000) %}{{ i }}{% endfor %}' },
        { id: 'again', collect: { slot: 'said' }, next: 'burn' },
      ],
    },
  ],
};

/** 1.9 million characters of help pages of a varied vocabulary: an index near the knowledge cap. */
function bigKnowledge(): { id: string; text: string }[] {
  let x = 42;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  const word = () => Array.from({ length: 3 + Math.floor(next() * 6) }, () => String.fromCharCode(97 + Math.floor(next() ** 2 * 26))).join('');
  return Array.from({ length: 19 }, (_, d) => {
    let text = '';
    while (text.length < 99_000) text += `# Topic ${text.length}\n\n${Array.from({ length: 120 }, word).join(' ')}.\n\n`;
    return { id: `page-${d}`, text: text.slice(0, 99_000) };
  });
}

/** Nested definitions fanning out just under the schema-cost cap: the costliest tool schema a PUT accepts. */
function wideSchema(): Record<string, unknown> {
  const $defs: Record<string, unknown> = { l6: { type: 'string', pattern: '^[a-z]{1,8}-[0-9]{1,6}$' } };
  for (let i = 5; i >= 0; i--) $defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i + 1}` }, { $ref: `#/$defs/l${i + 1}` }, { type: 'null' }] };
  return { type: 'object', $defs, properties: { q: { $ref: '#/$defs/l0' } } };
}

const modelAgent = (backend: string) => ({
  name: 'Noisy model',
  knowledge: bigKnowledge(),
  capabilities: [
    {
      name: 'ask',
      examples: ['start talking'],
      phases: [{ id: 'g', generate: { instructions: 'Answer from the help pages.', knowledge: true, tools: ['lookup'], max_steps: 3 } }],
    },
  ],
  actions: { lookup: { type: 'http', method: 'GET', url: `${backend}/slow?q={{ args.q }}`, timeout_ms: 10_000, parameters: wideSchema() } },
});

/** A scripted OpenAI-compatible server on loopback: every call answers a tool call or text after `delayMs`. */
function scriptedModelServer(delayMs: number) {
  let calls = 0;
  return httpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const wantsTool = ++calls % 2 === 1 && body.includes('"lookup"');
      const message = wantsTool
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"abc-123"}' } }] }
        : { role: 'assistant', content: 'Here is what the help pages say.' };
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'soak',
            object: 'chat.completion',
            created: 1,
            model: 'soak-model',
            choices: [{ index: 0, message, finish_reason: wantsTool ? 'tool_calls' : 'stop' }],
            usage: { prompt_tokens: 500, completion_tokens: 20, total_tokens: 520 },
          }),
        );
      }, delayMs);
    });
  });
}

async function post(url: string, body: unknown, tenant: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { method: 'POST', headers: headers(tenant), body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function putAgent(base: string, tenant: string, slug: string, def: unknown): Promise<void> {
  const put = await fetch(`${base}/api/v1/agents/${slug}`, { method: 'PUT', headers: headers(tenant), body: JSON.stringify(def) });
  if (!put.ok) throw new Error(`PUT agent ${tenant}/${slug}: ${put.status} ${await put.text()}`);
}

const pct = (a: number[], q: number) => (a.length ? [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))] : 0);

interface SoakResult {
  ok: boolean;
  latencies: number[];
}

/** `conversations` conversations over `tenants`, each message after `thinkMs`; histories checked after. */
async function soak(label: string, bases: string[], opts: { tenants?: string[]; conversations?: number; thinkMs?: number } = {}): Promise<SoakResult> {
  const tenants = opts.tenants ?? ['soak'];
  const count = opts.conversations ?? CONVERSATIONS;
  const slug = `soak-${randomBytes(3).toString('hex')}`;
  for (const t of tenants) await putAgent(bases[0], t, slug, agent);
  const deadline = Date.now() + SECONDS * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const sessions = await Promise.all(
    Array.from({ length: count }, async (_, c) => {
      const tenant = tenants[c % tenants.length];
      const sent: string[] = [];
      const heard: string[] = [];
      let id: string | null = null;
      let k = 0;
      while (Date.now() < deadline) {
        const message = id ? `c${c}-m${k++}` : 'start talking';
        const started = performance.now();
        try {
          // Turns alternate between the server processes.
          const r = await post(`${bases[k % bases.length]}/api/v1/agents/${slug}/converse`, id ? { message, conversation_id: id } : { message }, tenant);
          latencies.push(performance.now() - started);
          if (opts.thinkMs) await new Promise((w) => setTimeout(w, opts.thinkMs));
          if (r.status !== 200) {
            errors++;
            continue;
          }
          id = r.body.conversation_id;
          sent.push(message);
          heard.push(r.body.response.message);
        } catch {
          errors++;
        }
      }
      return { id, sent, heard, tenant };
    }),
  );
  const elapsed = SECONDS;
  let mismatched = 0;
  let turns = 0;
  for (const s of sessions) {
    if (!s.id) continue;
    const r = await fetch(`${bases[bases.length - 1]}/api/v1/agents/${slug}/conversations/${s.id}/history`, { headers: headers(s.tenant) });
    const history = ((await r.json()) as { turns: { role: string; message: string }[] }).turns;
    turns += history.length;
    const expected = s.sent.flatMap((m, i) => [
      { role: 'user', message: m },
      { role: 'agent', message: s.heard[i] },
    ]);
    const ok =
      history.length === expected.length &&
      history.every((t, i) => t.role === expected[i].role && t.message === expected[i].message) &&
      s.heard.slice(1).every((h, i) => h === `Heard: ${s.sent[i + 1]}`);
    if (!ok) mismatched++;
  }
  const total = latencies.length;
  console.log(
    `${label}: ${count} conversations of ${tenants.length} tenant${tenants.length > 1 ? 's' : ''} for ${elapsed} s over ${bases.length} server process${bases.length > 1 ? 'es' : ''}: ` +
      `${total} messages (${Math.round(total / elapsed)}/s), p50 ${pct(latencies, 0.5).toFixed(1)} ms, p99 ${pct(latencies, 0.99).toFixed(1)} ms, ` +
      `${errors} errors; ${turns} turns read back, ${mismatched} conversation${mismatched === 1 ? '' : 's'} not as sent and received`,
  );
  return { ok: mismatched === 0 && errors === 0, latencies };
}

/**
 * The noisy tenant, until `stop` resolves: conversations waiting on slow actions, conversations
 * burning their template budget as fast as they can, and hundreds of open event streams.
 */
async function noisyTenant(
  base: string,
  backend: string,
  stop: Promise<void>,
): Promise<{ requests: number; refused: number; streams: number; byStatus: string }> {
  const tenant = 'noisy';
  await putAgent(base, tenant, 'slow', slowAgent(backend));
  await putAgent(base, tenant, 'heavy', heavyAgent);
  await putAgent(base, tenant, 'model', modelAgent(backend));
  const heavyDraft = await fetch(`${base}/api/v1/agents/heavy?activate=false`, {
    method: 'PUT',
    headers: headers(tenant),
    body: JSON.stringify({ ...heavyAgent, name: 'Noisy heavy draft' }),
  }).then(async (r) => ((await r.json()) as { stored_version: number }).stored_version);
  const longMessage = bigKnowledge()[0].text.slice(10_000, 13_990);
  let requests = 0;
  let refused = 0;
  let stopped = false;
  /** Answers by surface and status: what the hostile load really did, beyond the rate limit's 429s. */
  const served = new Map<string, Map<number, number>>();
  const tally = (surface: string, status: number) => {
    const m = served.get(surface) ?? new Map<number, number>();
    m.set(status, (m.get(status) ?? 0) + 1);
    served.set(surface, m);
  };
  void stop.then(() => (stopped = true));
  const talk = async (slug: string) => {
    let id: string | null = null;
    while (!stopped) {
      try {
        const r = await post(`${base}/api/v1/agents/${slug}/converse`, id ? { message: 'more', conversation_id: id } : { message: 'start talking' }, tenant);
        requests++;
        tally(slug, r.status);
        if (r.status === 200) id = r.body.conversation_id;
        else {
          refused++;
          if (r.status === 429) await new Promise((w) => setTimeout(w, 50));
        }
      } catch {
        refused++;
      }
    }
  };
  // Event streams on the noisy tenant's own conversations, up to the per-tenant cap.
  const controllers: AbortController[] = [];
  let streams = 0;
  for (let c = 0; c < 50; c++) {
    const r = await post(`${base}/api/v1/agents/heavy/converse`, { message: 'start talking' }, tenant);
    if (r.status !== 200) continue;
    for (let k = 0; k < 10; k++) {
      const ctl = new AbortController();
      controllers.push(ctl);
      const res = await fetch(`${base}/api/v1/agents/heavy/conversations/${r.body.conversation_id}/events`, {
        headers: headers(tenant),
        signal: ctl.signal,
      }).catch(() => null);
      if (res?.status === 200) {
        streams++;
        void res.body?.pipeTo(new WritableStream()).catch(() => undefined);
      } else void res?.body?.cancel();
    }
  }
  // Test conversations (1,000 heavy steps a request) and replays of the heavy conversations on a draft, back to back.
  const tests = Array.from({ length: 10 }, (_, i) => ({ name: `t${i}`, steps: Array.from({ length: 100 }, () => ({ user: 'start talking' })) }));
  const hammer = async (path: string, body: unknown) => {
    while (!stopped) {
      const r = await post(`${base}/api/v1/agents/heavy/${path}`, body, tenant).catch(() => ({ status: 0, body: null }));
      requests++;
      tally(path, r.status);
      if (r.status !== 200 && r.status !== 202) {
        refused++;
        await new Promise((w) => setTimeout(w, 100));
      }
    }
  };
  const ask = async () => {
    let id: string | null = null;
    while (!stopped) {
      const body = id ? { message: longMessage, conversation_id: id } : { message: 'start talking' };
      const r: { status: number; body: any } = await post(`${base}/api/v1/agents/model/converse`, body, tenant).catch(() => ({ status: 0, body: null }));
      requests++;
      tally('model calls', r.status);
      if (r.status === 200) id = r.body.conversation_id;
      else {
        refused++;
        await new Promise((w) => setTimeout(w, 50));
      }
    }
  };
  await Promise.all([
    ...Array.from({ length: 40 }, () => talk('slow')),
    ...Array.from({ length: 10 }, () => talk('heavy')),
    ...Array.from({ length: 20 }, ask),
    ...Array.from({ length: 2 }, () => hammer('tests', { tests })),
    hammer('replays', { version: heavyDraft, limit: 50 }),
  ]);
  for (const c of controllers) c.abort();
  const byStatus = [...served].map(([surface, m]) => `${surface} ${[...m].map(([st, n]) => `${n}×${st}`).join(' ')}`).join('; ');
  return { requests, refused, streams, byStatus };
}

/** Quiet tenants alone, then beside the noisy tenant, on one SQLite server; their p99 must stay within the bound. */
async function noisyNeighbour(dir: string, procs: ChildProcess[]): Promise<boolean> {
  const slow = httpServer((_q, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 2000));
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const backend = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
  const model = scriptedModelServer(1000);
  await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
  try {
    // A production-like server: per-tenant rate limits on, the slow backend granted to the noisy tenant only.
    const server = await startServer(`sqlite://${join(dir, 'noisy.db')}`, {
      DB_POOL_MAX: '20',
      RATE_LIMIT_RPS: '100',
      RATE_LIMIT_BURST: '200',
      ACTION_ALLOWED_HOSTS: `noisy=${backend.replace('http://', '')}`,
      LLM_URL: `http://127.0.0.1:${(model.address() as { port: number }).port}/v1`,
      LLM_MODEL: 'soak-model',
      LLM_MAX_RETRIES: '0',
    });
    procs.push(server.proc);
    const quietTenants = Array.from({ length: QUIET_TENANTS }, (_, i) => `quiet-${i}`);
    const quiet = { tenants: quietTenants, conversations: QUIET_TENANTS * QUIET_CONVERSATIONS, thinkMs: THINK_MS };
    const alone = await soak('Quiet tenants alone', [server.base], quiet);
    let release!: () => void;
    const stop = new Promise<void>((r) => (release = r));
    const noise = noisyTenant(server.base, backend, stop);
    await new Promise((r) => setTimeout(r, 1500)); // let the noise build up first
    const beside = await soak('Quiet tenants beside a noisy one', [server.base], quiet);
    release();
    const n = await noise;
    const p99Alone = pct(alone.latencies, 0.99);
    const p99Beside = pct(beside.latencies, 0.99);
    const ratio = p99Beside / Math.max(p99Alone, 0.001);
    console.log(
      `noisy tenant: ${n.requests} requests (${n.refused} refused), ${n.streams} open event streams, slow actions, heavy templates, ` +
        `test runs, replays, tools and knowledge with a 1 s model (${n.byStatus}); ` +
        `quiet tenants' p99 ${p99Alone.toFixed(1)} ms alone, ${p99Beside.toFixed(1)} ms beside it: ${ratio.toFixed(2)}x (bound ${NOISY_BOUND}x)`,
    );
    return alone.ok && beside.ok && ratio <= NOISY_BOUND;
  } finally {
    for (const srv of [slow, model]) {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    }
  }
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await exited;
}

async function main() {
  let ok = true;
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-soak-'));
  const procs: ChildProcess[] = [];
  try {
    console.log(`soak: ${CONVERSATIONS} conversations, ${SECONDS} s each run`);
    const sqlite = await startServer(`sqlite://${join(dir, 'soak.db')}`, { DB_POOL_MAX: '20' });
    procs.push(sqlite.proc);
    ok = (await soak('SQLite', [sqlite.base])).ok && ok;
    await stopProcess(sqlite.proc);
    ok = (await noisyNeighbour(dir, procs)) && ok;
    if (PG) {
      const pg = await freshPostgres(PG, 'soak');
      try {
        const first = await startServer(pg.url, { DB_POOL_MAX: '20' });
        const second = await startServer(pg.url, { DB_POOL_MAX: '20' });
        procs.push(first.proc, second.proc);
        ok = (await soak('PostgreSQL', [first.base, second.base])).ok && ok;
      } finally {
        for (const p of procs) await stopProcess(p);
        await pg.drop();
      }
    } else {
      console.log('PostgreSQL: skipped (set SOAK_DATABASE_URL or TEST_DATABASE_URL)');
    }
  } finally {
    for (const p of procs) await stopProcess(p);
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(ok ? 'soak: every conversation is exactly as its client sent and received it' : 'soak: FAILED');
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
