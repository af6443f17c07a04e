// Evaluations: A draft's evaluation beside the current version, and the stored test conversations it runs (docs/improving.md)
import { z } from 'zod';
import { JobStarted, Problem, Slug, TenantHeaders, Uuid } from '../common.js';
import { Evaluation, EvaluationPage, EvaluationsQuery, PutTestSuite, StartEvaluation, TestSuite } from '../review.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { REPLAY, T1, EVALUATION, evaluation, side } from '../examples/fixtures.js';

const c = initContract();

export const evaluations = apiResource({
  tag: 'Evaluations',
  description: "A draft's evaluation beside the current version, and the stored test conversations it runs (docs/improving.md)",
  routes: c.router(
    {
      getTestSuite: {
        method: 'GET',
        path: '/agents/:slug/test-suite',
        pathParams: SlugParams,
        headers: TenantHeaders,
        responses: { 200: TestSuite },
        summary: "The agent's stored test conversations, which every evaluation runs",
      },
      putTestSuite: {
        method: 'PUT',
        path: '/agents/:slug/test-suite',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: PutTestSuite,
        responses: { 200: TestSuite },
        summary: "Store the agent's test conversations (replacing those stored)",
      },
      startEvaluation: {
        method: 'POST',
        path: '/agents/:slug/versions/:version/evaluations',
        pathParams: z.object({ slug: Slug, version: z.coerce.number().int().min(1).describe('Version number') }),
        headers: TenantHeaders,
        body: StartEvaluation,
        responses: {
          202: JobStarted.describe('The evaluation runs in the background: read it with GET …/evaluations/:id'),
          429: Problem.describe('The tenant has an evaluation, or two replays, running already (`rate_limited`)'),
        },
        summary: 'Evaluate a version (a draft) beside the current one: cross-validated routing, reviewed messages, test conversations and a replay',
      },
      listEvaluations: {
        method: 'GET',
        path: '/agents/:slug/evaluations',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: EvaluationsQuery,
        responses: { 200: EvaluationPage.describe("The agent's evaluations kept (thirty days), newest first, without their results") },
        summary: "List an agent's evaluations, newest first",
      },
      getEvaluation: {
        method: 'GET',
        path: '/agents/:slug/evaluations/:id',
        pathParams: z.object({ slug: Slug, id: Uuid.describe('Evaluation id') }),
        headers: TenantHeaders,
        responses: { 200: Evaluation },
        summary: "An evaluation's progress and result, the draft beside the current version",
      },
    },
    apiOptions,
  ),
  permissions: {
    getTestSuite: 'read',
    putTestSuite: 'agents.write',
    startEvaluation: 'agents.write',
    listEvaluations: 'read',
    getEvaluation: 'read',
  },
  examples: {
    TestSuite: {
      summary: "The agent's test conversations",
      value: {
        tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }],
        updated_at: T1,
      },
    },
    PutTestSuite: {
      summary: 'Store one test conversation',
      value: { tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }] },
    },
    EvaluationRequest: { summary: 'Evaluate with a replay of the 100 newest conversations', value: { replay: 100, folds: 5 } },
    EvaluationStarted: { summary: 'The evaluation runs in the background', value: { id: EVALUATION, status: 'running' } },
    EvaluationPage: { summary: 'Evaluations, newest first', value: { data: [evaluation], next_cursor: null } },
    Evaluation: {
      summary: 'The draft routes the three reviewed messages as reviewers said, and breaks nothing',
      value: {
        ...evaluation,
        result: {
          draft: side(3, 0.95),
          current: side(0, 0.925),
          labelled: {
            fixed: 3,
            broken: 0,
            messages: [
              { message: 'my parcel never turned up', expected: 'order_status', draft: 'order_status', current: 'fallback' },
              { message: 'where is the stuff I bought', expected: 'order_status', draft: 'order_status', current: 'fallback' },
              { message: "what's the weather like?", expected: 'fallback', draft: 'fallback', current: 'billing' },
            ],
          },
          replay: { replay_id: REPLAY, conversations: 100, identical: 97, changed: 3, errors: 0, capability: 3, outcome: 1, reply: 3, action: 0 },
        },
      },
    },
  },
  operations: {
    getTestSuite: { response: ['TestSuite'] },
    putTestSuite: { request: ['PutTestSuite'], response: ['TestSuite'] },
    startEvaluation: { request: ['EvaluationRequest'], response: ['EvaluationStarted'] },
    listEvaluations: { response: ['EvaluationPage'] },
    getEvaluation: { response: ['Evaluation'] },
  },
});
