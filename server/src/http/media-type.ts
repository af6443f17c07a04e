// Bodies are JSON; an agent definition (PUT /api/v1/agents/:slug) may also be YAML, and a
// knowledge file (PUT /api/v1/knowledge/sources/:name) is multipart/form-data. Anything else is
// refused before it is read.
import type { NextFunction, Request, Response } from 'express';
import { UnsupportedMediaTypeError } from '../errors.js';

export const JSON_TYPES = ['application/json', 'application/*+json'];
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
const AGENT_PATH = /^\/api\/v1\/agents\/[^/]+\/?$/;

/** Whether a request puts an agent definition (the one body that may also be YAML). */
export const isAgentPut = (req: Request) => req.method === 'PUT' && AGENT_PATH.test(req.path);

const UPLOAD_PATH = /^\/api\/v1\/knowledge\/sources\/[^/]+\/?$/;
/** Whether a request uploads a file (multipart/form-data, read by upload.ts after the key is checked). */
const isUpload = (req: Request) => req.method === 'PUT' && UPLOAD_PATH.test(req.path);

export function mediaType(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  const yaml = isAgentPut(req);
  if (isUpload(req)) {
    if (!req.is('multipart/form-data')) next(new UnsupportedMediaTypeError('The body must be multipart/form-data, with the document as its `file` part'));
    else next();
    return;
  }
  if (hasBody && !req.is(JSON_TYPES) && !(yaml && req.is(YAML_TYPES))) {
    next(new UnsupportedMediaTypeError(yaml ? 'The body must be application/json or application/yaml' : 'The body must be application/json'));
    return;
  }
  next();
}
