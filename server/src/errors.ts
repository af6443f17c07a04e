// Named errors thrown anywhere inside the server; http/problem.ts maps them to RFC 9457 bodies.
import type { ProblemCode, ReleaseGate } from '@switchboard/contract';

export interface FieldProblem {
  path: string;
  message: string;
  /** For YAML input: where in the source (from 1). */
  line?: number;
  column?: number;
}

/**
 * An error the HTTP layer answers with its status and code. `cause` keeps what it came from (a
 * driver's error, the engine's) for the operator's log; the problem body never shows it.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ProblemCode,
    message: string,
    readonly errors?: FieldProblem[],
    readonly headers?: Record<string, string>,
    opts?: { cause?: unknown },
  ) {
    super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
  }
}

export class InputError extends AppError {
  constructor(message: string, errors?: FieldProblem[]) {
    super(400, 'validation_error', message, errors);
  }
}

/** An agent definition that does not validate, with every problem and its path. */
export class DefinitionError extends InputError {
  constructor(errors: FieldProblem[]) {
    super(`The agent definition has ${errors.length} problem${errors.length === 1 ? '' : 's'}`, errors);
  }
}

export class NotFoundError extends AppError {
  constructor(
    code:
      | 'agent_not_found'
      | 'conversation_not_found'
      | 'version_not_found'
      | 'replay_not_found'
      | 'review_item_not_found'
      | 'evaluation_not_found'
      | 'channel_not_found'
      | 'not_found',
    message: string,
  ) {
    super(404, code, message);
  }
}

/** A path the API serves, asked with a method it does not: 405, with the methods it takes in `allow`. */
export class MethodNotAllowedError extends AppError {
  constructor(method: string, path: string, allowed: string[]) {
    super(405, 'method_not_allowed', `${path} does not take ${method}; it takes ${allowed.join(', ')}`, undefined, { allow: allowed.join(', ') });
  }
}

export class ConflictError extends AppError {
  constructor(code: 'conversation_closed' | 'invalid_transition' | 'no_split' | 'source_kind_mismatch' | 'knowledge_snapshot_gone', message: string) {
    super(409, code, message);
  }
}

/** A part of the request over its size cap (413), saying which. */
export class PayloadTooLargeError extends AppError {
  constructor(message: string, path: string, limit: string) {
    super(413, 'payload_too_large', message, [{ path, message: limit }]);
  }
}

export class IdempotencyMismatchError extends AppError {
  constructor() {
    super(422, 'idempotency_mismatch', 'This idempotency key was used with a different request body');
  }
}

export class UnavailableError extends AppError {
  constructor(message = 'The database cannot be reached; try again shortly', opts?: { cause?: unknown }) {
    super(503, 'unavailable', message, undefined, { 'retry-after': '2' }, opts);
  }
}

/** A conversation over one of the operator's caps (turns, state size). */
export class LimitError extends AppError {
  constructor(message: string, path?: string) {
    super(422, 'limit_exceeded', message, path ? [{ path, message }] : undefined);
  }
}

export class RateLimitedError extends AppError {
  constructor(retryAfterSeconds: number, message = 'Too many requests for this tenant; retry later') {
    super(429, 'rate_limited', message, undefined, { 'retry-after': String(retryAfterSeconds) });
  }
}

export class TenantRequiredError extends AppError {
  constructor() {
    super(400, 'tenant_required', 'The tenant-id header is required', [{ path: 'header.tenant-id', message: 'required' }]);
  }
}

/** 401: never says whether a key exists. */
export class UnauthorizedError extends AppError {
  constructor(message = 'A valid API key is required: authorization: Bearer <key>') {
    super(401, 'unauthorized', message, undefined, { 'www-authenticate': 'Bearer' });
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message: string) {
    super(415, 'unsupported_media_type', message);
  }
}

/** A release refused by its gates: 409 with each gate and its figure (members `gates` and `evaluation_id` of the problem). */
export class GatesFailedError extends AppError {
  constructor(
    message: string,
    readonly gates: ReleaseGate[],
    readonly evaluationId: string | null,
  ) {
    super(409, 'release_gates_failed', message);
  }
}

/** A channel webhook without the provider's valid signature (docs/channels.md). */
export class InvalidSignatureError extends AppError {
  constructor(message: string) {
    super(401, 'invalid_signature', message);
  }
}

/** The provider refused or did not answer a setup call (Telegram's setWebhook). */
export class ChannelSetupError extends AppError {
  constructor(message: string) {
    super(502, 'channel_setup_failed', message);
  }
}

/** 409: some review items were acted on meanwhile (or their messages erased); nothing was changed. */
export class ReviewClosedError extends AppError {
  constructor(ids: string[]) {
    super(
      409,
      'review_item_closed',
      `${ids.length} of the items are no longer open: nothing was changed`,
      ids.map((id) => ({ path: 'items', message: `${id} is not open` })),
    );
  }
}

/** 429: a tenant, key or process has as many event streams open as it may. */
export class TooManyStreamsError extends AppError {
  constructor(what: string, limit: number) {
    super(429, 'rate_limited', `Too many open event streams ${what} (at most ${limit}); close one first`, undefined, { 'retry-after': '5' });
  }
}

/** 409: tenant secrets need SECRETS_KEY, which the operator has not set. */
export class SecretsDisabledError extends AppError {
  constructor(what = 'Tenant secrets are off on this server') {
    super(409, 'secrets_not_configured', `${what}: the operator has to set SECRETS_KEY`);
  }
}

/** 401: a web chat visitor token that is missing, malformed, expired or another key's. */
export class VisitorTokenError extends AppError {
  constructor(message: string) {
    super(401, 'unauthorized', message);
  }
}

/** 422: a definition whose router would cost more to train than the tenant's budget allows. */
export class TrainingBudgetError extends AppError {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(422, 'training_budget_exceeded', message, [{ path: 'capabilities', message }], undefined, opts);
  }
}

/** 409: a PUT that was to make its version current found another version current than the one it was checked against. */
export class CurrentChangedError extends ConflictError {
  constructor() {
    super('invalid_transition', 'Another version was made current while this one was stored; try again');
  }
}
