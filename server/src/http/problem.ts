// The one place where errors become RFC 9457 problem details (application/problem+json).
import type { ErrorRequestHandler, Response } from 'express';
import { RequestValidationError } from '@ts-rest/express';
import type { ZodError } from 'zod';
import type { Problem, ProblemCode } from '@switchboard/contract';
import { AppError, GatesFailedError, type FieldProblem } from '../errors.js';
import { jsonPath } from '../lib/json-path.js';
import { withPositions } from '../lib/yaml-source.js';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  502: 'Bad Gateway',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

interface ProblemInput {
  status: number;
  code: ProblemCode;
  detail: string;
  errors?: FieldProblem[];
  headers?: Record<string, string>;
  /** Members of a problem of its own type (`release_gates_failed`: the gates and their evaluation). */
  extensions?: Pick<Problem, 'gates' | 'evaluation_id'>;
}

/** A problem's RFC 9457 document. */
function problemBody(p: ProblemInput, res: Response): Problem {
  // Problems in a YAML body also say where they are in it.
  const source = res.locals.source;
  const errors = p.errors && source ? withPositions(p.errors, source) : p.errors;
  return {
    type: `https://switchboard.dev/problems/${p.code.replace(/_/g, '-')}`,
    title: TITLES[p.status] ?? 'Error',
    status: p.status,
    detail: p.detail,
    code: p.code,
    request_id: String(res.getHeader('x-request-id') ?? ''),
    ...(errors?.length ? { errors } : {}),
    ...p.extensions,
  };
}

/** Writes a problem document. Everything else throws an AppError, which errorHandler turns into one. */
function sendProblem(res: Response, p: ProblemInput): void {
  const body = problemBody(p, res);
  for (const [k, v] of Object.entries(p.headers ?? {})) res.setHeader(k, v);
  res.status(p.status).type('application/problem+json').send(JSON.stringify(body));
}

function zodProblems(err: ZodError | null, prefix: string): FieldProblem[] {
  if (!err) return [];
  return err.issues.map((i) => ({ path: jsonPath(i.path, prefix), message: i.message }));
}

/** A request's problems, each with its path; `body: false` leaves the body's out. */
export function validationProblems(err: RequestValidationError, opts: { body?: boolean } = {}): FieldProblem[] {
  return [
    ...zodProblems(err.pathParams, 'path'),
    ...zodProblems(err.headers, 'header'),
    ...zodProblems(err.query, 'query'),
    ...(opts.body === false ? [] : zodProblems(err.body, '')),
  ];
}

/** Errors of body-parser, by its `type` field. */
function bodyParserProblem(err: { type?: string; limit?: number; status?: number } | null | undefined): [number, ProblemCode, string] | null {
  switch (err?.type) {
    case 'entity.parse.failed':
      return [400, 'validation_error', 'The body is not valid JSON'];
    case 'entity.too.large':
      return [413, 'payload_too_large', `The body is larger than the limit of ${err.limit} bytes`];
    case 'encoding.unsupported':
      return [415, 'unsupported_media_type', 'Compressed request bodies are not accepted: send the body without content-encoding'];
    case 'charset.unsupported':
      return [415, 'unsupported_media_type', 'The body must be UTF-8 JSON'];
    case 'request.aborted':
    case 'stream.not.readable':
      return [400, 'validation_error', 'The body could not be read'];
    default:
      // Any other refusal of body-parser's (its errors carry a type and a 4xx status) is the body's fault.
      return typeof err?.type === 'string' && typeof err.status === 'number' && err.status >= 400 && err.status < 500
        ? [400, 'validation_error', 'The body could not be read']
        : null;
  }
}

/** How an error reads as a problem: AppErrors as they say, body-parser's by type, the rest 500 (logged). */
function problemFor(rawErr: unknown, log: { error(obj: object, msg: string): void }, requestId: unknown): ProblemInput {
  if (rawErr instanceof RequestValidationError) {
    return { status: 400, code: 'validation_error', detail: 'The request is not valid', errors: validationProblems(rawErr) };
  }
  // A body-parser verify hook's own error (input-guards.ts) keeps its status and message.
  const bp = rawErr instanceof AppError ? null : bodyParserProblem(rawErr as Parameters<typeof bodyParserProblem>[0]);
  if (bp) return { status: bp[0], code: bp[1], detail: bp[2] };
  const err = rawErr;
  if (err instanceof AppError) {
    if (err.status >= 500) log.error({ err: rawErr, request_id: requestId }, 'request failed');
    const extensions = err instanceof GatesFailedError ? { gates: err.gates, ...(err.evaluationId ? { evaluation_id: err.evaluationId } : {}) } : undefined;
    return { status: err.status, code: err.code, detail: err.message, errors: err.errors, headers: err.headers, extensions };
  }
  log.error({ err: rawErr, request_id: requestId }, 'unexpected error');
  return { status: 500, code: 'internal_error', detail: 'Something went wrong on our side; the request id identifies it in our logs' };
}

/** The one place an error becomes a response (or, on a stream already under way, an `error` event's problem). */
export function errorHandler(log: { error(obj: object, msg: string): void }): ErrorRequestHandler {
  return (rawErr: unknown, _req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, problemFor(rawErr, log, res.getHeader('x-request-id')));
  };
}

/** The problem document of an error for a response whose headers are sent (a streamed reply's `error` event). */
export function streamedProblem(rawErr: unknown, log: { error(obj: object, msg: string): void }, res: Response): Problem {
  return problemBody(problemFor(rawErr, log, res.getHeader('x-request-id')), res);
}
