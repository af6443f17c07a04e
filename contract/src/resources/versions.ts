// Versions: Versions and drafts, activation and rollback, test conversations and replays of recorded ones
import { z } from 'zod';
import { ActivationResult, AgentVersion, VersionPage, VersionsQuery } from '../agents.js';
import { JobStarted, Problem, Slug, TenantHeaders, Uuid } from '../common.js';
import { ActivateQuery } from '../releases.js';
import { Replay, ReplayPage, ReplaysQuery, StartReplay } from '../replays.js';
import { RunTests, TestResults } from '../tests.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { CONVERSATION, HANDED_OVER, REPLAY, ASK, definition, replay } from '../examples/fixtures.js';

const c = initContract();

/** The example agent's current version, as listed and as read. */
const version2 = {
  version: 2,
  created_at: '2026-11-24T09:00:00.000Z',
  current: true,
  state: 'current',
  note: 'agents apply agents/acme-support.yaml',
  capabilities: ['order_status', 'human'],
  knowledge: null,
};

export const versions = apiResource({
  tag: 'Versions',
  description: 'Versions and drafts, activation and rollback, test conversations and replays of recorded ones',
  routes: c.router(
    {
      listVersions: {
        method: 'GET',
        path: '/agents/:slug/versions',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: VersionsQuery,
        responses: { 200: VersionPage.describe("The agent's versions, newest first") },
        summary: "List an agent's versions, newest first",
      },
      getVersion: {
        method: 'GET',
        path: '/agents/:slug/versions/:version',
        pathParams: z.object({ slug: Slug, version: z.coerce.number().int().min(1).describe('Version number') }),
        headers: TenantHeaders,
        responses: { 200: AgentVersion },
        summary: 'Get one version of an agent with its definition',
      },
      activateVersion: {
        method: 'POST',
        path: '/agents/:slug/versions/:version/activate',
        pathParams: z.object({ slug: Slug, version: z.coerce.number().int().min(1).describe('Version number') }),
        headers: TenantHeaders,
        query: ActivateQuery,
        body: c.noBody(),
        responses: {
          200: ActivationResult,
          409: Problem.describe(
            'A gate of the release policy failed (`release_gates_failed`, with `gates`), or the snapshot of knowledge the version pins is no longer kept (`knowledge_snapshot_gone`): nothing was changed',
          ),
          429: Problem.describe('The gates need an evaluation and one of this tenant is running already (`rate_limited`)'),
        },
        summary: 'Make a stored version current (release a draft, or roll back) through the release gates; running conversations stay on theirs',
        description:
          "The current version's release policy judges the candidate on an evaluation of the two (one younger than `max_age_hours` is reused, else one is run first). A rollback to a version released before is not gated. Every activation writes a step of the release record. Ends a traffic split.",
      },
      runTests: {
        method: 'POST',
        path: '/agents/:slug/tests',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: RunTests,
        responses: { 200: TestResults },
        summary: 'Run test conversations against a version (the current one by default); nothing is stored and nothing goes out',
      },
      startReplay: {
        method: 'POST',
        path: '/agents/:slug/replays',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: StartReplay,
        responses: {
          202: JobStarted.describe('The replay runs in the background: read it with GET …/replays/:id'),
          429: Problem.describe('The tenant has two replays running already (`rate_limited`)'),
        },
        summary: 'Replay recorded conversations against a version: actions answered from their recordings, nothing stored or sent',
      },
      listReplays: {
        method: 'GET',
        path: '/agents/:slug/replays',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ReplaysQuery,
        responses: { 200: ReplayPage.describe("The agent's replays kept (seven days), newest first, without their results") },
        summary: "List an agent's replays, newest first",
      },
      getReplay: {
        method: 'GET',
        path: '/agents/:slug/replays/:id',
        pathParams: z.object({ slug: Slug, id: Uuid.describe('Replay id') }),
        headers: TenantHeaders,
        responses: { 200: Replay },
        summary: "A replay's progress, summary and results",
      },
    },
    apiOptions,
  ),
  permissions: {
    listVersions: 'read',
    getVersion: 'read',
    activateVersion: 'releases.write',
    // Running test conversations spends the tenant's render budget: not a viewer's.
    runTests: 'tests.run',
    startReplay: 'agents.write',
    listReplays: 'read',
    getReplay: 'read',
  },
  examples: {
    VersionPage: {
      summary: 'Versions, newest first',
      value: {
        data: [
          version2,
          {
            version: 1,
            created_at: '2026-11-20T08:00:00.000Z',
            current: false,
            state: 'released_before',
            note: 'PUT',
            capabilities: ['order_status'],
            knowledge: null,
          },
        ],
        next_cursor: null,
      },
    },
    Version: {
      summary: 'A version with its definition',
      value: {
        ...version2,
        digest: '26c164594e2be54ac33f85a5ffda233ab5db17c2b5704f46166816608764c39f',
        definition,
        warnings: [],
      },
    },
    TestsRequest: {
      summary: 'One test conversation',
      value: { tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }] },
    },
    TestsResult: {
      summary: 'It passed',
      value: {
        version: 2,
        passed: 1,
        failed: 0,
        results: [
          {
            name: 'order status',
            passed: true,
            steps: [
              {
                user: 'where is my order?',
                passed: true,
                expected: { capability: 'order_status', phase: 'ask_order' },
                actual: { reply: ASK, capability: 'order_status', phase: 'ask_order', awaiting_input: true, status: 'active', outcome: null, slots: {} },
                failures: [],
              },
            ],
          },
        ],
      },
    },
    ReplayRequest: { summary: 'Replay the last completed conversations on version 1', value: { version: 1, status: 'completed', limit: 50 } },
    ReplayStarted: { summary: 'The replay runs in the background', value: { id: REPLAY, status: 'running' } },
    ReplayPage: { summary: 'Replays, newest first', value: { data: [replay], next_cursor: null } },
    Replay: {
      summary: 'A finished replay: one conversation answers differently',
      value: {
        ...replay,
        results: [
          { conversation_id: CONVERSATION, verdict: 'identical', first_difference: null },
          {
            conversation_id: HANDED_OVER,
            verdict: 'changed',
            first_difference: {
              turn_index: 1,
              message: 'I want to talk to a person',
              field: 'reply',
              recorded: "I'm handing you over to a colleague.",
              replayed: 'A colleague will take over here shortly.',
              changes: [{ field: 'reply', recorded: "I'm handing you over to a colleague.", replayed: 'A colleague will take over here shortly.' }],
            },
          },
        ],
      },
    },
  },
  operations: {
    listVersions: { response: ['VersionPage'] },
    getVersion: { response: ['Version'] },
    activateVersion: { response: ['Activated'], problems: { 409: ['GatesFailed'] } },
    runTests: { request: ['TestsRequest'], response: ['TestsResult'] },
    startReplay: { request: ['ReplayRequest'], response: ['ReplayStarted'] },
    listReplays: { response: ['ReplayPage'] },
    getReplay: { response: ['Replay'] },
  },
});
