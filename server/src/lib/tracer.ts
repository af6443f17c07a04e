// The service's own spans, through the OpenTelemetry API: without a registered SDK (tracing
// off) every call here is a no-op on a non-recording span.
import { context, createContextKey, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

const tracer = trace.getTracer('switchboard');

/** Runs `fn` in a span named `name` (the active one while it runs), ended when `fn` settles; a throw marks it failed. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Runs a synchronous `fn` in a span. */
export function inSpanSync<T>(name: string, attributes: Attributes, fn: () => T): T {
  const span = tracer.startSpan(name, { attributes });
  try {
    return fn();
  } finally {
    span.end();
  }
}

/** The active span's trace and span ids, for log lines; empty when no span records. */
export function traceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

const REDACTED_URL = createContextKey('switchboard.redacted_url');

/**
 * Runs `fn` with the URL its outgoing HTTP calls are to be traced as: an action's URL with its
 * secrets masked, as the audit log shows it (tracing.ts reads it in the undici span's hook).
 */
export function withRedactedUrl<T>(url: string, fn: () => T): T {
  return context.with(context.active().setValue(REDACTED_URL, url), fn);
}

/** The URL set by withRedactedUrl for the calls now starting, if any. */
export function redactedUrl(): string | undefined {
  return context.active().getValue(REDACTED_URL) as string | undefined;
}
