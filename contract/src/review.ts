// The review inbox and evaluations of drafts (docs/improving.md): the user messages an agent
// missed, what reviewers did with them, and a draft measured against them, its examples, its
// test conversations and recorded conversations, beside the current version.
import { z } from 'zod';
import { Page, TimeFilter, Timestamp, Uuid } from './common.js';
import { TestCase } from './tests.js';

const Identifier = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'must match [a-z][a-z0-9_]*')
  .max(64);

export const ReviewReason = z
  .enum(['fallback', 'out_of_scope', 'low_margin', 'switched', 'rephrased', 'escalated', 'slot_failed', 'unanswered'])
  .describe(
    'fallback: no capability cleared the threshold; out_of_scope: the fallback capability won; low_margin: the two best capabilities were closer than REVIEW_LOW_MARGIN; switched: the user left the flow for another capability; rephrased: the user said the message again right after the reply; escalated: the conversation was escalated within three turns of routing the message; slot_failed: a slot answer failed validation until max_attempts; unanswered: an answer phase found nothing confident enough in its knowledge sources (a document is missing)',
  );
export type ReviewReason = z.infer<typeof ReviewReason>;

export const ReviewStatus = z
  .enum(['open', 'added', 'out_of_scope', 'dismissed'])
  .describe('open: in the inbox; added: added as an example; out_of_scope: added as out of scope; dismissed');
export type ReviewStatus = z.infer<typeof ReviewStatus>;

export const ReviewOccurrence = z.object({
  conversation_id: Uuid,
  turn_index: z.number().int().describe("Index in the conversation's turns of the user message"),
  audit_sequence: z.number().int().nullable().describe('Sequence of the routing decision in the audit log (GET …/audit-logs), when one routed the message'),
  version: z.number().int().describe('The agent version that answered'),
  capability: z.string().describe('Where the message was routed (or the flow it was in)'),
  message: z.string().describe('The user message (its first 1,000 characters)'),
  detail: z
    .record(z.unknown())
    .describe(
      'By reason: routing_reason and best (fallback, out_of_scope); margin and second (low_margin); from, to and switch_message (switched); next_message (rephrased); escalation_reason and turns_after (escalated); error (slot_failed); sources, best_confidence, min_confidence and error when the search failed (unanswered)',
    ),
  at: Timestamp,
});

const ReviewItemSchema = z
  .object({
    id: Uuid,
    reason: ReviewReason,
    status: ReviewStatus,
    message: z.string().describe('The newest of the near-identical messages'),
    count: z.number().int().describe('Near-identical messages (same words, case, accents, punctuation and digits aside) with this reason'),
    capability: z.string().describe('Where the newest was routed'),
    margin: z.number().optional().describe("low_margin: the newest one's margin between the two best capabilities"),
    first_seen_at: Timestamp,
    last_seen_at: Timestamp,
    occurrences: z.array(ReviewOccurrence).describe('The newest three'),
    action: z
      .object({
        action: z.enum(['add_example', 'add_out_of_scope', 'dismiss']),
        capability: z.string().optional(),
        example: z.string().optional().describe('The text added to the draft (absent once erased)'),
        version: z.number().int().optional().describe('The draft version it was added to'),
        erased: z
          .literal(true)
          .optional()
          .describe('The example was erased with a conversation it came from: it left the drafts and evaluations too (docs/lifecycle.md)'),
        acted_by: z.string().nullable().describe('The id of the API key that acted (null without API keys)'),
        acted_at: Timestamp,
      })
      .nullable()
      .describe('What a reviewer did (null while open)'),
  })
  .describe('Near-identical user messages worth a look, with one reason');
export type ReviewItem = z.infer<typeof ReviewItemSchema>;
// Typed by name, so that the contract's declarations stay within what TypeScript serializes.
export const ReviewItem: z.ZodType<ReviewItem> = ReviewItemSchema;

export const ReviewQuery = z.object({
  reason: ReviewReason.optional(),
  status: ReviewStatus.default('open'),
  since: TimeFilter.optional().describe('Items last seen at or after this time'),
  until: TimeFilter.optional().describe('Items last seen before this time'),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});

const Count = z.object({ items: z.number().int(), messages: z.number().int() });

const ReviewPageSchema = z
  .object({
    data: z.array(ReviewItem),
    counts: z
      .object({
        fallback: Count,
        out_of_scope: Count,
        low_margin: Count,
        switched: Count,
        rephrased: Count,
        escalated: Count,
        slot_failed: Count,
        unanswered: Count,
      } satisfies Record<ReviewReason, typeof Count>)
      .describe('Items and messages by reason, with the status and time filters (not the reason filter)'),
    capped: z
      .object({
        per_conversation: z.number().int().describe('Findings left out because their conversation had added REVIEW_MAX_PER_CONVERSATION already'),
        per_agent_hour: z.number().int().describe("Findings left out because the agent's inbox had taken REVIEW_MAX_PER_AGENT_HOUR that hour"),
        since: Timestamp.describe('Counted from this hour (`since`, or seven days ago) until `until` or now'),
      })
      .describe('Messages worth a look that the caps kept out of the inbox (docs/improving.md): many here means one source is flooding it'),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
  })
  .describe('Review items, the most recently seen first');

const ReviewActionSchema = z
  .object({
    items: z.array(Uuid).min(1).max(100).describe('Ids of open review items'),
    action: z
      .enum(['add_example', 'add_out_of_scope', 'dismiss'])
      .describe("add_example: the item's message joins `capability`'s examples in the draft; add_out_of_scope: it joins routing.out_of_scope; dismiss"),
    capability: Identifier.optional().describe('add_example: the capability'),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.action === 'add_example' && !v.capability) ctx.addIssue({ code: 'custom', path: ['capability'], message: 'add_example needs a capability' });
    if (v.action !== 'add_example' && v.capability) ctx.addIssue({ code: 'custom', path: ['capability'], message: 'only add_example takes a capability' });
  });

const ReviewActionResultSchema = z
  .object({
    acted: z.number().int().describe('Items acted on (they leave the inbox)'),
    draft: z
      .object({
        version: z.number().int().describe('The draft version now holding the changes (not current; activate it when its evaluation satisfies you)'),
        based_on: z.number().int().describe('The version it was made from: the previous draft, or the current version when there was none'),
        added: z.array(z.object({ path: z.string(), example: z.string() })).describe('Examples added, with where'),
        unchanged: z.array(z.object({ path: z.string(), example: z.string() })).describe('Examples the draft had already'),
        diff: z.string().describe('A unified diff of the definition as YAML, from based_on to version'),
      })
      .nullable()
      .describe('null for dismiss, or when the draft had every example already'),
  })
  .describe('What the action changed');

const TestSuiteSchema = z
  .object({
    tests: z.array(TestCase).max(200).describe("The agent's test conversations (as in <agent>.test.yaml), run by every evaluation"),
    updated_at: Timestamp.nullable().describe('null: none stored'),
  })
  .describe("The agent's stored test conversations");

const PutTestSuiteSchema = z.object({ tests: z.array(TestCase).max(200) }).strict();

export const StartEvaluation = z
  .object({
    replay: z.number().int().min(0).max(500).default(100).describe('Replay this many of the newest recorded conversations (0: none)'),
    folds: z.number().int().min(2).max(10).default(5).describe('Cross-validation folds'),
  })
  .strict();

const Rate = z.number().nullable();

export const RoutingQuality = z.object({
  total: z.number().int(),
  accuracy: z.number(),
  capabilities: z.array(z.object({ name: z.string(), support: z.number().int(), precision: Rate, recall: Rate })),
  confused: z
    .array(z.object({ expected: z.string(), got: z.string(), count: z.number().int(), messages: z.array(z.string()) }))
    .describe('The most confused pairs'),
  matrix: z
    .object({ labels: z.array(z.string()), counts: z.array(z.array(z.number().int())) })
    .describe('counts[i][j]: messages of labels[i] routed to labels[j]'),
});

export const LabelledMessage = z.object({
  message: z.string(),
  expected: z.string().describe('What the reviewer said: the capability, or the fallback for out of scope'),
  draft: z.string().describe('Where the draft routes it'),
  current: z.string().describe('Where the current version routes it'),
});

export const EvaluationSide = z.object({
  cross_validation: RoutingQuality.describe("Cross-validated routing of the version's own examples"),
  labelled: z
    .object({ total: z.number().int(), as_reviewed: z.number().int().describe('Routed as the reviewers said') })
    .describe('The messages reviewers added, as a labelled set'),
  tests: z
    .object({ total: z.number().int(), passed: z.number().int(), failed: z.array(z.object({ name: z.string(), step: z.number().int(), why: z.string() })) })
    .describe("The agent's stored test conversations"),
});

const EvaluationResultSchema = z
  .object({
    draft: EvaluationSide,
    current: EvaluationSide,
    labelled: z
      .object({
        fixed: z.number().int().describe('Routed as reviewed by the draft, not by the current version'),
        broken: z.number().int().describe('Routed as reviewed by the current version, not by the draft'),
        messages: z.array(LabelledMessage).describe('Every labelled message (at most 500), where each version routes it'),
      })
      .describe('The labelled set, message by message'),
    replay: z
      .object({
        replay_id: Uuid,
        conversations: z.number().int(),
        identical: z.number().int(),
        changed: z.number().int(),
        errors: z.number().int(),
        capability: z.number().int().describe('Conversations whose first changed turn routed elsewhere'),
        outcome: z.number().int().describe('…ended with another status or outcome'),
        reply: z.number().int().describe('…answered other words'),
        action: z.number().int().describe('…called an action differently'),
      })
      .nullable()
      .describe('The newest recorded conversations replayed against the draft (GET …/replays/{replay_id} has each one)'),
  })
  .describe('The evaluated version beside the current one');
export type EvaluationResult = z.infer<typeof EvaluationResultSchema>;
const EvaluationResult: z.ZodType<EvaluationResult> = EvaluationResultSchema;

const EvaluationSchema = z
  .object({
    id: Uuid,
    version: z.number().int().describe('The version evaluated (the draft)'),
    baseline: z.number().int().describe('The version it is compared with (current when the evaluation started)'),
    status: z.enum(['running', 'done', 'failed']),
    stage: z.enum(['queued', 'cross_validation', 'labelled', 'tests', 'replay', 'done']),
    progress: z.object({ done: z.number().int(), total: z.number().int() }),
    result: EvaluationResult.nullable(),
    error: z.string().nullable(),
    created_by: z.string().nullable().describe('The id of the API key that started it'),
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Timestamp.describe('Evaluations are kept for thirty days; one a release step cites as long as the step (9999-12-31)'),
  })
  .describe("A draft's evaluation beside the current version");

const EvaluationSummarySchema = EvaluationSchema.omit({ result: true }).describe('An evaluation without its result');

export const EvaluationsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(50).default(20),
  cursor: z.string().max(500).optional(),
});

// Typed by name, so that the contract's declarations stay within what TypeScript serializes.
export type ReviewPage = z.infer<typeof ReviewPageSchema>;
export const ReviewPage: z.ZodType<ReviewPage> = ReviewPageSchema;
export type ReviewAction = z.infer<typeof ReviewActionSchema>;
export const ReviewAction: z.ZodType<ReviewAction> = ReviewActionSchema;
export type ReviewActionResult = z.infer<typeof ReviewActionResultSchema>;
export const ReviewActionResult: z.ZodType<ReviewActionResult> = ReviewActionResultSchema;
export type TestSuite = z.infer<typeof TestSuiteSchema>;
export const TestSuite: z.ZodType<TestSuite, z.ZodTypeDef, z.input<typeof TestSuiteSchema>> = TestSuiteSchema;
export type PutTestSuite = z.infer<typeof PutTestSuiteSchema>;
export const PutTestSuite: z.ZodType<PutTestSuite, z.ZodTypeDef, z.input<typeof PutTestSuiteSchema>> = PutTestSuiteSchema;
export type Evaluation = z.infer<typeof EvaluationSchema>;
export const Evaluation: z.ZodType<Evaluation> = EvaluationSchema;
export type EvaluationSummary = z.infer<typeof EvaluationSummarySchema>;
export const EvaluationSummary: z.ZodType<EvaluationSummary> = EvaluationSummarySchema;

export const EvaluationPage = Page(EvaluationSummary);
