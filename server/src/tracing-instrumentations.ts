// The instrumentations tracing.ts turns on: incoming and outgoing HTTP, Express's routing,
// PostgreSQL queries (pg) and the HTTP actions' client (undici). Health and metrics scrapes are
// not traced.
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';

const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

export function instrumentations() {
  return [
    new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?')[0]) }),
    new ExpressInstrumentation(),
    new PgInstrumentation({ enhancedDatabaseReporting: false }),
    new UndiciInstrumentation(),
  ];
}
