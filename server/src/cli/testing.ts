// `npm run agents -- test [--junit FILE] [--url URL --tenant T --key K] PATHS…`: runs test
// conversation files (`<agent>.test.yaml`) against the definition beside them, in memory (no
// server, no database, no network), or with --url against a server's current version; prints
// each failing step, writes a JUnit report for CI systems, and exits 1 on any failure.
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import junitReports, { type Builder } from 'junit-report-builder';
import type { TestResults } from '@switchboard/contract';
import { describeDefinitionError, readAgentFile, readTestFile } from '../agents-loader.js';
import { compileAgent } from '../engine/compile.js';
import { answer, runTests } from '../service/agents/test-runner.js';
import { OfflineConversation } from '../service/evaluations/offline-conversation.js';
import type { RoutingDecisionData } from '@switchboard/contract';
import { describeFailure, reach, remoteClient, type RemoteOptions } from './remote.js';
import { InvalidArgumentError, type Command } from 'commander';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

// The package is CommonJS whose module.exports is the builder; its declarations describe an ES
// default export, which TypeScript reads as one level deeper than Node gives it.
const builder = junitReports as unknown as Builder;

/** The test files among the paths: files as given, folders searched for *.test.yaml|yml|json. */
async function testFiles(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if ((await stat(p)).isDirectory()) {
      out.push(
        ...(await readdir(p))
          .filter((n) => /\.test\.(ya?ml|json)$/.test(n))
          .sort()
          .map((n) => join(p, n)),
      );
    } else out.push(p);
  }
  return out;
}

async function definitionBeside(file: string, agent: string): Promise<string> {
  for (const ext of ['.yaml', '.yml', '.json']) {
    const candidate = join(dirname(file), `${agent}${ext}`);
    if (
      await stat(candidate).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  throw new Error(`no definition ${agent}.yaml (or .yml, .json) beside the test file`);
}

type Routing = NonNullable<TestResults['results'][number]['steps'][number]['routing']>;

/** A routing decision's reason as words, in brackets: " (below threshold)". */
const reasonText = (reason: string | undefined) => (reason ? ` (${reason.replace(/_/g, ' ')})` : '');

/** One line: "routed by classifier (below threshold): hours 0.412, fallback 0.301, billing 0.120". */
function describeRouting(r: Routing): string {
  const top = r.candidates
    .slice(0, 3)
    .map((c) => `${c.capability} ${c.score.toFixed(3)}`)
    .join(', ');
  return `routed by ${r.strategy}${reasonText(r.reason)}${top ? `: ${top}` : ''}`;
}

function report(results: TestResults): number {
  for (const r of results.results) {
    console.log(`  ${r.passed ? '✓' : '✗'} ${r.name}`);
    if (r.passed) continue;
    r.steps.forEach((s, i) => {
      if (s.passed) return;
      console.log(`      step ${i + 1} (${JSON.stringify(s.user)}):`);
      for (const f of s.failures) console.log(`        ${f}`);
      // A misrouted step: what the router weighed, best first.
      if (s.routing && s.failures.some((f) => f.startsWith('capability:'))) console.log(`        ${describeRouting(s.routing)}`);
    });
  }
  return results.failed;
}

async function runTestFiles(paths: string[], opts: { junit?: string; remote?: RemoteOptions }): Promise<void> {
  const files = await testFiles(paths);
  if (files.length === 0) throw new Error(`no test files (*.test.yaml) in ${paths.join(', ')}`);
  const junit = builder.newBuilder();
  let passed = 0;
  let failed = 0;
  let broken = 0;
  for (const file of files) {
    const suite = junit.testSuite().name(basename(file));
    try {
      const spec = await readTestFile(file);
      let results: TestResults;
      if (opts.remote) {
        const remote = opts.remote;
        console.log(`${file}: ${spec.tests.length} test(s) against ${spec.agent} on ${remote.url}`);
        const sb = remoteClient(remote);
        const r = await reach(remote, () => sb.api.runTests({ params: { slug: spec.agent }, body: { tests: spec.tests } }));
        if (r.status !== 200) throw new Error(describeFailure(remote, r.status, r.body));
        results = r.body;
      } else {
        const definitionFile = await definitionBeside(file, spec.agent);
        const { definition } = await readAgentFile(definitionFile).catch((err: unknown) => {
          throw new Error(describeDefinitionError(definitionFile, err));
        });
        const started = performance.now();
        const agent = await compileAgent(NIL_UUID, 0, definition);
        console.log(`${file}: ${spec.tests.length} test(s) against ${definitionFile} (trained in ${Math.round(performance.now() - started)} ms)`);
        results = await runTests(agent, spec.tests, { version: null });
      }
      failed += report(results);
      passed += results.passed;
      for (const r of results.results) {
        const c = suite.testCase().className(spec.agent).name(r.name);
        if (!r.passed) {
          const lines = r.steps.flatMap((s, i) => (s.passed ? [] : s.failures.map((f) => `step ${i + 1} (${JSON.stringify(s.user)}): ${f}`)));
          c.failure(lines.join('\n'));
        }
      }
    } catch (err) {
      broken++;
      console.error(`${file}: ${(err as Error).message}`);
      suite
        .testCase()
        .className(basename(file))
        .name('(file)')
        .error((err as Error).message);
    }
  }
  if (opts.junit) {
    junit.writeTo(opts.junit);
    console.log(`JUnit report: ${opts.junit}`);
  }
  console.log(`${passed} passed, ${failed} failed${broken ? `, ${broken} file(s) could not be run` : ''} (${files.length} file(s))`);
  if (failed || broken) process.exitCode = 1;
}

/**
 * `agents route FILE "message"`: the agent trained in memory as the server would, one message
 * routed as the first of a conversation, and the decision printed as the console shows it (the
 * strategy and reason, score against threshold, similarity, every candidate's score). Nothing
 * goes out: an action the first phase calls fails as unanswered, and no model is asked.
 */
async function routeMessage(file: string, message: string, o: { context?: Record<string, unknown> }): Promise<void> {
  const { definition } = await readAgentFile(file).catch((err: unknown) => {
    throw new Error(`invalid ${describeDefinitionError(file, err)}`);
  });
  const agent = await compileAgent(NIL_UUID, 0, definition);
  const conversation = new OfflineConversation(agent, { conversationId: NIL_UUID, userId: null });
  const context = o.context ? { version: 'v1' as const, context: o.context } : null;
  const now = new Date().toISOString();
  // Answered as a test that scripts nothing: no action answers, no model replies.
  const r = await conversation.turn(message, { now, context }, (request) => answer({ name: 'route', steps: [{ user: message }] }, request, 0, now, []));
  const d = r.audit.find((a) => a.type === 'routing_decision')?.data as RoutingDecisionData | undefined;
  console.log(`${file}: ${JSON.stringify(message)}`);
  if (!d) {
    console.log(`not routed: the conversation stays where it is (${r.capability.name})`);
    return;
  }
  const sim =
    d.similarity !== undefined ? `, similarity ${d.similarity.toFixed(3)}${d.min_similarity !== undefined ? ` (min ${d.min_similarity.toFixed(3)})` : ''}` : '';
  // A threshold the router calibrated on held-out examples can be tiny (its scores are
  // probabilities over many capabilities): said, so that 0.001 does not read as "anything passes".
  const threshold =
    definition.routing?.threshold !== undefined
      ? `threshold ${d.threshold.toFixed(3)} (routing.threshold)`
      : `threshold ${d.threshold.toFixed(3)} (calibrated${d.calibration === 'held_out' ? ' on held-out examples' : ', the default'}: docs/routing.md)`;
  console.log(`${d.selected.capability} by ${d.strategy}${reasonText(d.reason)}, score ${d.selected.score.toFixed(3)}, ${threshold}${sim}`);
  if (d.background !== undefined) console.log(`background (everyday talk) ${d.background.toFixed(3)}`);
  const width = Math.max(...d.candidates.map((c) => c.capability.length), 10);
  for (const c of d.candidates) {
    const bar = '#'.repeat(Math.round(Math.min(Math.max(c.score, 0), 1) * 20));
    console.log(
      `  ${c.capability.padEnd(width)} ${c.score.toFixed(3)} ${bar.padEnd(20)}${c.eligible ? '' : ` not eligible (${c.reason ?? 'not entitled'})`}`.trimEnd(),
    );
  }
  console.log(`reply: ${JSON.stringify(r.reply)}`);
}

/** test and route. */
export function register(cli: Command): void {
  cli
    .command('test')
    .description(
      'run test conversations (<agent>.test.yaml) against the definition beside them, in memory with no server or network; or with --url against a server',
    )
    .argument('<paths...>', 'test files, or folders to search for *.test.yaml')
    .option('--junit <file>', 'also write a JUnit XML report there')
    .option('--url <url>', "run them on a server, against the agent's current version")
    .option('--tenant <tenant>', 'tenant id for --url (header auth mode)')
    .option('--key <key>', 'API key for --url (api_key auth mode)')
    .action(async (paths: string[], opts: { junit?: string; url?: string; tenant?: string; key?: string }) => {
      await runTestFiles(paths, { junit: opts.junit, remote: opts.url ? { url: opts.url, tenant: opts.tenant, key: opts.key } : undefined });
    });

  cli
    .command('route')
    .description(
      'train an agent in memory and show how it routes one message: the decision, the reason and every candidate with its score, as the console shows it',
    )
    .argument('<file>', 'agent file (YAML or JSON)')
    .argument('<message>', 'the message, as the first of a conversation')
    .option('--context <json>', "the context envelope's `context` (preferences, entitlements…), as JSON", (v) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(v);
      } catch {
        throw new InvalidArgumentError('must be a JSON object');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object');
      return parsed as Record<string, unknown>;
    })
    .action(async (file: string, message: string, opts: { context?: Record<string, unknown> }) => {
      await routeMessage(file, message, opts);
    });
}
