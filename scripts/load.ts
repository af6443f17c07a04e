// `npm run load -- --url URL --tenant T --agent SLUG [--rate 500] [--duration 60s]`: a load test
// against any Switchboard deployment. Each connection starts a conversation, then continues it
// for a few turns before starting another, at the total rate asked for (autocannon's
// overallRate); prints progress every second and, at the end, throughput, latency percentiles,
// errors and answers by status.
import autocannon from 'autocannon';
import { Command, InvalidArgumentError } from 'commander';

const MESSAGES = ['where is my order', 'A-1042', 'and another one', 'B-2077', 'thanks'];

function duration(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('a duration such as 60s, 2m or 500ms');
  const n = Number(m[1]);
  return m[2] === 'm' ? n * 60 : m[2] === 'ms' ? n / 1000 : n;
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('a positive number');
  return n;
}

const program = new Command('load')
  .description('Drive converse calls against a Switchboard deployment and report throughput and latency')
  .requiredOption('--url <url>', 'the deployment, e.g. http://127.0.0.1:3000')
  .requiredOption('--tenant <tenant>', 'the tenant (tenant-id header)')
  .requiredOption('--agent <slug>', "the agent's slug")
  .option('--api-key <key>', 'an API key with the converse scope (AUTH_MODE=api_key)')
  .option('--rate <n>', 'requests per second in all', positive, 500)
  .option('--duration <d>', 'how long: 60s, 2m, 500ms', duration, 60)
  .option('--connections <n>', 'concurrent connections', positive, 64)
  .option('--turns <n>', 'turns per conversation before a new one starts', positive, MESSAGES.length)
  .parse();

interface Options {
  url: string;
  tenant: string;
  agent: string;
  apiKey?: string;
  rate: number;
  duration: number;
  connections: number;
  turns: number;
}

async function main(o: Options): Promise<void> {
  const target = new URL(`/api/v1/agents/${encodeURIComponent(o.agent)}/converse`, o.url).toString();
  const headers: Record<string, string> = { 'content-type': 'application/json', 'tenant-id': o.tenant };
  if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
  console.log(`load: ${target} as tenant ${o.tenant}, ${o.rate} req/s for ${o.duration}s on ${o.connections} connections`);

  const byStatus = new Map<number, number>();
  let sent = 0;
  let reported = 0;
  const instance = autocannon(
    {
      url: target,
      method: 'POST',
      headers,
      connections: o.connections,
      overallRate: o.rate,
      duration: o.duration,
      requests: [
        {
          setupRequest: (req: autocannon.Request, ctx: { id?: string; turn?: number }) => {
            const turn = ctx.turn ?? 0;
            if (turn >= o.turns) {
              ctx.id = undefined;
              ctx.turn = 0;
            }
            const body: Record<string, unknown> = { message: MESSAGES[(ctx.turn ?? 0) % MESSAGES.length] };
            if (ctx.id) body.conversation_id = ctx.id;
            ctx.turn = (ctx.turn ?? 0) + 1;
            return { ...req, body: JSON.stringify(body) };
          },
          onResponse: (status: number, body: string, ctx: { id?: string }) => {
            byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
            if (status === 200 && !ctx.id) ctx.id = (JSON.parse(body) as { conversation_id?: string }).conversation_id;
          },
        },
      ],
    } as autocannon.Options,
    (err) => {
      if (err) console.error(`load: ${err.message}`);
    },
  );
  instance.on('response', () => sent++);
  const started = Date.now();
  const progress = setInterval(() => {
    const s = Math.round((Date.now() - started) / 1000);
    console.log(`  ${s}s/${Math.round(o.duration)}s: ${sent - reported} answers in the last second, ${sent} in all`);
    reported = sent;
  }, 1000);
  const result = await new Promise<autocannon.Result>((resolve) => instance.on('done', resolve));
  clearInterval(progress);

  const statuses = [...byStatus.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`);
  console.log(`
requests: ${result.requests.total} in ${result.duration.toFixed(1)}s, ${result.requests.average.toFixed(0)} req/s (asked for ${o.rate})
latency ms: p50 ${result.latency.p50}, p90 ${result.latency.p90}, p99 ${result.latency.p99}, max ${result.latency.max}
errors: ${result.errors} (timeouts ${result.timeouts}), non-2xx answers: ${result.non2xx}
answers by status: ${statuses.join(', ') || 'none'}`);
  if (result.errors || result.non2xx) process.exitCode = 1;
}

main(program.opts<Options>()).catch((err: unknown) => {
  console.error(`load: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
});
