// OpenTelemetry spans and GenAI metrics, and trace-id exemplars on the limiter histograms.
import { trace } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { type OpenMetricsContentType, Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { RateLimitedLlm } from '../../instrumentation/index.ts';
import { CALL_SPAN_NAME, SPAN_ATTRIBUTES, WAIT_SPAN_NAME } from '../../instrumentation/telemetry.ts';
import { FakeLlm, fakeRequest as request, textResponse } from '../../instrumentation/testing.ts';
import { consume, delay, until } from './helpers.ts';

const spans = new InMemorySpanExporter();
const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
tracerProvider.register(); // global provider + AsyncLocalStorage context manager, as ADK's maybeSetOtelProviders does
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
const meterProvider = new MeterProvider({ readers: [reader] });

afterAll(async () => {
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
});

describe('OpenTelemetry', () => {
  it('a span per call, child of the active span, with the wait as a child span, and GenAI metrics', async () => {
    let activeInDelegate: string | undefined;
    const delegate = new FakeLlm(async function* () {
      activeInDelegate = trace.getActiveSpan()?.spanContext().spanId;
      await delay(20);
      yield {
        content: { role: 'model', parts: [{ text: 'ok' }] },
        usageMetadata: { promptTokenCount: 70, candidatesTokenCount: 30, totalTokenCount: 100 },
      };
    });
    const llm = new RateLimitedLlm({ delegate, name: 'otel', maxConcurrent: 1, estimatedTokens: 10, countedTokens: 'total', registry: new Registry(), meterProvider });
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('call_llm', async (parent) => {
      const first = consume(llm.generateContentAsync(request('reviewer_1')));
      const second = consume(llm.generateContentAsync(request('reviewer_2'))); // waits for the permit
      await Promise.all([first, second]);
      parent.end();
    });
    const finished = spans.getFinishedSpans();
    const parent = finished.find((s) => s.name === 'call_llm');
    const calls = finished.filter((s) => s.name === CALL_SPAN_NAME);
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
    const second = calls.find((s) => s.attributes[SPAN_ATTRIBUTES.agent] === 'reviewer_2');
    expect(second?.attributes).toMatchObject({
      [SPAN_ATTRIBUTES.limiter]: 'otel',
      [SPAN_ATTRIBUTES.reservedTokens]: 10,
      [SPAN_ATTRIBUTES.actualTokens]: 100,
      [SPAN_ATTRIBUTES.attempts]: 1,
      [SPAN_ATTRIBUTES.outcome]: 'ok',
      'gen_ai.request.model': 'fake-model',
    });
    const wait = finished.find((s) => s.name === WAIT_SPAN_NAME);
    expect(wait?.parentSpanContext?.spanId).toBe(second?.spanContext().spanId);
    expect(calls.map((s) => s.spanContext().spanId)).toContain(activeInDelegate);

    await reader.forceFlush();
    const metrics = metricExporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const usage = metrics.filter((m) => m.descriptor.name === 'gen_ai.client.token.usage').at(-1);
    const byType = Object.fromEntries(usage?.dataPoints.map((p) => [p.attributes['gen_ai.token.type'], p.value]) ?? []);
    expect((byType.input as { sum: number }).sum).toBe(140);
    expect((byType.output as { sum: number }).sum).toBe(60);
    expect(usage?.dataPoints[0].attributes).toMatchObject({
      'gen_ai.operation.name': 'generate_content',
      'gen_ai.provider.name': 'gcp.gemini',
      'gen_ai.request.model': 'fake-model',
    });
    const duration = metrics.filter((m) => m.descriptor.name === 'gen_ai.client.operation.duration').at(-1);
    expect(duration?.descriptor.unit).toBe('s');
    expect((duration?.dataPoints[0]?.value as { count?: number } | undefined)?.count).toBe(2);
  });

  it('failed calls carry error.type on the duration metric', async () => {
    const delegate = new FakeLlm(async function* () {
      yield* [];
      throw Object.assign(new Error('bad gateway'), { status: 502 });
    });
    const llm = new RateLimitedLlm({ delegate, name: 'otel-err', maxConcurrent: 1, estimatedTokens: 1, registry: new Registry(), meterProvider });
    await consume(llm.generateContentAsync(request('a')));
    await reader.forceFlush();
    const metrics = metricExporter.getMetrics().flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics));
    const duration = metrics.filter((m) => m.descriptor.name === 'gen_ai.client.operation.duration').at(-1);
    expect(duration?.dataPoints.some((p) => p.attributes['error.type'] === '502')).toBe(true);
  });

  it('histogram observations carry the trace id as exemplar on an OpenMetrics registry', async () => {
    const registry = new Registry<OpenMetricsContentType>();
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const delegate = new FakeLlm(async function* () {
      yield textResponse('ok', 5);
    });
    const llm = new RateLimitedLlm({ delegate, name: 'ex', maxConcurrent: 1, estimatedTokens: 1, registry });
    let traceId = '';
    await trace.getTracer('test').startActiveSpan('request', async (span) => {
      traceId = span.spanContext().traceId;
      await consume(llm.generateContentAsync(request('a')));
      span.end();
    });
    await until(() => llm.snapshot().permitsInUse === 0);
    const text = await registry.metrics();
    expect(text).toMatch(new RegExp(`llm_limiter_call_duration_seconds_bucket\\{[^}]*\\} 1 # \\{trace_id="${traceId}",span_id="[0-9a-f]{16}"\\}`));
    expect(text).toMatch(new RegExp(`llm_limiter_acquire_duration_seconds_bucket\\{[^}]*outcome="acquired"[^}]*\\} 1 # \\{trace_id="${traceId}"`));
  });
});
