// Shared pieces of the contract: headers, the RFC 9457 problem body, pagination and ids.
import { z } from 'zod';

export const Uuid = z.string().uuid();

/** Agent slug as used in paths: `[a-z0-9][a-z0-9-]{0,62}`. */
export const Slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must match [a-z0-9][a-z0-9-]{0,62}')
  .describe('Agent slug');

export const TenantId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 characters of letters, digits, ".", "_" or "-"')
  .describe('Tenant identifier');

/** What breaks any hash chain (a conversation's audit log, an agent's release record; docs/security.md). */
export const CHAIN_BREAKS = ['sequence_gap', 'missing_hash', 'data_mismatch', 'hash_mismatch', 'unkeyed_after_keyed', 'not_keyed', 'head_mismatch'] as const;

export const Timestamp = z.string().datetime({ offset: true }).describe('ISO 8601 UTC timestamp');

/** A point in time given by a caller: ISO 8601, and one that exists (`+99:99` is no offset). */
export const TimeFilter = z
  .string()
  .datetime({ offset: true })
  .refine((v) => {
    const m = /([+-])(\d{2}):?(\d{2})$/.exec(v);
    return (!m || (Number(m[2]) <= 23 && Number(m[3]) <= 59)) && Number.isFinite(Date.parse(v));
  }, 'must be an ISO 8601 time with a valid offset')
  .describe('ISO 8601 time');

/** Headers every /api/v1 endpoint takes. */
export const TenantHeaders = z.object({
  'tenant-id': TenantId,
  'x-request-id': z.string().max(200).optional().describe('Trace id; echoed back, generated when absent'),
  authorization: z.string().optional().describe('`Bearer <key>` when the server runs with AUTH_MODE=api_key'),
  'x-csrf-token': z
    .string()
    .max(128)
    .optional()
    .describe("A person signed in with a session cookie: the session's CSRF token (GET /api/v1/me), on every request that changes something"),
});

export const UserHeaders = TenantHeaders.extend({
  'user-id': z.string().min(1).max(256).optional().describe('External user id, the fallback when the context carries none'),
});

export const ConverseHeaders = UserHeaders.extend({
  'idempotency-key': z.string().min(1).max(255).optional().describe('A retried request with the same key and body returns the stored response'),
});

export const ProblemFieldError = z.object({
  path: z.string().describe('Where the problem is: a JSON path into the body, or query.NAME, header.NAME, path.NAME'),
  message: z.string(),
  line: z.number().int().optional().describe('For a YAML body or file: the line (from 1) of the value in question'),
  column: z.number().int().optional().describe('For a YAML body or file: the column (from 1)'),
});

export const ProblemCode = z.enum([
  'validation_error',
  'tenant_required',
  'unauthorized',
  'forbidden',
  'agent_not_found',
  'version_not_found',
  'replay_not_found',
  'review_item_not_found',
  'evaluation_not_found',
  'conversation_not_found',
  'not_found',
  'method_not_allowed',
  'conversation_closed',
  'review_item_closed',
  'release_gates_failed',
  'no_split',
  'source_kind_mismatch',
  'knowledge_snapshot_gone',
  'invalid_transition',
  'payload_too_large',
  'unsupported_media_type',
  'idempotency_mismatch',
  'limit_exceeded',
  'rate_limited',
  'secrets_not_configured',
  'channel_not_found',
  'invalid_signature',
  'channel_setup_failed',
  'training_budget_exceeded',
  'unavailable',
  'internal_error',
]);
export type ProblemCode = z.infer<typeof ProblemCode>;

/** The gates a release policy may hold a version to (server/src/service/release-gates/ judges each). */
export const ReleaseGateName = z.enum([
  'tests',
  'labelled_accuracy',
  'routing_accuracy',
  'replay_changed_outcomes',
  'replay_changed_capabilities',
  'new_hosts',
  'policy',
]);

/** One gate of an agent's release policy, judged on an evaluation (docs/releases.md). */
const ReleaseGateSchema = z.object({
  gate: ReleaseGateName.describe(
    'Which requirement of `release.require`; `policy`: the version would weaken the release policy in force (a step that does is forced or refused)',
  ),
  passed: z.boolean(),
  figure: z.number().nullable().describe("The candidate's figure (a share from 0 to 1, or a count for new_hosts); null with no evidence"),
  current: z.number().nullable().describe("The current version's figure, where the gate compares with it"),
  limit: z.number().nullable().describe('The bound the figure is held to (a minimum or a maximum, as `detail` says)'),
  evidence: z.number().int().describe('How many tests, messages or conversations the figure stands on (0: the gate passes for want of any)'),
  detail: z.string().describe('The gate and its figure in a sentence'),
});
export type ReleaseGate = z.infer<typeof ReleaseGateSchema>;
export const ReleaseGate: z.ZodType<ReleaseGate> = ReleaseGateSchema;

/** RFC 9457 problem details, served as application/problem+json. */
const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: ProblemCode,
    request_id: z.string(),
    errors: z.array(ProblemFieldError).optional(),
    gates: z.array(ReleaseGate).optional().describe('`release_gates_failed`: every gate of the release policy with its figure, those that failed among them'),
    evaluation_id: z.string().uuid().optional().describe('`release_gates_failed`: the evaluation the gates were judged on'),
  })
  .describe('RFC 9457 problem details');
export type Problem = z.infer<typeof ProblemSchema>;
// Typed by name: every operation answers problems, and the contract's declarations (which repeat
// each response's type) stay within what TypeScript serializes.
export const Problem: z.ZodType<Problem> = ProblemSchema;

const problem = (description: string) => Problem.describe(description);

/** Error responses shared by every /api/v1 route. */
export const commonErrors = {
  400: problem('Invalid input (`validation_error`) or no tenant-id header (`tenant_required`)'),
  401: problem('API-key mode: no key, or a wrong one (`unauthorized`)'),
  403: problem('The key belongs to another tenant or lacks the scope (`forbidden`)'),
  404: problem('Unknown, foreign or archived agent or conversation'),
  413: problem('Body over the size limit (`payload_too_large`)'),
  415: problem('A body that is not application/json (`unsupported_media_type`)'),
  429: problem('Per-tenant rate limit (`rate_limited`); see retry-after'),
  500: problem('Unexpected failure (`internal_error`); the detail carries no internals'),
  503: problem('The database cannot be reached (`unavailable`); see retry-after'),
} as const;

export const Page = <T extends z.ZodTypeAny>(item: T) =>
  z.object({
    data: z.array(item),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
  });

/** What the liveness and readiness probes answer. */
export const Health = z.object({ status: z.enum(['ok', 'unavailable']) });

/** Every item at once, for lists that are short by nature (a tenant's keys, an agent's channels). */
export const List = <T extends z.ZodTypeAny>(item: T) => z.object({ data: z.array(item) });

/** A background job (a replay, an evaluation) has started: read it by its id. */
export const JobStarted = z.object({ id: z.string().uuid(), status: z.literal('running') });
