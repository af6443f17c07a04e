// The one place where errors become RFC 9457 problem details (application/problem+json).
import type { ErrorRequestHandler, Request, Response } from 'express';
import { RequestValidationError } from '@ts-rest/express';
import type { ZodError } from 'zod';
import type { Problem, ProblemCode } from '@switchboard/contract';
import { AppError, type FieldProblem } from '../errors.js';
import { withPositions, type SourceDocument } from '../lib/yaml-source.js';
import { mapDbError } from '../store/db.js';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function sendProblem(
  req: Request,
  res: Response,
  status: number,
  code: ProblemCode,
  detail: string,
  errors?: FieldProblem[],
  headers?: Record<string, string>,
): void {
  // Problems in a YAML body also say where they are in it.
  const source = res.locals?.source as SourceDocument | undefined;
  if (errors && source) errors = withPositions(errors, source);
  const body: Problem = {
    type: `https://switchboard.dev/problems/${code.replace(/_/g, '-')}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    request_id: String(res.getHeader('x-request-id') ?? ''),
    ...(errors?.length ? { errors } : {}),
  };
  for (const [k, v] of Object.entries(headers ?? {})) res.setHeader(k, v);
  res.status(status).type('application/problem+json').send(JSON.stringify(body));
}

/** `['capabilities', 1, 'phases', 2, 'next']` → `capabilities[1].phases[2].next`. */
export function jsonPath(path: (string | number)[], prefix = ''): string {
  let out = prefix;
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${p}` : p;
  }
  return out || '(root)';
}

function zodProblems(err: ZodError | null, prefix: string): FieldProblem[] {
  if (!err) return [];
  return err.issues.map((i) => ({ path: jsonPath(i.path, prefix), message: i.message }));
}

export function validationProblems(err: RequestValidationError): FieldProblem[] {
  return [
    ...zodProblems(err.pathParams, 'path'),
    ...zodProblems(err.headers, 'header'),
    ...zodProblems(err.query, 'query'),
    ...zodProblems(err.body, ''),
  ];
}

/** Errors of body-parser, by its `type` field. */
function bodyParserProblem(err: any): [number, ProblemCode, string] | null {
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
      return null;
  }
}

export function errorHandler(log: { error(obj: object, msg: string): void }): ErrorRequestHandler {
  return (rawErr, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (rawErr instanceof RequestValidationError) {
      return sendProblem(req, res, 400, 'validation_error', 'The request is not valid', validationProblems(rawErr));
    }
    // A body-parser verify hook's own error (input-guards.ts) keeps its status and message.
    if (rawErr?.type === 'entity.verify.failed' && rawErr instanceof AppError) {
      return sendProblem(req, res, rawErr.status, rawErr.code, rawErr.message, rawErr.errors);
    }
    const bp = bodyParserProblem(rawErr);
    if (bp) return sendProblem(req, res, bp[0], bp[1], bp[2]);
    const err = mapDbError(rawErr);
    if (err instanceof AppError) {
      if (err.status >= 500) log.error({ err: rawErr, request_id: res.getHeader('x-request-id') }, 'request failed');
      return sendProblem(req, res, err.status, err.code, err.message, err.errors, err.headers);
    }
    log.error({ err: rawErr, request_id: res.getHeader('x-request-id') }, 'unexpected error');
    return sendProblem(req, res, 500, 'internal_error', 'Something went wrong on our side; the request id identifies it in our logs');
  };
}
