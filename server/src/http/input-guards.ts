// Refusals at the edge for input no handler should ever see: compressed bodies (nothing here
// asks for them, and a decompressor is one more parser to attack), JSON nested deeper than any
// request needs (deep nesting exhausts recursive validators), NUL characters (PostgreSQL
// text cannot hold them, so they would fail on one database and not the other), and `__proto__`
// keys (copied objects lose them silently).
import type { NextFunction, Request, Response } from 'express';
import { InputError } from '../errors.js';
import { parseYamlSource } from '../lib/yaml-source.js';
import { YAML_TYPES } from './media-type.js';

const MAX_JSON_DEPTH = 64;

/** Body encodings other than identity are refused before the body is read. */
export function refuseContentEncoding(req: Request, _res: Response, next: NextFunction): void {
  const enc = req.headers['content-encoding'];
  if (enc !== undefined && enc.trim().toLowerCase() !== 'identity') {
    next(Object.assign(new Error('Compressed request bodies are not accepted: send the body without content-encoding'), { type: 'encoding.unsupported' }));
    return;
  }
  next();
}

/**
 * A body-parser `verify` hook: counts nesting on the raw bytes (outside strings) and refuses
 * JSON deeper than `max`, before JSON.parse or any schema walks it.
 */
export function depthLimit(max = MAX_JSON_DEPTH) {
  return (_req: unknown, _res: unknown, buf: Buffer): void => {
    let depth = 0;
    let inString = false;
    for (let i = 0; i < buf.length; i++) {
      const c = buf[i];
      if (inString) {
        if (c === 0x5c)
          i++; // backslash: skip the escaped byte
        else if (c === 0x22) inString = false;
      } else if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) {
        if (++depth > max)
          throw new InputError(`The body is nested deeper than ${max} levels`, [{ path: '(root)', message: `at most ${max} levels of nesting` }]);
      } else if (c === 0x5d || c === 0x7d) depth--;
    }
  };
}

/**
 * Where a JSON body holds a NUL character (in a key or a string) or a `__proto__` key, as a
 * dotted path; null when it holds neither. JSON.parse keeps `__proto__` as an own key, but any
 * object spread or schema copy drops it or, worse, treats it as a prototype: it is refused by
 * name rather than silently lost.
 */
function findHostile(v: unknown, path: string, depth = 0): { path: string; nul: boolean } | null {
  if (typeof v === 'string') return v.includes('\u0000') ? { path, nul: true } : null;
  if (depth > MAX_JSON_DEPTH || v === null || typeof v !== 'object') return null;
  const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
  for (const [k, x] of entries) {
    const at = path ? `${path}.${k}` : k;
    if (k.includes('\u0000')) return { path: at, nul: true };
    if (k === '__proto__' && !Array.isArray(v)) return { path: at, nul: false };
    const found = findHostile(x, at, depth + 1);
    if (found) return found;
  }
  return null;
}

/** NUL in the path, the query or anywhere in a JSON body, or a `__proto__` key: 400, on every database alike. */
export function refuseHostileInput(req: Request, _res: Response, next: NextFunction): void {
  let url = req.originalUrl;
  try {
    url = decodeURIComponent(url);
  } catch {
    // A malformed escape is the router's and validator's to report.
  }
  const found = findHostile(req.body, '');
  if (url.includes('\u0000') || found?.nul) {
    next(new InputError('The request contains a NUL character', [{ path: '(request)', message: 'NUL characters (\\u0000) are not accepted' }]));
    return;
  }
  if (found) {
    next(new InputError('The body contains a "__proto__" key', [{ path: found.path, message: 'the key "__proto__" is not accepted: rename it' }]));
    return;
  }
  next();
}

function depthOf(v: unknown, max: number, depth = 0): number {
  if (depth > max || v === null || typeof v !== 'object') return depth;
  let deepest = depth;
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    deepest = Math.max(deepest, depthOf(x, max, depth + 1));
    if (deepest > max) break;
  }
  return deepest;
}

/**
 * An agent definition sent as YAML: parsed (aliases bounded), held to the same nesting limit as
 * JSON, and kept with its source so that problems can name the line and column.
 */
export function yamlBody(req: Request, res: Response, next: NextFunction): void {
  if (typeof req.body !== 'string' || !req.is(YAML_TYPES)) {
    next();
    return;
  }
  try {
    const source = parseYamlSource(req.body);
    if (depthOf(source.value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      throw new InputError(`The body is nested deeper than ${MAX_JSON_DEPTH} levels`, [
        { path: '(root)', message: `at most ${MAX_JSON_DEPTH} levels of nesting` },
      ]);
    }
    res.locals.source = source;
    req.body = source.value;
    next();
  } catch (err) {
    next(err);
  }
}
