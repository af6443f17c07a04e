// The one logger factory: JSON lines (pino) at the configured level, with credentials redacted.
import { pino, type Logger } from 'pino';

export function createLogger(opts: { level: string }): Logger {
  return pino({ level: opts.level, redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '***' } });
}
