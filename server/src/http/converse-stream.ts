// A converse call answered as server-sent events (`accept: text/event-stream`): `delta` events
// with the reply as it is written, then `done` with the whole ConverseResponse, or `error` with
// the problem document when the call fails. The headers go out at once, so a failure after the
// request was accepted (unknown agent, closed conversation, limits) is an `error` event too.
import { PassThrough } from 'node:stream';
import type { Request, Response } from 'express';
import type { ConverseResponse } from '@switchboard/contract';
import { streamedProblem } from './problem.js';

/**
 * Whether the caller prefers the stream: Express's negotiation of its `accept` header between
 * JSON (listed first: no header, or `*\/*`, gets JSON) and `text/event-stream`, quality values
 * included (`text/event-stream;q=0` refuses the stream).
 */
export function wantsStream(req: Request): boolean {
  return req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream';
}

/** Sends the headers of a server-sent event stream at once (no proxy buffering, no transformation). */
export function beginEventStream(res: Response): void {
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache, no-transform');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
}

export function streamConverse(
  res: Response,
  run: (onDelta: (text: string) => void) => Promise<ConverseResponse>,
  log: { error(obj: object, msg: string): void },
): PassThrough {
  const out = new PassThrough();
  beginEventStream(res);
  let deltas = 0;
  const send = (event: string, data: unknown) => {
    if (!out.writableEnded) out.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const delta = (text: string) => {
    deltas++;
    send('delta', { text });
  };
  run(delta).then(
    (response) => {
      // A reply that was not written here (an idempotent replay) still comes as one delta first.
      if (deltas === 0 && response.response.message) delta(response.response.message);
      send('done', response);
      out.end();
    },
    (err: unknown) => {
      send('error', streamedProblem(err, log, res));
      out.end();
    },
  );
  return out;
}
