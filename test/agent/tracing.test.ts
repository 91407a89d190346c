// A request's trace shows each branch's limiter wait and model call under the request's
// span: agent.run review → ADK's invocation/invoke_agent → call_llm → the limiter's spans.
// Exporter in memory: the test is about which spans exist and how they nest.
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../agent/tracing.ts';
import { WAIT_SPAN_NAME } from '../../instrumentation/telemetry.ts';
import type { Stack } from './stack.ts';

describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing | undefined;
  let stack: Stack;
  beforeAll(async () => {
    tracing = startTracing({ serviceName: 'quotascope-agent-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    // Only now load ADK (through the stack): its tracer binds at import time (tracing.ts).
    const { fastMock, startStack } = await import('./stack.ts');
    stack = await startStack(fastMock(60), { permits: 2 });
  });
  afterAll(async () => {
    await stack?.close();
    await tracing?.shutdown();
  });

  it('is off without an OTLP endpoint or processors', () => {
    const saved = { a: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, b: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT };
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    try {
      expect(startTracing({ serviceName: 'x' })).toBeUndefined();
    } finally {
      if (saved.a !== undefined) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved.a;
      if (saved.b !== undefined) process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved.b;
    }
  });

  it('each branch shows its wait and its model call inside the request trace', async () => {
    expect(tracing).toBeDefined();
    const { status } = await stack.run('review', { document: 'trace me' });
    expect(status).toBe(200);
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'agent.run review');
    expect(root).toBeDefined();
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (span: ReadableSpan): string[] => {
      const names: string[] = [];
      let parent = span.parentSpanContext?.spanId;
      while (parent && byId.has(parent)) {
        const p = byId.get(parent)!;
        names.push(p.name);
        parent = p.parentSpanContext?.spanId;
      }
      return names;
    };
    const inTrace = spans.filter((s) => s.spanContext().traceId === root!.spanContext().traceId);
    const modelCalls = inTrace.filter((s) => s.name === 'call_llm');
    expect(modelCalls).toHaveLength(5);
    for (const call of modelCalls) expect(ancestors(call)).toContain('agent.run review');
    // 2 permits for 4 reviewers: at least the 2 that queued show a wait span, inside their call_llm.
    const waits = inTrace.filter((s) => s.name === WAIT_SPAN_NAME);
    expect(waits.length).toBeGreaterThanOrEqual(2);
    for (const wait of waits) expect(ancestors(wait)).toContain('call_llm');
    expect(inTrace.some((s) => s.name === 'invoke_agent security')).toBe(true);
  });
});
