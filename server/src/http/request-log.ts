// One JSON log line per request (below LOG_LEVEL=info, only for 4xx and 5xx answers): method,
// route pattern (never the URL: paths and queries carry user ids, which erasure must be able to
// remove), tenant, status and time, under the request id;
// and the request's time in the switchboard_http_request_duration_seconds histogram.
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { Metrics } from '../service/metrics.js';

export function requestLog(opts: { logger: Logger }) {
  if (!opts.logger.isLevelEnabled('info')) return quietRequestLog(opts.logger);
  return pinoHttp({
    logger: opts.logger,
    genReqId: (req) => (req as unknown as { id: string }).id,
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    // Called when the request starts (no route yet) and when it is logged: only the latter names one.
    customProps: (_req, res) => {
      const route = (res as Partial<Response>).locals?.route;
      return route ? { route } : {};
    },
    serializers: {
      req: (req: { id: unknown; method: string; headers?: Record<string, unknown> }) => ({
        id: req.id,
        method: req.method,
        tenant: req.headers?.['tenant-id'],
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}

/**
 * The request log below `info` (LOG_LEVEL=warn or error), where only refused and failed requests
 * are logged: pino-http would still make a child logger and serialise the request for every one,
 * about a tenth of the CPU of a request to /healthz. The same fields, for the few it logs.
 */
function quietRequestLog(logger: Logger) {
  return (req: Request, res: Response, next: () => void): void => {
    const start = performance.now();
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : null;
      if (!level || !logger.isLevelEnabled(level)) return;
      const route = res.locals.route;
      logger[level](
        {
          req: { id: (req as Request & { id?: string }).id, method: req.method, tenant: req.headers['tenant-id'] },
          ...(route ? { route } : {}),
          res: { statusCode: res.statusCode },
          responseTime: Math.round(performance.now() - start),
        },
        'request completed',
      );
    });
    next();
  };
}

/** A ts-rest global middleware that records the matched route's pattern for the log line. */
export function recordRoute(req: Request, res: Response, next: () => void): void {
  res.locals.route = (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path;
  next();
}

/**
 * Times each request into the HTTP histogram when its connection is done with it (an event stream
 * counts until it closes), labelled by the contract's route pattern; paths outside the contract
 * share the label "other", so that no path a caller makes up becomes a series.
 */
export function requestMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: () => void): void => {
    const end = metrics.httpDuration.startTimer();
    res.once('close', () => {
      const route = res.locals.route ?? 'other';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
