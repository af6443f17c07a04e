// The web chat widget over HTTP: CORS for its routes (/widget/v1), answered from the publishable
// key the URL names, and its script (/widget/v1.js), built by `npm run build:widget`.
//
// CORS: a response carries Access-Control-Allow-Origin only for an origin the key allows, so no
// other page can read a conversation. The one exception is a refusal of the page's own origin
// (403 on GET /widget/v1/agents/:slug, a request without preflight): the page may read that
// refusal, which says nothing but that its origin is not allowed, so that the widget can tell the
// visitor why it cannot start instead of failing like a network error. The server checks the
// origin itself as well (WidgetService.admit): CORS only decides what a browser lets a page read.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import compression from 'compression';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { NotFoundError } from '../errors.js';
import type { WidgetService } from '../service/widget.js';
import { clientAddress } from './origin.js';

const KEY = /^pk_[0-9a-f]{32}$/;
const ALLOWED_HEADERS = 'content-type, accept, x-visitor-token, x-user-id, x-user-hash, last-event-id, x-request-id';

/** CORS for the widget's routes: the key in `?key=` decides which origin may read the answer. */
export function widgetCors(widget: Pick<WidgetService, 'key'>) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    res.vary('Origin');
    if (!origin) {
      next();
      return;
    }
    try {
      const presented = typeof req.query.key === 'string' && KEY.test(req.query.key) ? req.query.key : null;
      const key = presented ? await widget.key(presented, clientAddress(req)) : null;
      if (presented) res.locals.widgetKey = { presented, key };
      const allowed = !!key && key.origins.includes(origin.toLowerCase());
      if (allowed) {
        res.setHeader('access-control-allow-origin', origin);
        res.setHeader('access-control-expose-headers', 'retry-after, x-request-id');
      }
      if (req.method === 'OPTIONS') {
        if (allowed) {
          res.setHeader('access-control-allow-methods', 'GET, POST');
          res.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
          res.setHeader('access-control-max-age', '600');
        }
        // A preflight of another origin gets no grant: the browser sends nothing after it.
        res.status(allowed ? 204 : 403).end();
        return;
      }
      // The settings request comes first and without preflight: a refused page may read why.
      if (!allowed && req.method === 'GET' && /^\/agents\/[^/]+\/?$/.test(req.path)) {
        res.setHeader('access-control-allow-origin', origin);
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}

const DEFAULT_FILE = fileURLToPath(new URL('../../../widget/dist/v1.js', import.meta.url));

/** The built widget script, its Subresource Integrity hash and its version (a digest prefix); null until it is built. */
function widgetScript(file = DEFAULT_FILE): { body: Buffer; integrity: string; version: string } | null {
  if (!existsSync(file)) return null;
  const body = readFileSync(file);
  return {
    body,
    integrity: `sha384-${createHash('sha384').update(body).digest('base64')}`,
    version: createHash('sha256').update(body).digest('hex').slice(0, 16),
  };
}

/**
 * GET /widget/v1.js: the script under one name per major version. It changes with a release, so
 * it is cached for an hour and revalidated by its ETag; its bytes at one release are also named
 * `/widget/v1.js?v=<version>` (the ETag's value), cached for a year as immutable. The headers
 * x-widget-version and x-widget-integrity (the SRI hash) say what to pin (docs/widget.md).
 */
export function widgetScriptRouter(file = DEFAULT_FILE): Router {
  const router = express.Router();
  router.use(compression());
  let script = widgetScript(file);
  router.get('/v1.js', (req: Request, res: Response, next: NextFunction) => {
    script ??= widgetScript(file);
    if (!script) {
      next(new NotFoundError('not_found', 'The widget is not built: run `npm run build:widget` (npm ci runs it)'));
      return;
    }
    const etag = `"${script.version}"`;
    const pinned = req.query.v === script.version;
    res.setHeader('content-type', 'text/javascript; charset=utf-8');
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('cross-origin-resource-policy', 'cross-origin');
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('etag', etag);
    res.setHeader('x-widget-integrity', script.integrity);
    res.setHeader('x-widget-version', script.version);
    res.setHeader('cache-control', pinned ? 'public, max-age=31536000, immutable' : 'public, max-age=3600, must-revalidate');
    if (req.headers['if-none-match'] === etag) {
      res.status(304).end();
      return;
    }
    res.send(script.body);
  });
  return router;
}
