// What watches a model call: the limiter's Prometheus metrics, the OTel span and GenAI
// metrics, the adaptive concurrency limit, the token estimator and the user's onCallEnd.
// The call path reports to one CallWatch per call; at the end it hands over ONE CallReport
// (with the details the observers need) and every observer reads that same event.
import type { LlmRequest } from '@google/adk';
import { type Context, context, type Span, trace } from '@opentelemetry/api';
import type { Usage } from './counted-tokens.ts';
import type { TimeoutReason } from './errors.ts';

export type { Usage } from './counted-tokens.ts';
import type { TokenEstimator } from './estimator.ts';
import type { AdaptiveLimit } from './limits/adaptive-limit.ts';
import type { CALL_OUTCOMES } from './metrics/definitions.ts';
import type { CounterTally, LimiterMetrics } from './metrics/limiter-metrics.ts';
import type { FairSemaphore } from './semaphore.ts';
import { endSpan, errorType, type GenAiTelemetry, SPAN_ATTRIBUTES } from './telemetry.ts';

export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** One finished call, reported exactly once, synchronously in the call's async context. */
export interface CallReport {
  readonly limiter: string;
  readonly agent: string;
  readonly outcome: CallOutcome;
  /** Time from the call to admission (or to giving up), ms. */
  readonly waitMs: number;
  /** Tokens reserved, in the budget's counted tokens. */
  readonly reservedTokens: number;
  /** Tokens counted against the budget: the reported usage's counted tokens, or the estimate when none was reported. */
  readonly actualTokens: number;
  /** Delegate calls made (0 when never admitted). */
  readonly attempts: number;
  /** Whole call time from the first pull to the end, ms. */
  readonly durationMs: number;
}

/** What the observers read about a finished call beyond its report. */
export interface CallDetails {
  /** The call was admitted (it held a permit and reserved tokens). */
  readonly admitted: boolean;
  /** Time from admission to the end, ms. */
  readonly callMs: number;
  readonly usage: Usage | undefined;
  /** The provider answered 429 at least once. */
  readonly rateLimited: boolean;
  /** Why the call did not end ok. */
  readonly error: unknown;
  /** Permits in use when the call ended, this one included. */
  readonly inFlight: number;
}

export interface CallObserversOptions {
  readonly name: string;
  readonly metrics: LimiterMetrics;
  readonly telemetry: GenAiTelemetry;
  readonly semaphore: FairSemaphore;
  readonly estimator: TokenEstimator;
  readonly adaptiveLimit?: AdaptiveLimit;
  readonly onCallEnd?: (report: CallReport) => void;
}

/** The metric series of one agent, built on its first call and reused (no label objects or hashing per call). */
interface AgentSeries {
  readonly labels: { limiter: string; agent: string };
  readonly acquired: { limiter: string; agent: string; outcome: string };
  readonly tokensReserved: CounterTally;
  readonly tokensActual: CounterTally;
  readonly calls: Record<CallOutcome, CounterTally>;
}

/** The observers of one wrapper; `start` opens the watch of one call. */
export class CallObservers {
  readonly options: CallObserversOptions;
  readonly #seriesByAgent = new Map<string, AgentSeries>();
  // Label objects are cached per agent and outcome: prom-client takes them on every call.
  readonly #labelCache = new Map<string, { limiter: string; agent: string; outcome?: string }>();

  constructor(options: CallObserversOptions) {
    this.options = options;
  }

  start(request: LlmRequest, agent: string, model: string): CallWatch {
    return new CallWatch(this, request, agent, model);
  }

  /** The cached series of an agent's hot-path metrics. */
  series(agent: string): AgentSeries {
    let series = this.#seriesByAgent.get(agent);
    if (!series) {
      const { metrics: m, name } = this.options;
      const labels = { limiter: name, agent };
      const tally = (outcome: CallOutcome) => m.tally('calls', { limiter: name, agent, outcome });
      series = {
        labels,
        acquired: { limiter: name, agent, outcome: 'acquired' },
        tokensReserved: m.tally('tokensReserved', labels),
        tokensActual: m.tally('tokensActual', labels),
        calls: {
          ok: tally('ok'),
          error: tally('error'),
          rate_limited: tally('rate_limited'),
          cancelled: tally('cancelled'),
          timeout: tally('timeout'),
        },
      };
      this.#seriesByAgent.set(agent, series);
    }
    return series;
  }

  labels(agent: string, outcome: string): { limiter: string; agent: string; outcome?: string } {
    const key = `${agent}\u0000${outcome}`;
    let labels = this.#labelCache.get(key);
    if (!labels) {
      labels = { limiter: this.options.name, agent, outcome };
      this.#labelCache.set(key, labels);
    }
    return labels;
  }
}

/** The observers' view of one call, from its first pull to its report. */
export class CallWatch {
  readonly span: Span;
  /** The call span's context when there is a trace (the delegate and the wait span run in it). */
  readonly callContext: Context | undefined;
  readonly #observers: CallObservers;
  readonly #request: LlmRequest;
  readonly #agent: string;
  readonly #model: string;
  readonly #series: AgentSeries;
  readonly #exemplar: { traceId: string; spanId: string } | undefined;
  #waitSpan: Span | undefined;

  constructor(observers: CallObservers, request: LlmRequest, agent: string, model: string) {
    this.#observers = observers;
    this.#request = request;
    this.#agent = agent;
    this.#model = model;
    const { telemetry, metrics, name } = observers.options;
    this.span = telemetry.startCallSpan(context.active(), name, agent, model);
    // Without a tracing SDK the span is a no-op: skip the context work on the hot path.
    const spanContext = this.span.spanContext();
    const validTrace = trace.isSpanContextValid(spanContext);
    this.callContext = validTrace || this.span.isRecording() ? trace.setSpan(context.active(), this.span) : undefined;
    this.#exemplar = validTrace && metrics.exemplars ? { traceId: spanContext.traceId, spanId: spanContext.spanId } : undefined;
    this.#series = observers.series(agent);
  }

  /** The call must wait for a permit or for budget: open the wait span (once). */
  waiting(): void {
    this.#waitSpan ??= this.#observers.options.telemetry.startWaitSpan(this.callContext ?? context.active());
  }

  /** Admission is decided: close the wait span and observe the wait. */
  admission(outcome: 'acquired' | 'timeout' | 'aborted', waitMs: number, reservedTokens: number): void {
    this.#waitSpan?.end();
    const m = this.#observers.options.metrics;
    const labels = outcome === 'acquired' ? this.#series.acquired : this.#observers.labels(this.#agent, outcome);
    m.observe(m.acquireDuration, labels, waitMs / 1000, this.#exemplar);
    if (outcome === 'acquired') {
      this.#series.tokensReserved.add(reservedTokens);
      this.#observers.options.adaptiveLimit?.onAdmitted?.(reservedTokens);
    }
  }

  timedOut(reason: TimeoutReason): void {
    this.#observers.options.metrics.timeouts.inc({ limiter: this.#observers.options.name, agent: this.#agent, reason });
  }

  /** The provider answered 429, naming when it takes calls again (ms) if it did. */
  rateLimited(retryAfterMs?: number): void {
    const { metrics, adaptiveLimit, semaphore } = this.#observers.options;
    metrics.rateLimited.inc(this.#series.labels);
    const limit = adaptiveLimit?.onRateLimited?.(retryAfterMs);
    if (limit !== undefined && limit !== semaphore.limit) semaphore.setLimit(limit);
  }

  retrying(attempt: number, delayMs: number): void {
    this.#observers.options.metrics.retries.inc(this.#series.labels);
    this.span.addEvent('retry', { attempt, delay_ms: delayMs });
  }

  /** The call is over: every observer reads the same report. */
  ended(report: CallReport, details: CallDetails): void {
    if (details.admitted) {
      this.#observeAdmittedCall(report, details);
      this.#adaptLimit(report, details);
    }
    this.#series.calls[report.outcome].add();
    this.#endSpan(report, details);
    const onCallEnd = this.#observers.options.onCallEnd;
    if (onCallEnd) {
      try {
        onCallEnd(report);
      } catch {
        // A faulty observer must not break the call or leak the permit.
      }
    }
  }

  #observeAdmittedCall(report: CallReport, details: CallDetails): void {
    const { metrics: m, estimator, telemetry } = this.#observers.options;
    const { usage } = details;
    this.#series.tokensActual.add(report.actualTokens);
    if (usage) estimator.observe?.(this.#request, this.#agent, report.actualTokens);
    m.observe(m.callDuration, this.#series.labels, details.callMs / 1000, this.#exemplar);
    telemetry.recordCall(
      this.#model,
      details.callMs / 1000,
      usage && { inputTokens: usage.input, outputTokens: usage.output },
      report.outcome === 'ok' ? undefined : errorType(details.error),
    );
  }

  #adaptLimit(report: CallReport, details: CallDetails): void {
    const { adaptiveLimit, semaphore } = this.#observers.options;
    if (!adaptiveLimit) return;
    const limit = adaptiveLimit.onSample({
      durationMs: details.callMs,
      rateLimited: details.rateLimited,
      failed: report.outcome === 'error',
      inFlight: details.inFlight,
    });
    if (limit !== semaphore.limit) semaphore.setLimit(limit);
  }

  #endSpan(report: CallReport, details: CallDetails): void {
    // A non-recording span ignores attributes: do not build them.
    if (!this.span.isRecording()) {
      this.span.end();
      return;
    }
    endSpan(
      this.span,
      {
        [SPAN_ATTRIBUTES.reservedTokens]: report.reservedTokens,
        [SPAN_ATTRIBUTES.actualTokens]: report.actualTokens,
        [SPAN_ATTRIBUTES.attempts]: report.attempts,
        [SPAN_ATTRIBUTES.outcome]: report.outcome,
        [SPAN_ATTRIBUTES.waitMs]: report.waitMs,
      },
      report.outcome === 'ok' ? undefined : details.error,
    );
  }
}
