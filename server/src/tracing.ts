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
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** Health and metrics scrapes are not traced. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/** Starts tracing; the OTLP exporter reads the OTEL_EXPORTER_OTLP_* variables. */
export function startTracing(): { shutdown(): Promise<void> } {
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME ?? 'switchboard' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?')[0]) }),
      new ExpressInstrumentation(),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
      new UndiciInstrumentation(),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
