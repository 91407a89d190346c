// OpenTelemetry tracing for the agent service. ADK already creates spans on the global
// tracer (invocation → invoke_agent → call_llm) and the wrapper adds its wait
// span under call_llm, so registering a provider is enough for a request's trace to show
// each branch's wait and model call. Off unless an OTLP endpoint is configured.
//
// ORDER MATTERS: start tracing before anything imports @google/adk. ADK 2.0 resolves its
// own nested copy of @opentelemetry/api and takes its tracer at import time; a provider
// registered later (through the top-level API copy) never reaches that tracer, and ADK's
// spans (invocation, invoke_agent, call_llm) silently stay no-ops. This module imports no
// ADK code for that reason.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface Tracing {
  shutdown(): Promise<void>;
}

export function otlpEndpointConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the OTel SDK when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (OTLP over HTTP, the
 * exporter reads the endpoint and headers from the standard env variables), or with the
 * given span processors (tests, embedding). Returns undefined when tracing stays off.
 */
export function startTracing(options: { serviceName: string; spanProcessors?: SpanProcessor[] }): Tracing | undefined {
  const processors = [...(options.spanProcessors ?? [])];
  if (otlpEndpointConfigured()) processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  if (processors.length === 0) return undefined;
  // No auto-instrumentations: the spans that matter come from ADK, the wrapper and the
  // service's request span. Metrics stay on Prometheus (/metrics), not OTLP.
  const sdk = new NodeSDK({ serviceName: options.serviceName, spanProcessors: processors, instrumentations: [] });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
