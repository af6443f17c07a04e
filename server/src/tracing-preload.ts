// `node --import ./server/src/tracing-preload.ts …`: starts tracing (tracing.ts) before the
// application loads when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise does nothing at all. The
// ESM loader hook lets the instrumentations wrap modules the application imports.
import { register } from 'node:module';

if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const { startTracing } = await import('./tracing.js');
  const tracing = startTracing();
  // Spans still batched are sent before the process exits.
  process.once('beforeExit', () => void tracing.shutdown());
}
