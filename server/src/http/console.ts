// The web console at /console: the files `npm run build:console` writes to console/dist (run by
// `npm ci`), served by this process. The console is a page of its own over the public API, with
// the user's own credentials: it reads nothing the API would not give them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import compression from 'compression';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { NotFoundError } from '../errors.js';

const DEFAULT_DIR = fileURLToPath(new URL('../../../console/dist', import.meta.url));

// Everything from this origin, nothing inline, no framing: a definition's text shown in the
// console can never run as script, and no other site can frame it to steal a click.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(res: Response): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
}

/** The console's files, and its page for every path under /console (the page routes itself). */
export function consoleRouter(dir = DEFAULT_DIR): Router {
  const router = express.Router();
  const index = join(dir, 'index.html');
  // The script is some 440 KB: compressed (gzip or brotli, as the browser accepts) it is a third of that.
  router.use(compression());
  router.use(
    express.static(dir, {
      index: false,
      fallthrough: true,
      setHeaders: (res, path) => {
        securityHeaders(res);
        // Vite names built assets by their content hash: they never change under one name.
        res.setHeader('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
  router.get(['/', '/*path'], (req: Request, res: Response, next: NextFunction) => {
    if (req.path.startsWith('/assets/')) {
      next(new NotFoundError('not_found', `No console file ${req.path}`));
      return;
    }
    if (!existsSync(index)) {
      next(new NotFoundError('not_found', 'The console is not built: run `npm run build:console` (npm ci runs it)'));
      return;
    }
    securityHeaders(res);
    res.setHeader('cache-control', 'no-cache');
    res.sendFile(index);
  });
  return router;
}
