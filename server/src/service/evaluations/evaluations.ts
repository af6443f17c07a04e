// Evaluations of a draft (docs/improving.md): in the background, the version is measured beside
// the agent's current one on the cross-validated routing of its own examples, the messages
// reviewers labelled in the review inbox, the agent's stored test conversations, and a replay of
// its newest recorded conversations. Trainings run in the tenant's background turn of the
// training pool, the replay under the replay limits, the tests under the tenant's render budget;
// one evaluation per tenant runs at a time. The result is kept for thirty days.
import { randomUUID } from 'node:crypto';
import type { AgentDefinition, Evaluation, ReplayResult, TestCase, TestResults } from '@switchboard/contract';
import type { CompiledAgent, TrainRouter } from '../../engine/compile.js';
import { confusionMatrix, crossValidate, summarise, type Prediction } from '../../engine/report.js';
import { route } from '../../engine/routing.js';
import { GatesFailedError, RateLimitedError } from '../../errors.js';
import { canonicalJson, sha256 } from '../../lib/canonical.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { EvaluationDigests, EvaluationRow, EvaluationStore } from '../../store/review/evaluation-store.js';
import type { ReviewStore } from '../../store/review/review-store.js';
import type { TestSuiteStore } from '../../store/review/test-suite-store.js';
import type { AgentRow } from '../../store/agents/agent-store.js';
import type { AgentService } from '../agents/agent-service.js';
import { JobRunner, type JobContext } from '../jobs/job-runner.js';
import type { ReplayService } from './replays.js';

/** Reviewed messages an evaluation routes, the newest first. */
const MAX_LABELLED = 500;

type Side = NonNullable<Evaluation['result']>['draft'];
type Result = NonNullable<Evaluation['result']>;

export interface EvaluationDeps {
  agents: AgentService;
  store: EvaluationStore;
  /** The review inbox: its labelled messages are one of the evaluation's inputs. */
  inbox: ReviewStore;
  suites: TestSuiteStore;
  replays: ReplayService;
  clock: Clock;
  /** Trains the folds' routers (not stored) for a tenant. */
  trainer: (tenantId: string) => TrainRouter;
  log: { warn(o: object, m: string): void };
}

/** Where a version routes a message, as the server would with no context. */
function routeWith(agent: CompiledAgent, message: string): string {
  return route(agent, agent.router.score(message), null).capability.name;
}

function quality(def: AgentDefinition, predictions: Prediction[]): Side['cross_validation'] {
  const r = summarise('cross-validation', def, predictions, []);
  return { total: r.total, accuracy: r.accuracy, capabilities: r.capabilities, confused: r.confused, matrix: confusionMatrix(predictions) };
}

function testsOf(r: TestResults | null): Side['tests'] {
  if (!r) return { total: 0, passed: 0, failed: [] };
  return {
    total: r.passed + r.failed,
    passed: r.passed,
    failed: r.results.flatMap((t) => {
      const i = t.steps.findIndex((s) => !s.passed);
      return t.passed || i < 0 ? [] : [{ name: t.name, step: i + 1, why: t.steps[i].failures.join('; ') }];
    }),
  };
}

/** The replay's conversations by what their first changed turn changed. */
function replaySummary(id: string, results: ReplayResult[]): NonNullable<Result['replay']> {
  const changed = results.filter((r) => r.verdict === 'changed');
  const has = (r: ReplayResult, fields: string[]) => {
    const d = r.first_difference!;
    return fields.includes(d.field) || (d.changes ?? []).some((c) => fields.includes(c.field));
  };
  return {
    replay_id: id,
    conversations: results.length,
    identical: results.filter((r) => r.verdict === 'identical').length,
    changed: changed.length,
    errors: results.filter((r) => r.verdict === 'error').length,
    capability: changed.filter((r) => has(r, ['capability'])).length,
    outcome: changed.filter((r) => has(r, ['status', 'outcome'])).length,
    reply: changed.filter((r) => has(r, ['reply'])).length,
    action: changed.filter((r) => has(r, ['unrecorded_action', 'action_request'])).length,
  };
}

export class EvaluationService {
  /** One of a tenant at once, each kept thirty days. */
  private readonly jobs: JobRunner<EvaluationRow>;

  constructor(private readonly deps: EvaluationDeps) {
    this.jobs = new JobRunner(
      {
        name: 'evaluation',
        notFound: 'evaluation_not_found',
        keepMs: 30 * 24 * 3600 * 1000,
        maxRunning: 1,
        busy: () => new RateLimitedError(30, 'An evaluation of this tenant is running already; retry when it has finished'),
      },
      deps.store,
      deps.clock,
      deps.log,
    );
  }

  async start(
    tenantId: string,
    slug: string,
    version: number,
    body: { replay: number; folds: number },
    keyId: string | null,
  ): Promise<{ id: string; status: 'running' }> {
    const agent = await this.deps.agents.active(tenantId, slug);
    const row = await this.begin(tenantId, slug, agent, version, body, keyId);
    return { id: row.id, status: 'running' };
  }

  /**
   * The evaluation the release gates judge (service/releases.ts): one of the same two versions
   * and inputs (tests, reviewed messages, replay size, folds) created within `maxAgeMs`, done or
   * running, else a new one; awaited. An evaluation that fails is a 409 saying why.
   */
  async forGates(
    tenantId: string,
    slug: string,
    agent: AgentRow,
    candidate: { version: number; digest: string; baselineDigest: string },
    body: { replay: number; folds: number },
    o: { maxAgeMs: number; keyId: string | null },
  ): Promise<{ row: EvaluationRow; reused: boolean }> {
    const { store, clock } = this.deps;
    const { version } = candidate;
    const digests = await this.digestsOf(tenantId, slug, agent, version, body, { digest: candidate.digest, baseline: candidate.baselineDigest });
    const since = iso(new Date(clock.now().getTime() - o.maxAgeMs));
    const found = await store.sameEvaluation(tenantId, agent.id, digests, since);
    const usable = found && !this.jobs.stopped(found);
    const row = usable ? found : await this.begin(tenantId, slug, agent, version, body, o.keyId, digests);
    await this.jobs.finished(row.id);
    // A running one of another replica: its row is read until it has finished.
    let done = await this.jobs.get(tenantId, agent.id, row.id);
    for (let waited = 0; done.status === 'running' && waited < 600; waited++) {
      await new Promise((r) => setTimeout(r, 1000));
      done = await this.jobs.get(tenantId, agent.id, row.id);
    }
    if (done.status !== 'done') {
      throw new GatesFailedError(
        `The gates could not be judged: evaluation ${done.id} ${done.error ? `failed: ${done.error}` : 'did not finish'}`,
        [],
        done.id,
      );
    }
    return { row: done, reused: usable === true };
  }

  /** What an evaluation of `version` beside the current one measures, as digests: the two definitions and the inputs. */
  private async digestsOf(
    tenantId: string,
    slug: string,
    agent: AgentRow,
    version: number,
    body: { replay: number; folds: number },
    /** The two versions' digests when the caller has read them. */
    known?: { digest: string; baseline: string },
  ): Promise<EvaluationDigests> {
    const { agents, suites, inbox } = this.deps;
    const [versions, suite, labelled] = await Promise.all([
      known ??
        Promise.all([agents.version(tenantId, slug, version), agents.version(tenantId, slug, agent.currentVersion)]).then(([c, b]) => ({
          digest: c.digest,
          baseline: b.digest,
        })),
      suites.testSuite(tenantId, agent.id),
      inbox.labelled(tenantId, agent.id, MAX_LABELLED),
    ]);
    const inputs = sha256(canonicalJson({ tests: suite?.tests ?? [], labelled, replay: body.replay, folds: body.folds }));
    return { ...versions, inputs };
  }

  private async begin(
    tenantId: string,
    slug: string,
    agent: AgentRow,
    version: number,
    body: { replay: number; folds: number },
    keyId: string | null,
    known?: EvaluationDigests,
  ): Promise<EvaluationRow> {
    await this.jobs.precheck(tenantId);
    // 404 for a version that does not exist.
    const digests = known ?? (await this.digestsOf(tenantId, slug, agent, version, body));
    const id = randomUUID();
    let row: EvaluationRow = this.jobs.draft({
      id,
      tenantId,
      agentId: agent.id,
      version,
      total: 2 * body.folds + 4 + (body.replay > 0 ? 1 : 0),
      baseline: agent.currentVersion,
      stage: 'queued',
      result: null,
      replayId: null,
      createdBy: keyId,
      digests,
    });
    // Stored only if none of the tenant runs, checked under the tenant's lock: of concurrent
    // starts on any replica, one runs and the others are refused.
    await this.jobs.admit(row);
    if (body.replay > 0) {
      // A tenant at its replay limit is refused, and the evaluation it would have been part of is forgotten.
      const replay = await this.deps.replays.start(tenantId, slug, { version, limit: body.replay }).catch(async (err: unknown) => {
        await this.deps.store.delete(tenantId, id);
        throw err;
      });
      await this.deps.store.setReplay(id, replay.id);
      row = { ...row, replayId: replay.id };
    }
    const started = row;
    this.jobs.run(id, (job) => this.run(job, started, slug, body.folds));
    return row;
  }

  async get(tenantId: string, slug: string, id: string): Promise<Evaluation> {
    const agent = await this.deps.agents.any(tenantId, slug);
    return this.toApi(await this.jobs.get(tenantId, agent.id, id));
  }

  async list(tenantId: string, slug: string, q: { limit: number; cursor?: string }) {
    const agent = await this.deps.agents.any(tenantId, slug);
    return this.jobs.list(tenantId, agent.id, q, (r) => {
      const { result: _result, ...summary } = this.toApi(r);
      return summary;
    });
  }

  /** Resolves when this process's evaluation `id` has finished. */
  finished(id: string): Promise<void> {
    return this.jobs.finished(id);
  }

  /** Stops the evaluations this process runs; they are marked failed. */
  close(): Promise<void> {
    return this.jobs.close();
  }

  private toApi(row: EvaluationRow): Evaluation {
    return {
      id: row.id,
      version: row.version,
      baseline: row.baseline,
      status: row.status,
      stage: row.stage as Evaluation['stage'],
      progress: { done: row.done, total: row.total },
      result: (row.result as Result | null) ?? null,
      error: row.error,
      created_by: row.createdBy,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
      expires_at: row.expiresAt,
    };
  }

  private async run(job: JobContext, row: EvaluationRow, slug: string, folds: number): Promise<void> {
    const { agents, suites, inbox } = this.deps;
    const { tenantId, agentId, id } = row;
    let done = 0;
    let stage = 'cross_validation';
    const step = (n = 1) => {
      done += n;
      return job.progress({ done, total: row.total, columns: { stage } });
    };
    /** A new stage, recorded before its work (a failure in it says where it was). */
    const enter = (s: string) => {
      stage = s;
      return step(0);
    };
    await step(0);
    const versions = { draft: row.version, current: row.baseline };
    const compiled = {
      draft: await agents.compiledVersion(tenantId, agentId, versions.draft),
      current: await agents.compiledVersion(tenantId, agentId, versions.current),
    };
    const train = this.deps.trainer(tenantId);
    const cv: Record<'draft' | 'current', Side['cross_validation']> = {} as never;
    for (const side of ['draft', 'current'] as const) {
      const def = compiled[side].definition;
      const predictions = await crossValidate(def, folds, () => void step().catch(() => undefined), train);
      job.check();
      cv[side] = quality(def, predictions);
    }

    await enter('labelled');
    const labelled = (await inbox.labelled(tenantId, agentId, MAX_LABELLED)).map((l) => ({
      message: l.message,
      // Out of scope: the version's fallback, whichever capability that is.
      expected: l.capability ?? compiled.draft.fallback.name,
      draft: routeWith(compiled.draft, l.message),
      current: routeWith(compiled.current, l.message),
      outOfScope: l.capability === null,
    }));
    const right = (l: (typeof labelled)[number], side: 'draft' | 'current') => l[side] === (l.outOfScope ? compiled[side].fallback.name : l.expected);
    const asReviewed = (side: 'draft' | 'current') => labelled.filter((l) => right(l, side)).length;
    await step(2);

    await enter('tests');
    const suite = await suites.testSuite(tenantId, agentId);
    const tests = suite?.tests.length ? (suite.tests as TestCase[]) : null;
    const results = {
      draft: tests ? await agents.test(tenantId, slug, { version: versions.draft, tests }) : null,
      current: tests ? await agents.test(tenantId, slug, { version: versions.current, tests }) : null,
    };
    await step(2);

    let replay: Result['replay'] = null;
    if (row.replayId) {
      await enter('replay');
      await this.deps.replays.finished(row.replayId);
      const r = await this.deps.replays.get(tenantId, slug, row.replayId);
      if (r.status === 'failed') throw new Error(`the replay failed: ${r.error ?? 'unknown error'}`);
      replay = replaySummary(r.id, r.results);
      await step();
    }

    const side = (s: 'draft' | 'current'): Side => ({
      cross_validation: cv[s],
      labelled: { total: labelled.length, as_reviewed: asReviewed(s) },
      tests: testsOf(results[s]),
    });
    const result: Result = {
      draft: side('draft'),
      current: side('current'),
      labelled: {
        fixed: labelled.filter((l) => right(l, 'draft') && !right(l, 'current')).length,
        broken: labelled.filter((l) => right(l, 'current') && !right(l, 'draft')).length,
        messages: labelled.map(({ message, expected, draft, current }) => ({ message, expected, draft, current })),
      },
      replay,
    };
    await this.jobs.complete(id, { done: row.total, total: row.total, columns: { stage: 'done', result: JSON.stringify(result) } });
  }
}
