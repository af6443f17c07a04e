// Releases: The release record with its gates and hash chain, and traffic splits (docs/releases.md)
import { ActivationResult } from '../agents.js';
import { Problem, TenantHeaders } from '../common.js';
import { ActivateQuery, EndSplitQuery, PutSplit, ReleasePage, ReleaseVerification, ReleasesQuery, ReleasesVerifyQuery, SplitResult } from '../releases.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { T1, EVALUATION, agent, release, problem } from '../examples/fixtures.js';

const c = initContract();

export const releases = apiResource({
  tag: 'Releases',
  description: 'The release record with its gates and hash chain, and traffic splits (docs/releases.md)',
  routes: c.router(
    {
      listReleases: {
        method: 'GET',
        path: '/agents/:slug/releases',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ReleasesQuery,
        responses: { 200: ReleasePage.describe("The agent's release record, newest first") },
        summary: "An agent's release record: every activation, rollback, promotion and split, with who did it and the gates",
      },
      verifyReleases: {
        method: 'GET',
        path: '/agents/:slug/releases/verify',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ReleasesVerifyQuery,
        responses: { 200: ReleaseVerification },
        summary: "Recompute the release record's hash chain and report the first broken link",
        description:
          "Checks the chain, every step's version column, the agent's served version and split against the newest step, the evaluations steps cite against the evidence chained with them and, with `head`, that a head published earlier is still in the record (docs/security.md).",
      },
      putSplit: {
        method: 'PUT',
        path: '/agents/:slug/split',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: PutSplit,
        responses: {
          200: SplitResult,
          409: Problem.describe(
            'A gate of the release policy failed (`release_gates_failed`, with `gates`), or the snapshot of knowledge the version pins is no longer kept (`knowledge_snapshot_gone`): nothing was changed',
          ),
          429: Problem.describe('The gates need an evaluation and one of this tenant is running already (`rate_limited`)'),
        },
        summary: 'Send a share of new conversations to a candidate version, through the release gates (start a split or change its share)',
      },
      endSplit: {
        method: 'DELETE',
        path: '/agents/:slug/split',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: EndSplitQuery,
        body: c.noBody(),
        responses: {
          200: SplitResult,
          409: Problem.describe('The agent has no split (`no_split`)'),
        },
        summary: 'End the split: every new conversation starts on the current version again (running ones keep theirs)',
      },
      promoteSplit: {
        method: 'POST',
        path: '/agents/:slug/split/promote',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ActivateQuery,
        body: c.noBody(),
        responses: {
          200: ActivationResult,
          409: Problem.describe(
            'The agent has no split (`no_split`), a gate failed (`release_gates_failed`), or the snapshot of knowledge the version pins is no longer kept (`knowledge_snapshot_gone`): nothing was changed',
          ),
          429: Problem.describe('The gates need an evaluation and one of this tenant is running already (`rate_limited`)'),
        },
        summary: "Make the split's candidate current, through the release gates, and end the split",
      },
    },
    apiOptions,
  ),
  permissions: {
    listReleases: 'read',
    verifyReleases: 'read',
    putSplit: 'releases.write',
    endSplit: 'releases.write',
    promoteSplit: 'releases.write',
  },
  examples: {
    Activated: { summary: 'Version 2 released through its gates', value: { ...agent, release: release(3, 'activate', 2) } },
    GatesFailed: {
      summary: 'A gate failed: the version was not released',
      value: {
        ...problem(409, 'Conflict', 'release_gates_failed', 'Version 3 fails 1 release gate: tests'),
        gates: [
          { gate: 'tests', passed: false, figure: 0.875, current: 1, limit: 1, evidence: 8, detail: 'tests: 7 of 8 pass (all must); failing: order lookup' },
        ],
        evaluation_id: EVALUATION,
      },
    },
    ReleasePage: {
      summary: 'The release record, newest first',
      value: {
        data: [release(4, 'split_start', 3, { previous_version: 2, split: { version: 3, percent: 50 } }), release(3, 'activate', 2)],
        next_cursor: null,
      },
    },
    ReleasesVerified: { summary: 'The release record is intact', value: { entries: 4, keyed_entries: 4, keyed_from: 1, valid: true, first_broken: null } },
    SplitRequest: { summary: 'Send half of new conversations to version 3', value: { version: 3, percent: 50 } },
    SplitStarted: {
      summary: 'Half of new conversations start on version 3',
      value: {
        split: { version: 3, percent: 50, started_at: T1 },
        release: release(4, 'split_start', 3, { previous_version: 2, split: { version: 3, percent: 50 } }),
      },
    },
    SplitEnded: {
      summary: 'Everyone on the current version again',
      value: { split: null, release: release(5, 'split_end', 3, { previous_version: 2, gates: [], evaluation_id: null, reason: 'Candidate escalates more' }) },
    },
  },
  operations: {
    listReleases: { response: ['ReleasePage'] },
    verifyReleases: { response: ['ReleasesVerified'] },
    putSplit: { request: ['SplitRequest'], response: ['SplitStarted'], problems: { 409: ['GatesFailed'] } },
    endSplit: { response: ['SplitEnded'] },
    promoteSplit: { response: ['Activated'] },
  },
});
