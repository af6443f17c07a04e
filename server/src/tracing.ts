// OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md): the
// Node SDK with the HTTP, Express, pg and undici instrumentations, exporting over OTLP/HTTP,
// plus the service's own spans (switchboard.converse, .routing, .action, .llm; see
// lib/tracer.ts). Started by tracing-preload.ts before the application's modules load, so that
// the instrumentations can wrap them; without the variable nothing here is even loaded.
import { instrumentations } from './tracing-instrumentations.js';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** Starts tracing; `exporter` replaces the OTLP exporter (which reads the OTEL_EXPORTER_OTLP_* variables). */
export function startTracing(opts: { exporter?: SpanExporter } = {}): { shutdown(): Promise<void> } {
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME ?? 'switchboard' }),
    spanProcessors: [new BatchSpanProcessor(opts.exporter ?? new OTLPTraceExporter())],
    instrumentations: instrumentations(),
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
