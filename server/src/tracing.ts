// OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md): the
// Node SDK with the HTTP, Express, pg and undici instrumentations, exporting over OTLP/HTTP,
// plus the service's own spans (switchboard.converse, .routing, .action, .llm; see
// lib/tracer.ts). Started by tracing-preload.ts before the application's modules load, so that
// the instrumentations can wrap them; without the variable nothing here is even loaded.
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_URL_FULL, ATTR_URL_PATH, ATTR_URL_QUERY } from '@opentelemetry/semantic-conventions';
import type { Span } from '@opentelemetry/api';
import { redactedUrl } from './lib/tracer.js';

/** Health and metrics scrapes are not traced. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * What spans must not carry, as the audit log does not: user ids (a path segment of the erasure
 * route, a query filter) and secrets in action URLs (the undici span shows the masked URL that
 * http-action.ts sets; without one, only the origin).
 */
const USER_IN_PATH = /^(\/api\/v1\/users\/)[^/?]+/;
const REDACTED_QUERY = ['user_id', 'cursor'];

function redactIncoming(span: Span, req: unknown): void {
  const url = (req as { url?: unknown }).url;
  if (typeof url !== 'string' || !('socket' in (req as object)) || !USER_IN_PATH.test(url)) return;
  span.setAttribute(ATTR_URL_PATH, url.split('?')[0].replace(USER_IN_PATH, '$1REDACTED'));
}

function redactOutgoing(span: Span, req: { origin?: string }): void {
  const masked = redactedUrl();
  let shown: URL | null = null;
  try {
    shown = new URL(masked ?? req.origin ?? '');
  } catch {
    shown = null;
  }
  span.setAttribute(ATTR_URL_FULL, shown ? shown.toString() : 'REDACTED');
  span.setAttribute(ATTR_URL_PATH, shown ? shown.pathname : 'REDACTED');
  span.setAttribute(ATTR_URL_QUERY, shown ? shown.search : '');
}

/** Starts tracing; the OTLP exporter reads the OTEL_EXPORTER_OTLP_* variables. */
export function startTracing(): { shutdown(): Promise<void> } {
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME ?? 'switchboard' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?')[0]),
        redactedQueryParamsServer: REDACTED_QUERY,
        requestHook: redactIncoming,
      }),
      new ExpressInstrumentation(),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
      new UndiciInstrumentation({ requestHook: redactOutgoing }),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
