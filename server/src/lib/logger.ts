// The one logger factory: pino at the configured level, with credentials redacted and the
// active trace's ids on each line (when tracing is on); JSON lines, or pino-pretty's readable
// lines with LOG_FORMAT=pretty (written synchronously, so lines keep their order with the
// console's).
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { traceIds } from './tracer.js';

export function createLogger(opts: { level: string; format?: 'json' | 'pretty' }): Logger {
  const options = {
    level: opts.level,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '***' },
    mixin: traceIds,
  };
  if (opts.format === 'pretty') return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  return pino(options);
}
