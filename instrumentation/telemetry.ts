// OpenTelemetry for the wrapper, through @opentelemetry/api only (a no-op unless the
// application registered providers):
//  - GenAI semantic-convention metrics gen_ai.client.token.usage and
//    gen_ai.client.operation.duration, so users on an OTel pipeline get the standard names;
//  - a span per model call (child of the active span, e.g. ADK's call_llm) with the
//    wait for admission as its own child span.
import {
  type Attributes,
  type Context,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';

const SCOPE = 'quotascope.instrumentation';

// Bucket boundaries recommended by the GenAI semantic conventions.
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** Span attribute names the wrapper sets on its call span. */
export const SPAN_ATTRIBUTES = {
  limiter: 'llm_limiter.name',
  agent: 'gen_ai.agent.name',
  reservedTokens: 'llm_limiter.tokens.reserved',
  actualTokens: 'llm_limiter.tokens.actual',
  attempts: 'llm_limiter.attempts',
  outcome: 'llm_limiter.outcome',
  waitMs: 'llm_limiter.wait_ms',
} as const;

export const CALL_SPAN_NAME = 'llm_limiter.call';
export const WAIT_SPAN_NAME = 'llm_limiter.wait';

export interface TelemetryOptions {
  /** gen_ai.provider.name (default 'gcp.gemini'). */
  readonly providerName?: string;
  /** gen_ai.operation.name (default 'generate_content'). */
  readonly operationName?: string;
  /** Defaults to the global providers at construction time. */
  readonly meterProvider?: MeterProvider;
  readonly tracerProvider?: TracerProvider;
}

export interface CallUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

export class GenAiTelemetry {
  readonly tracer: Tracer;
  readonly #tokenUsage: Histogram;
  readonly #duration: Histogram;
  readonly #baseAttributes: Attributes;

  constructor(options: TelemetryOptions = {}) {
    const meter = (options.meterProvider ?? metrics).getMeter(SCOPE);
    this.tracer = (options.tracerProvider ?? trace).getTracer(SCOPE);
    this.#tokenUsage = meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Number of input and output tokens used.',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
    this.#duration = meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'GenAI operation duration.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.#baseAttributes = {
      'gen_ai.operation.name': options.operationName ?? 'generate_content',
      'gen_ai.provider.name': options.providerName ?? 'gcp.gemini',
    };
  }

  startCallSpan(parent: Context, limiter: string, agent: string, model: string): Span {
    return this.tracer.startSpan(CALL_SPAN_NAME, { attributes: this.#callSpanAttributes(limiter, agent, model) }, parent);
  }

  // Start attributes are built once per (limiter, model, agent) and frozen (tracers copy
  // them); nested maps, so a lookup allocates no key.
  readonly #spanAttributes = new Map<string, Map<string, Map<string, Attributes>>>();

  #callSpanAttributes(limiter: string, agent: string, model: string): Attributes {
    let byModel = this.#spanAttributes.get(limiter);
    if (!byModel) {
      byModel = new Map();
      this.#spanAttributes.set(limiter, byModel);
    }
    let byAgent = byModel.get(model);
    if (!byAgent) {
      byAgent = new Map();
      byModel.set(model, byAgent);
    }
    let attributes = byAgent.get(agent);
    if (!attributes) {
      attributes = Object.freeze({
        ...this.#baseAttributes,
        'gen_ai.request.model': model,
        [SPAN_ATTRIBUTES.limiter]: limiter,
        [SPAN_ATTRIBUTES.agent]: agent,
      });
      byAgent.set(agent, attributes);
    }
    return attributes;
  }

  startWaitSpan(callContext: Context): Span {
    return this.tracer.startSpan(WAIT_SPAN_NAME, {}, callContext);
  }

  /** Record the standard GenAI metrics for one finished call. */
  recordCall(model: string, durationSeconds: number, usage: CallUsage | undefined, errorType: string | undefined): void {
    const attributes = this.#attributesFor(model);
    if (usage?.inputTokens !== undefined) this.#tokenUsage.record(usage.inputTokens, attributes.input);
    if (usage?.outputTokens !== undefined) this.#tokenUsage.record(usage.outputTokens, attributes.output);
    this.#duration.record(durationSeconds, errorType ? { ...attributes.call, 'error.type': errorType } : attributes.call);
  }

  // Attribute sets are built once per model: recording happens on every call.
  readonly #byModel = new Map<string, { call: Attributes; input: Attributes; output: Attributes }>();

  #attributesFor(model: string) {
    let sets = this.#byModel.get(model);
    if (!sets) {
      const call = { ...this.#baseAttributes, 'gen_ai.request.model': model };
      sets = { call, input: { ...call, 'gen_ai.token.type': 'input' }, output: { ...call, 'gen_ai.token.type': 'output' } };
      this.#byModel.set(model, sets);
    }
    return sets;
  }
}

/** End a span with the call's outcome. */
export function endSpan(span: Span, attributes: Attributes, error: unknown): void {
  span.setAttributes(attributes);
  if (error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorType(error) });
    if (error instanceof Error) span.recordException(error);
  }
  span.end();
}

/** error.type for an error: its HTTP status when it has one, else its class name. */
export function errorType(error: unknown): string {
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') return String(status);
  if (error instanceof Error) return error.name || 'Error';
  return '_OTHER';
}
