// Review: The review inbox: messages worth a look, turned into examples or out-of-scope messages of a draft (docs/improving.md)
import { Problem, TenantHeaders } from '../common.js';
import { ReviewAction, ReviewActionResult, ReviewPage, ReviewQuery } from '../review.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { REVIEW_ITEM, problem, reviewItem } from '../examples/fixtures.js';

const c = initContract();

export const review = apiResource({
  tag: 'Review',
  description: 'The review inbox: messages worth a look, turned into examples or out-of-scope messages of a draft (docs/improving.md)',
  routes: c.router(
    {
      listReview: {
        method: 'GET',
        path: '/agents/:slug/review',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ReviewQuery,
        responses: { 200: ReviewPage },
        summary: "The review inbox: the agent's user messages worth a look, grouped, the most recently seen first, with counts by reason",
        description:
          'Messages that fell to the fallback or out of scope, were routed with a small margin, were left or rephrased right after the reply, were escalated soon after, or failed a slot until max_attempts; found as each turn is written (docs/improving.md). Erased conversations never appear.',
      },
      actOnReview: {
        method: 'POST',
        path: '/agents/:slug/review/actions',
        pathParams: SlugParams,
        headers: TenantHeaders,
        body: ReviewAction,
        responses: {
          200: ReviewActionResult,
          409: Problem.describe('An item is no longer open (`review_item_closed`): nothing was changed'),
        },
        summary: "Add review items' messages to the agent's draft as examples or out of scope, or dismiss them",
        description:
          'The draft is the newest stored version when it is newer than the current one, else the current one: the changes are stored as a new version that is not current, with a diff. Items acted on leave the inbox, and record the key that acted.',
      },
    },
    apiOptions,
  ),
  permissions: {
    listReview: 'read',
    actOnReview: 'review.act',
  },
  examples: {
    ReviewPage: {
      summary: 'One message that fell to the fallback, twice',
      value: {
        data: [reviewItem],
        counts: {
          fallback: { items: 1, messages: 2 },
          out_of_scope: { items: 0, messages: 0 },
          low_margin: { items: 0, messages: 0 },
          switched: { items: 0, messages: 0 },
          rephrased: { items: 0, messages: 0 },
          escalated: { items: 0, messages: 0 },
          slot_failed: { items: 0, messages: 0 },
          unanswered: { items: 0, messages: 0 },
        },
        capped: { per_conversation: 0, per_agent_hour: 0, since: '2026-11-20T09:00:00.000Z' },
        next_cursor: null,
      },
    },
    ReviewAddExample: {
      summary: 'Add a message to the examples of order_status',
      value: { items: [REVIEW_ITEM], action: 'add_example', capability: 'order_status' },
    },
    ReviewDismiss: { summary: 'Dismiss a message', value: { items: [REVIEW_ITEM], action: 'dismiss' } },
    ReviewActed: {
      summary: 'Added to a new draft',
      value: {
        acted: 1,
        draft: {
          version: 2,
          based_on: 1,
          added: [{ path: 'capabilities[1].examples', example: 'my parcel never turned up' }],
          unchanged: [],
          diff: '--- acme-support.yaml@1\n+++ acme-support.yaml@2\n@@ -46,4 +46,5 @@\n       - cuándo llega mi paquete\n       - mi pedido no ha llegado\n+      - my parcel never turned up\n',
        },
      },
    },
    ReviewItemClosed: {
      summary: 'Another reviewer acted first',
      value: problem(409, 'Conflict', 'review_item_closed', '1 of the items are no longer open: nothing was changed', [
        { path: 'items', message: `${REVIEW_ITEM} is not open` },
      ]),
    },
  },
  operations: {
    listReview: { response: ['ReviewPage'] },
    actOnReview: { request: ['ReviewAddExample', 'ReviewDismiss'], response: ['ReviewActed'], problems: { 409: ['ReviewItemClosed'] } },
  },
});
