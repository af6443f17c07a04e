// The Switchboard HTTP contract: every endpoint, header, query, body and response.
// The server, the typed client and openapi.json are all derived from this router.
import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { ActivationResult, Agent, AgentVersion, AgentVersionSummary, PutAgentQuery, PutAgentResult, VersionsQuery } from './agents.js';
import { ActivateQuery, EndSplitQuery, PutSplit, Release, ReleasesQuery, ReleasesVerifyQuery, ReleaseVerification, SplitResult } from './releases.js';
import { commonErrors, ConverseHeaders, Page, Problem, Slug, TenantHeaders, Uuid } from './common.js';
import {
  AuditLogPage,
  AuditLogQuery,
  AuditVerification,
  ConversationDetail,
  ConversationRecord,
  ConversationSummary,
  Erased,
  ListConversationsQuery,
  OperatorMessage,
  OperatorMessageResult,
  StatusChange,
  WebhookDeliveriesQuery,
  WebhookDelivery,
} from './conversations.js';
import { ConverseRequest, ConverseResponse } from './converse.js';
import { AgentDefinition } from './definition.js';
import { ApiKey, CreatedKey, CreateKey, type Scope } from './keys.js';
import { PutSecret, SecretInfo, SecretName } from './secrets.js';
import { RunTests, TestResults } from './tests.js';
import { Replay, ReplaySummary, ReplaysQuery, StartReplay } from './replays.js';
import { AgentAnalytics, AnalyticsQuery } from './analytics.js';
import {
  Evaluation,
  EvaluationsQuery,
  EvaluationSummary,
  PutTestSuite,
  ReviewAction,
  ReviewActionResult,
  ReviewPage,
  ReviewQuery,
  StartEvaluation,
  TestSuite,
} from './review.js';
import { ChannelDeliveriesQuery, ChannelDelivery, ChannelInfo, ChannelKind, PatchChannel, PutChannel } from './channels.js';
import {
  VisitorHeaders,
  VisitorTokenRequest,
  VisitorTokenResponse,
  WidgetConversation,
  WidgetConverseRequest,
  WidgetQuery,
  WidgetSettings,
  WidgetSettingsQuery,
} from './widget.js';

export * from './agents.js';
export * from './common.js';
export * from './conversations.js';
export * from './converse.js';
export * from './definition.js';
export * from './keys.js';
export * from './secrets.js';
export * from './tests.js';
export * from './replays.js';
export * from './analytics.js';
export * from './review.js';
export * from './releases.js';
export * from './widget.js';
export * from './channels.js';
export { EXAMPLES, OPERATION_EXAMPLES, PARAMETER_EXAMPLES, type ExampleName, type OpenApiExample } from './examples.js';

const c = initContract();

const SlugParams = z.object({ slug: Slug });
/** The event id an event stream resumes after (the `last-event-id` header). */
const LastEventId = z
  .string()
  .regex(/^\d{1,18}-\d{1,6}$/, 'must be an event id such as 42-3')
  .optional()
  .describe('Resume after this event');
const ConversationParams = z.object({ slug: Slug, id: Uuid.describe('Conversation id') });

export const conversationsContract = c.router({
  converse: {
    method: 'POST',
    path: '/agents/:slug/converse',
    pathParams: SlugParams,
    headers: ConverseHeaders,
    body: ConverseRequest,
    responses: {
      200: ConverseResponse,
      409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
      422: Problem.describe(
        'Same idempotency key with another body (`idempotency_mismatch`), or a conversation over its turn or state limit (`limit_exceeded`)',
      ),
    },
    summary: 'Send a message to an agent, starting or continuing a conversation',
    description:
      'With `accept: text/event-stream` the answer is a stream of server-sent events: `delta` events (`{"text": "…"}`) as the reply is written, then `done` with this ConverseResponse, or `error` with a problem document (docs/generative.md).',
  },
  listConversations: {
    method: 'GET',
    path: '/agents/:slug/conversations',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: ListConversationsQuery,
    responses: { 200: Page(ConversationSummary).describe('Conversation summaries, newest first') },
    summary: "List an agent's conversations, newest first",
  },
  getConversation: {
    method: 'GET',
    path: '/agents/:slug/conversations/:id',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    responses: { 200: ConversationDetail },
    summary: 'Get a conversation with its turns and live state',
  },
  getHistory: {
    method: 'GET',
    path: '/agents/:slug/conversations/:id/history',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    responses: { 200: ConversationRecord },
    summary: 'Get a conversation record with its turns, oldest first',
  },
  getAuditLogs: {
    method: 'GET',
    path: '/agents/:slug/conversations/:id/audit-logs',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    query: AuditLogQuery,
    responses: { 200: AuditLogPage },
    summary: 'Get the audit log of a conversation: routing decisions, action calls, timing',
  },
  verifyAuditLogs: {
    method: 'GET',
    path: '/agents/:slug/conversations/:id/audit-logs/verify',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    responses: { 200: AuditVerification },
    summary: "Recompute a conversation's audit hash chain and report the first broken link",
  },
  streamEvents: {
    method: 'GET',
    path: '/agents/:slug/conversations/:id/events',
    pathParams: ConversationParams,
    headers: TenantHeaders.extend({
      'last-event-id': LastEventId,
    }),
    responses: {
      200: c.otherResponse({
        contentType: 'text/event-stream',
        body: z
          .string()
          .describe(
            'Server-sent events `turn.created`, `status.changed`, `phase.changed`, each with an `id` to resume from (Last-Event-ID) and JSON `data`; a `: ping` comment every 15 s. Without Last-Event-ID the stream starts with the next event.',
          ),
      }),
    },
    summary: "Stream a conversation's events (server-sent events)",
  },
  postOperatorMessage: {
    method: 'POST',
    path: '/agents/:slug/conversations/:id/messages',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    body: OperatorMessage,
    responses: {
      201: OperatorMessageResult,
      409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
      422: Problem.describe('The conversation has reached its turn limit (`limit_exceeded`)'),
    },
    summary: 'Add an agent turn written by a human operator',
  },
  setStatus: {
    method: 'POST',
    path: '/agents/:slug/conversations/:id/status',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    body: StatusChange,
    responses: {
      200: ConversationDetail,
      409: Problem.describe('A move the status table does not allow (`invalid_transition`)'),
    },
    summary: 'Move a conversation to another status (operator)',
  },
  eraseConversation: {
    method: 'DELETE',
    path: '/agents/:slug/conversations/:id',
    pathParams: ConversationParams,
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 204: c.noBody() },
    summary: 'Erase the personal data of a conversation, keeping an audit skeleton',
  },
  eraseUserConversations: {
    method: 'DELETE',
    path: '/users/:user_id/conversations',
    pathParams: z.object({ user_id: z.string().min(1).max(256) }),
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 200: Erased.describe("The number of the tenant's conversations with this user that were erased") },
    summary: 'Erase the personal data of every conversation of one end user (GDPR erasure)',
  },
  listWebhookDeliveries: {
    method: 'GET',
    path: '/agents/:slug/webhook-deliveries',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: WebhookDeliveriesQuery,
    responses: { 200: Page(WebhookDelivery).describe('Webhook deliveries with every attempt, newest first') },
    summary: "List an agent's webhook deliveries and their attempts",
  },
});

export const agentsContract = c.router({
  putAgent: {
    method: 'PUT',
    path: '/agents/:slug',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: PutAgentQuery,
    body: AgentDefinition,
    responses: {
      200: PutAgentResult,
      409: Problem.describe(
        'The current version has a release policy and the new version fails a gate (`release_gates_failed`, with `gates`): it is stored as a draft, not made current',
      ),
      422: Problem.describe('Training its router would exceed the memory or time budget (`training_budget_exceeded`)'),
    },
    summary: 'Create or update an agent; a changed definition makes a new version (current unless activate=false)',
  },
  listVersions: {
    method: 'GET',
    path: '/agents/:slug/versions',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: VersionsQuery,
    responses: { 200: Page(AgentVersionSummary).describe("The agent's versions, newest first") },
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
  getAnalytics: {
    method: 'GET',
    path: '/agents/:slug/analytics',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: AnalyticsQuery,
    responses: { 200: AgentAnalytics.describe("The agent's analytics over the window") },
    summary: "How an agent's conversations went over a window: counts, rates, medians, capabilities, outcomes and a series",
    description:
      'Computed in the database from hourly counters that each write keeps exact. The window is whole UTC hours (`from` rounded down, `to` up; default the last 7 days by day); see docs/observability.md for what each field counts.',
  },
  startReplay: {
    method: 'POST',
    path: '/agents/:slug/replays',
    pathParams: SlugParams,
    headers: TenantHeaders,
    body: StartReplay,
    responses: {
      202: z.object({ id: z.string().uuid(), status: z.literal('running') }).describe('The replay runs in the background: read it with GET …/replays/:id'),
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
    responses: { 200: Page(ReplaySummary).describe("The agent's replays kept (seven days), newest first, without their results") },
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
      202: z
        .object({ id: z.string().uuid(), status: z.literal('running') })
        .describe('The evaluation runs in the background: read it with GET …/evaluations/:id'),
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
    responses: { 200: Page(EvaluationSummary).describe("The agent's evaluations kept (thirty days), newest first, without their results") },
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
  runTests: {
    method: 'POST',
    path: '/agents/:slug/tests',
    pathParams: SlugParams,
    headers: TenantHeaders,
    body: RunTests,
    responses: { 200: TestResults },
    summary: 'Run test conversations against a version (the current one by default); nothing is stored and nothing goes out',
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
      409: Problem.describe('A gate of the release policy failed (`release_gates_failed`, with `gates`): nothing was changed'),
      429: Problem.describe('The gates need an evaluation and one of this tenant is running already (`rate_limited`)'),
    },
    summary: 'Make a stored version current (release a draft, or roll back) through the release gates; running conversations stay on theirs',
    description:
      "The current version's release policy judges the candidate on an evaluation of the two (one younger than `max_age_hours` is reused, else one is run first). A rollback to a version released before is not gated. Every activation writes a step of the release record. Ends a traffic split.",
  },
  listReleases: {
    method: 'GET',
    path: '/agents/:slug/releases',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: ReleasesQuery,
    responses: { 200: Page(Release).describe("The agent's release record, newest first") },
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
      409: Problem.describe('A gate of the release policy failed (`release_gates_failed`, with `gates`): nothing was changed'),
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
      409: Problem.describe('The agent has no split (`no_split`), or a gate failed (`release_gates_failed`): nothing was changed'),
      429: Problem.describe('The gates need an evaluation and one of this tenant is running already (`rate_limited`)'),
    },
    summary: "Make the split's candidate current, through the release gates, and end the split",
  },
  listAgents: {
    method: 'GET',
    path: '/agents',
    headers: TenantHeaders,
    responses: { 200: z.object({ data: z.array(Agent) }).describe("The tenant's agents") },
    summary: "List the tenant's agents",
  },
  getAgent: {
    method: 'GET',
    path: '/agents/:slug',
    pathParams: SlugParams,
    headers: TenantHeaders,
    responses: { 200: Agent },
    summary: 'Get an agent and its current definition',
  },
  deleteAgent: {
    method: 'DELETE',
    path: '/agents/:slug',
    pathParams: SlugParams,
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 204: c.noBody() },
    summary: 'Archive an agent; its conversations stay readable',
  },
});

export const keysContract = c.router({
  createKey: {
    method: 'POST',
    path: '/keys',
    headers: TenantHeaders,
    body: CreateKey,
    responses: { 201: CreatedKey },
    summary: 'Create an API key for this tenant (the key is shown once)',
  },
  listKeys: {
    method: 'GET',
    path: '/keys',
    headers: TenantHeaders,
    responses: { 200: z.object({ data: z.array(ApiKey) }).describe("The tenant's keys, without their secrets") },
    summary: "List the tenant's API keys",
  },
  revokeKey: {
    method: 'DELETE',
    path: '/keys/:id',
    pathParams: z.object({ id: Uuid }),
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 204: c.noBody() },
    summary: 'Revoke an API key',
  },
});

export const secretsContract = c.router({
  putSecret: {
    method: 'PUT',
    path: '/secrets/:name',
    pathParams: z.object({ name: SecretName }),
    headers: TenantHeaders,
    body: PutSecret,
    responses: {
      204: c.noBody(),
      409: Problem.describe('The operator has not set SECRETS_KEY, so tenant secrets are off (`secrets_not_configured`)'),
    },
    summary: "Set one of the tenant's secrets (write-only, encrypted at rest)",
  },
  listSecrets: {
    method: 'GET',
    path: '/secrets',
    headers: TenantHeaders,
    responses: { 200: z.object({ data: z.array(SecretInfo) }).describe("The tenant's secrets: names and times, never values") },
    summary: "List the names of the tenant's secrets",
  },
  deleteSecret: {
    method: 'DELETE',
    path: '/secrets/:name',
    pathParams: z.object({ name: SecretName }),
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 204: c.noBody() },
    summary: "Delete one of the tenant's secrets",
  },
});

const ChannelParams = z.object({ slug: Slug, channel: ChannelKind });

export const channelsContract = c.router({
  listChannels: {
    method: 'GET',
    path: '/agents/:slug/channels',
    pathParams: SlugParams,
    headers: TenantHeaders,
    responses: { 200: z.object({ data: z.array(ChannelInfo) }).describe("The agent's channels, without credentials") },
    summary: "List an agent's messaging channels",
  },
  putChannel: {
    method: 'PUT',
    path: '/agents/:slug/channels/:channel',
    pathParams: ChannelParams,
    headers: TenantHeaders,
    body: PutChannel,
    responses: {
      200: ChannelInfo.describe('The channel as connected: paste webhook_url into the provider’s settings'),
      409: Problem.describe('SECRETS_KEY is not set on this server, so credentials cannot be stored (`secrets_not_configured`)'),
      502: Problem.describe('set_webhook: Telegram refused or did not answer setWebhook (`channel_setup_failed`); nothing was stored'),
    },
    summary: 'Connect a messaging channel with its credentials (or replace them)',
    description:
      'Credentials are stored encrypted and never returned, logged or audited. A channel of the same kind already connected has its credentials replaced; its webhook URL stays the same.',
  },
  patchChannel: {
    method: 'PATCH',
    path: '/agents/:slug/channels/:channel',
    pathParams: ChannelParams,
    headers: TenantHeaders,
    body: PatchChannel,
    responses: { 200: ChannelInfo },
    summary: 'Pause or resume a channel',
  },
  deleteChannel: {
    method: 'DELETE',
    path: '/agents/:slug/channels/:channel',
    pathParams: ChannelParams,
    headers: TenantHeaders,
    body: c.noBody(),
    responses: { 204: c.noBody() },
    summary: 'Remove a channel: its credentials are forgotten and its webhook URL stops answering',
  },
  listChannelDeliveries: {
    method: 'GET',
    path: '/agents/:slug/channel-deliveries',
    pathParams: SlugParams,
    headers: TenantHeaders,
    query: ChannelDeliveriesQuery,
    responses: { 200: Page(ChannelDelivery).describe('Replies sent out through channels, with every provider call attempted, newest first') },
    summary: "List an agent's channel deliveries and their attempts",
  },
});

const apiOptions = { pathPrefix: '/api/v1', commonResponses: commonErrors, strictStatusCodes: true } as const;
/** Conversations and agents under /api/v1. */
export const agentsApi = c.router({ ...conversationsContract, ...agentsContract }, apiOptions);
/** Channels, keys and secrets under /api/v1. */
export const tenantApi = c.router({ ...channelsContract, ...keysContract, ...secretsContract }, apiOptions);
// One router typed by its two halves, each named: inferred whole, its type passes what
// TypeScript serializes into declarations (TS7056).
export const apiContract: typeof agentsApi & typeof tenantApi = { ...agentsApi, ...tenantApi };

/** The scope an API key needs for each route (AUTH_MODE=api_key). */
export const routeScopes: Record<keyof typeof apiContract, Scope> = {
  converse: 'converse',
  listConversations: 'read',
  getConversation: 'read',
  getHistory: 'read',
  getAuditLogs: 'read',
  verifyAuditLogs: 'read',
  streamEvents: 'read',
  listWebhookDeliveries: 'read',
  listChannels: 'read',
  putChannel: 'admin',
  patchChannel: 'admin',
  deleteChannel: 'admin',
  listChannelDeliveries: 'read',
  listAgents: 'read',
  getAgent: 'read',
  listVersions: 'read',
  getVersion: 'read',
  getAnalytics: 'read',
  activateVersion: 'admin',
  listReleases: 'read',
  verifyReleases: 'read',
  putSplit: 'admin',
  endSplit: 'admin',
  promoteSplit: 'admin',
  // Running test conversations spends the tenant's render budget: no read.
  runTests: 'converse',
  listReview: 'read',
  actOnReview: 'admin',
  getTestSuite: 'read',
  putTestSuite: 'admin',
  startEvaluation: 'admin',
  listEvaluations: 'read',
  getEvaluation: 'read',
  startReplay: 'admin',
  listReplays: 'read',
  getReplay: 'read',
  postOperatorMessage: 'admin',
  setStatus: 'admin',
  eraseConversation: 'admin',
  eraseUserConversations: 'admin',
  putAgent: 'admin',
  deleteAgent: 'admin',
  createKey: 'admin',
  listKeys: 'admin',
  revokeKey: 'admin',
  putSecret: 'admin',
  listSecrets: 'admin',
  deleteSecret: 'admin',
};

export const Health = z.object({ status: z.enum(['ok', 'unavailable']) });

export const opsContract = c.router(
  {
    healthz: {
      method: 'GET',
      path: '/healthz',
      responses: { 200: Health.describe('The process is up') },
      summary: 'Liveness',
    },
    metrics: {
      method: 'GET',
      path: '/metrics',
      headers: z.object({ authorization: z.string().optional().describe('`Bearer <METRICS_TOKEN>` when the server sets one') }),
      responses: {
        200: c.otherResponse({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: z.string().describe('The Prometheus text format') }),
        401: Problem.describe('METRICS_TOKEN is set and the request does not carry it'),
      },
      summary: 'Prometheus metrics of this process (docs/observability.md)',
      description: 'The Prometheus text format: process defaults and the switchboard_* series. Open unless the server sets METRICS_TOKEN.',
    },
    readyz: {
      method: 'GET',
      path: '/readyz',
      responses: {
        200: Health.describe('The database is reachable'),
        503: Problem.describe('The database cannot be reached'),
      },
      summary: 'Readiness',
    },
  },
  { strictStatusCodes: true },
);

const widgetProblem = (description: string) => Problem.describe(description);

/** The web chat widget's routes: publishable keys only, in every AUTH_MODE (docs/widget.md). */
export const widgetContract = c.router(
  {
    getWidget: {
      method: 'GET',
      path: '/agents/:slug',
      pathParams: SlugParams,
      query: WidgetSettingsQuery,
      responses: { 200: WidgetSettings },
      summary: 'How the widget presents an agent: title, greeting, colour, languages',
    },
    widgetVisitor: {
      method: 'POST',
      path: '/agents/:slug/visitor',
      pathParams: SlugParams,
      query: WidgetQuery,
      body: VisitorTokenRequest,
      responses: { 200: VisitorTokenResponse },
      summary: "A visitor token for this browser: a new visitor's, or the renewal of the one it holds",
      description:
        'The widget asks for one before its first request with a visitor, and renews it before it expires. New visitors are limited per client address and per key (docs/widget.md, "Limits").',
    },
    widgetConverse: {
      method: 'POST',
      path: '/agents/:slug/converse',
      pathParams: SlugParams,
      query: WidgetQuery,
      headers: VisitorHeaders,
      body: WidgetConverseRequest,
      responses: {
        200: ConverseResponse,
        409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
        422: Problem.describe('A conversation over its turn or state limit (`limit_exceeded`)'),
      },
      summary: "A visitor's message: starts a conversation, or continues one the same visitor started",
      description: "With `accept: text/event-stream` the answer streams as server-sent events, as the API's converse does (`delta`, then `done` or `error`).",
    },
    getWidgetConversation: {
      method: 'GET',
      path: '/agents/:slug/conversations/:id',
      pathParams: ConversationParams,
      query: WidgetQuery,
      headers: VisitorHeaders,
      responses: { 200: WidgetConversation },
      summary: "A visitor's own conversation with its turns (a reload resumes it)",
    },
    widgetEvents: {
      method: 'GET',
      path: '/agents/:slug/conversations/:id/events',
      pathParams: ConversationParams,
      query: WidgetQuery,
      headers: VisitorHeaders.extend({
        'last-event-id': LastEventId,
      }),
      responses: {
        200: c.otherResponse({
          contentType: 'text/event-stream',
          body: z.string().describe("Server-sent events of this conversation, as the API's events stream (docs/lifecycle.md)"),
        }),
      },
      summary: "Follow a visitor's own conversation: a person's replies, status changes",
    },
  },
  {
    pathPrefix: '/widget/v1',
    commonResponses: {
      400: widgetProblem('Invalid input (`validation_error`)'),
      401: widgetProblem('A visitor token this service did not sign for the key, or one that has expired (`unauthorized`): ask POST …/visitor for another'),
      403: widgetProblem('The page is not on an origin the key allows, or the key does not name this agent (`forbidden`)'),
      404: widgetProblem('Unknown or revoked key, unknown agent, or a conversation this visitor did not start'),
      413: widgetProblem('Body over the size limit (`payload_too_large`)'),
      415: widgetProblem('A body that is not application/json (`unsupported_media_type`)'),
      429: widgetProblem('A limit of the key, the visitor or the address (`rate_limited`); see retry-after'),
      500: widgetProblem('Unexpected failure (`internal_error`)'),
      503: widgetProblem('The service is unavailable for a moment (`unavailable`); see retry-after'),
    },
    strictStatusCodes: true,
  },
);

// Typed by its parts, each named: inferred, the whole contract's type is spelled out again and
// passes what TypeScript serializes into declarations (TS7056).
export const contract: { api: typeof apiContract; ops: typeof opsContract; widget: typeof widgetContract } = c.router({
  api: apiContract,
  ops: opsContract,
  widget: widgetContract,
});
export type Contract = typeof contract;
