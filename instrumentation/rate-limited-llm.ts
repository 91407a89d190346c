// RateLimitedLlm: an ADK model that wraps another one and enforces, per instance, a
// concurrency limit (FairSemaphore) and a tokens-per-minute budget (TokenBudget), retries
// provider rate-limit errors within a bounded wait, and measures every call.
//
// Share ONE instance between every agent of a tree that uses the same model and quota.
//
// A permit lives exactly as long as the provider call: the wrapper drives the delegate's
// generator itself and pumps its responses into a buffer the consumer reads. ADK can leave
// a consumer suspended forever (a sibling's non-Error throw, a `break` out of runAsync), so
// a permit released in the consumer's `finally` could leak; here it is released when the
// provider call ends, and a call held past maxCallMs is reclaimed and counted.
import type { BaseLlmConnection, LlmRequest, LlmResponse } from '@google/adk';
import { BaseLlm } from '@google/adk';
import { z } from 'zod';
import { context, type Span, trace } from '@opentelemetry/api';
import { type BackoffOptions, DEFAULT_BACKOFF, fullJitterDelayMs } from './backoff.ts';
import { type Clock, realClock, sleep } from './clock.ts';
import {
  BudgetRequestTooLarge,
  DeadlineExceeded,
  type ExhaustedReason,
  MaxCallTimeExceeded,
  RateLimitExhausted,
  RateLimitTimeout,
  type TimeoutReason,
} from './errors.ts';
import { type TokenEstimator, UsageEstimator } from './estimator.ts';
import type { AdaptiveLimit } from './limits/adaptive-limit.ts';
import { type AnyRegistry, type CounterTally, createLimiterMetrics, type LimiterMetrics } from './metrics/limiter-metrics.ts';
import { type HeldCall, PermitSweeper } from './permit-sweeper.ts';
import { isDailyQuotaError, isRateLimitError, serverRetryDelayMs } from './rate-limit-errors.ts';
import { ResponseChannel } from './response-channel.ts';
import { RetryBudget, type RetryBudgetOptions } from './retry-budget.ts';
import { FairSemaphore, type Permit } from './semaphore.ts';
import { endSpan, errorType, GenAiTelemetry, SPAN_ATTRIBUTES, type TelemetryOptions } from './telemetry.ts';
import type { AdmissionTicket, Budget } from './budget.ts';

export type CallOutcome = 'ok' | 'error' | 'rate_limited' | 'cancelled' | 'timeout';

/** One finished call, reported exactly once, synchronously in the call's async context. */
export interface CallReport {
  readonly limiter: string;
  readonly agent: string;
  readonly outcome: CallOutcome;
  /** Time from the call to admission (or to giving up), ms. */
  readonly waitMs: number;
  readonly reservedTokens: number;
  /** Tokens counted against the budget: the reported total, or the estimate when none was reported. */
  readonly actualTokens: number;
  /** Delegate calls made (0 when never admitted). */
  readonly attempts: number;
  /** Whole call time from the first pull to the end, ms. */
  readonly durationMs: number;
}

export interface RateLimitedLlmOptions extends TelemetryOptions {
  /** The model that really calls the provider (e.g. ADK's Gemini). */
  readonly delegate: BaseLlm;
  /** The `limiter` label of every metric (one name per model and quota). */
  readonly name: string;
  /** Concurrency limit; or pass a `semaphore` to share one. */
  readonly maxConcurrent?: number;
  readonly semaphore?: FairSemaphore;
  /** Tokens-per-minute budget (TokenBudget, or RedisTokenBudget shared by replicas); without one only concurrency is limited. */
  readonly budget?: Budget;
  /** Tokens to reserve per call: a number, a function of the request, or an estimator. Default: UsageEstimator. */
  readonly estimatedTokens?: number | ((request: LlmRequest) => number) | TokenEstimator;
  /** Bound on the whole wait for admission (permit + budget) and on retry delays, ms (default 20,000). */
  readonly maxWaitMs?: number;
  /** Delegate calls per model call, the first included (default 3). */
  readonly maxAttempts?: number;
  /** A permit held longer than this is reclaimed and the call aborted, ms (default 300,000). */
  readonly maxCallMs?: number;
  readonly backoff?: BackoffOptions;
  /** Retry budget instance (to share) or its options (default 10 % of recent calls). */
  readonly retryBudget?: RetryBudget | RetryBudgetOptions;
  readonly isRateLimited?: (error: unknown) => boolean;
  /** The server's requested delay in ms, or undefined. */
  readonly retryAfterMs?: (error: unknown) => number | undefined;
  /** True when the rate limit cannot clear soon (per-day quota): fail at once. */
  readonly isDailyQuota?: (error: unknown) => boolean;
  /** prom-client registry for the limiter metrics (default: prom-client's global registry). */
  readonly registry?: AnyRegistry;
  readonly onCallEnd?: (report: CallReport) => void;
  /**
   * The semaphore lane (traffic class) of a call, e.g. from an AsyncLocalStorage of the
   * request. Evaluated once per call, on its first pull, in the caller's async context;
   * caps per lane are the semaphore's (`laneLimits`, `setLaneLimit`).
   */
  readonly laneOf?: (request: LlmRequest) => string | undefined;
  /** Adjusts the semaphore's limit from call samples (e.g. AimdLimit). */
  readonly adaptiveLimit?: AdaptiveLimit;
  readonly clock?: Clock;
  /** [0, 1) source for backoff jitter. */
  readonly random?: () => number;
}

export interface LimiterSnapshot {
  readonly permitsInUse: number;
  readonly permitsLimit: number;
  readonly waiting: number;
  /** Budget level in tokens; Infinity without a budget. */
  readonly budgetAvailable: number;
}

const UNKNOWN_AGENT = 'unknown';

// The options a user types by hand; objects (delegate, budget, semaphore…) are checked by use.
const optionsSchema = z.looseObject({
  name: z.string().min(1),
  maxConcurrent: z.number().int().min(1).optional(),
  estimatedTokens: z.union([z.number().finite().nonnegative(), z.function(), z.object({ estimate: z.function() })]).optional(),
  maxWaitMs: z.number().finite().positive().optional(),
  maxAttempts: z.number().int().min(1).optional(),
  maxCallMs: z.number().finite().positive().optional(),
  backoff: z.object({ baseMs: z.number().finite().nonnegative(), capMs: z.number().finite().nonnegative() }).optional(),
  laneOf: z.function().optional(),
});

function validateOptions(options: RateLimitedLlmOptions): void {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(options)'}: ${issue.message}`);
    throw new TypeError(`RateLimitedLlm options: ${problems.join('; ')}`);
  }
  if (!options.semaphore && options.maxConcurrent === undefined) {
    throw new TypeError('RateLimitedLlm options: maxConcurrent: give maxConcurrent or a shared semaphore');
  }
}

/** A call admitted: its permit, its reservation and the budget's ticket for that reservation. */
interface Admitted {
  kind: 'admitted';
  acquireOutcome: 'acquired';
  permit: Permit;
  reserved: number;
  ticket: AdmissionTicket | undefined;
}

interface Usage {
  total: number;
  input?: number;
  output?: number;
}

function usageOf(response: LlmResponse): Usage | undefined {
  const u = response.usageMetadata;
  if (!u) return undefined;
  const input = u.promptTokenCount;
  const output = u.candidatesTokenCount === undefined && u.thoughtsTokenCount === undefined
    ? undefined
    : (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0);
  const total = u.totalTokenCount ?? (input ?? 0) + (output ?? 0);
  if (u.totalTokenCount === undefined && input === undefined && output === undefined) return undefined;
  return { total, input, output };
}

/**
 * One model call's shared state: between the consumer-facing generator, the call the wrapper
 * drives, and the sweeper that reclaims a permit held too long. A class, so the hot path
 * allocates one object instead of a closure per concern.
 */
class CallState implements HeldCall {
  /** The provider call is over (permit released, tokens settled). */
  ended = false;
  /** When the permit is reclaimed if still held (set on admission). */
  deadline = Number.POSITIVE_INFINITY;
  permit: Permit | undefined;
  /** Set by the running delegate step: makes it give up at once when the call is aborted. */
  interrupt: ((reason: unknown) => void) | undefined;
  /** Its signal goes to the delegate and to every wait. */
  readonly controller = new AbortController();
  /** A response reached the consumer's buffer (a retry would show output twice). */
  yielded = false;
  /** Usage of the final (non-partial) response, and of the last partial one that reported usage. */
  finalUsage: Usage | undefined;
  lastPartialUsage: Usage | undefined;
  readonly #onReclaim: (state: CallState) => void;

  constructor(onReclaim: (state: CallState) => void) {
    this.#onReclaim = onReclaim;
  }

  /**
   * Abort the provider call. Every abort goes through here, which also stops the running
   * delegate step without an event listener (Node's EventTarget listeners are costly on the hot path).
   */
  cancel(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    this.interrupt?.(reason);
  }

  reclaim(): void {
    this.#onReclaim(this);
  }

  /** Note a response from the delegate. Streamed partials carry usage too: keep the final response's, else the last seen. Never sum. */
  sawResponse(response: LlmResponse): void {
    this.yielded = true;
    const u = usageOf(response);
    if (u && !response.partial) this.finalUsage = u;
    else if (u) this.lastPartialUsage = u;
  }
}

/** The metric series of one agent, built on its first call and reused (no label objects or hashing per call). */
interface AgentSeries {
  readonly labels: { limiter: string; agent: string };
  readonly acquired: { limiter: string; agent: string; outcome: string };
  readonly tokensReserved: CounterTally;
  readonly tokensActual: CounterTally;
  readonly calls: Record<CallOutcome, CounterTally>;
}

/** The calling agent's name, set by ADK in the request labels (read before delegating: Gemini deletes it). */
export function agentNameOf(request: LlmRequest): string {
  const name = request.config?.labels?.adk_agent_name;
  return typeof name === 'string' && name !== '' ? name : UNKNOWN_AGENT;
}

/** Signals the consumer returned early; the provider call is aborted with it. */
class ConsumerReturned extends Error {
  constructor() {
    super('the consumer stopped reading the model response');
    this.name = 'ConsumerReturned';
  }
}

export class RateLimitedLlm extends BaseLlm {
  readonly name: string;
  readonly delegate: BaseLlm;
  readonly semaphore: FairSemaphore;
  readonly budget: Budget | undefined;
  readonly estimator: TokenEstimator;
  readonly metrics: LimiterMetrics;
  readonly maxWaitMs: number;
  readonly maxAttempts: number;
  readonly maxCallMs: number;
  readonly #options: RateLimitedLlmOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #backoff: BackoffOptions;
  readonly #retryBudget: RetryBudget;
  readonly #telemetry: GenAiTelemetry;
  readonly #removeGaugeSource: () => void;
  readonly #sweeper: PermitSweeper;

  constructor(options: RateLimitedLlmOptions) {
    super({ model: options.delegate.model });
    validateOptions(options);
    this.#options = options;
    this.name = options.name;
    this.delegate = options.delegate;
    this.#clock = options.clock ?? realClock;
    this.#random = options.random ?? Math.random;
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.semaphore =
      options.semaphore ?? new FairSemaphore(options.maxConcurrent as number, { clock: this.#clock });
    this.budget = options.budget;
    this.estimator = toEstimator(options.estimatedTokens, options.budget);
    this.maxWaitMs = options.maxWaitMs ?? 20_000;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.maxCallMs = options.maxCallMs ?? 300_000;
    this.#retryBudget =
      options.retryBudget instanceof RetryBudget
        ? options.retryBudget
        : new RetryBudget({ clock: this.#clock, ...options.retryBudget });
    this.#telemetry = new GenAiTelemetry(options);
    this.#sweeper = new PermitSweeper(this.#clock);
    this.metrics = createLimiterMetrics(options.registry);
    // Permit time is the semaphore's own integral of permits held, read at scrape time: it
    // includes the wait for budget while holding a permit, and never lumps a long call.
    this.metrics.tally('permitSeconds', { limiter: this.name }, () => this.semaphore.heldPermitSeconds);
    this.#removeGaugeSource = this.metrics.addSource({
      name: this.name,
      snapshot: () => ({
        ...this.snapshot(),
        budgetAvailable: this.budget?.available,
        budgetCapacity: this.budget?.capacity,
        budgetWindowTokens: this.budget?.windowTokens,
      }),
    });
  }

  snapshot(): LimiterSnapshot {
    return {
      permitsInUse: this.semaphore.inUse,
      permitsLimit: this.semaphore.limit,
      waiting: this.semaphore.waiting + (this.budget?.waiting ?? 0),
      budgetAvailable: this.budget ? this.budget.available : Number.POSITIVE_INFINITY,
    };
  }

  /** Stop reporting this limiter's gauges (the counters keep their values). */
  close(): void {
    this.#removeGaugeSource();
    this.#sweeper.close();
  }

  override connect(_request: LlmRequest): Promise<BaseLlmConnection> {
    return Promise.reject(
      new Error(
        `RateLimitedLlm "${this.name}": live (bidirectional) connections are not rate limited and are refused; use generateContentAsync`,
      ),
    );
  }

  override async *generateContentAsync(
    request: LlmRequest,
    stream = false,
    abortSignal?: AbortSignal,
  ): AsyncGenerator<LlmResponse, void> {
    // The body runs on the first pull: a call that is never consumed acquires nothing.
    const agent = agentNameOf(request);
    // Read here, in the consumer's async context; a throwing laneOf fails this call before anything is held.
    const lane = this.#options.laneOf?.(request);
    const channel = new ResponseChannel<LlmResponse>();
    const state = new CallState(this.#reclaim);
    void this.#drive(request, stream, agent, lane, channel, abortSignal, state);
    try {
      for (;;) {
        const next = await channel.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      // The consumer left early (return() or a throw into the generator): end the provider call.
      if (!state.ended) state.cancel(new ConsumerReturned());
    }
  }

  /** Called by the sweeper for a call still holding its permit past maxCallMs. */
  readonly #reclaim = (state: CallState): void => {
    if (state.permit?.release()) {
      this.metrics.permitsReclaimed.inc({ limiter: this.name });
      state.cancel(new MaxCallTimeExceeded(this.name, this.maxCallMs));
    }
  };

  /** Admission, attempts, release and accounting for one model call. Never rejects. */
  async #drive(
    request: LlmRequest,
    stream: boolean,
    agent: string,
    lane: string | undefined,
    channel: ResponseChannel<LlmResponse>,
    callerSignal: AbortSignal | undefined,
    state: CallState,
  ): Promise<void> {
    const clock = this.#clock;
    const start = clock.now();
    const model = request.model ?? this.model;
    const signal = state.controller.signal;
    let onCallerAbort: (() => void) | undefined;
    if (callerSignal) {
      if (callerSignal.aborted) state.cancel(callerSignal.reason);
      onCallerAbort = () => state.cancel(callerSignal.reason);
      callerSignal.addEventListener('abort', onCallerAbort, { once: true });
    }

    const span = this.#telemetry.startCallSpan(context.active(), this.name, agent, model);
    // Without a tracing SDK the span is a no-op: skip the context work on the hot path.
    const spanContext = span.spanContext();
    const validTrace = trace.isSpanContextValid(spanContext);
    const callContext = validTrace || span.isRecording() ? trace.setSpan(context.active(), span) : undefined;
    const m = this.metrics;
    const exemplar = validTrace && m.exemplars ? { traceId: spanContext.traceId, spanId: spanContext.spanId } : undefined;
    const series = this.#series(agent);
    const labels = series.labels;

    let outcome: CallOutcome = 'ok';
    let error: unknown;
    let reserved = 0;
    let attempts = 0;
    let sawRateLimit = false;
    const deadline = start + this.maxWaitMs;

    // Uncontended calls are admitted synchronously; only a call that must wait pays for the async path.
    const laneOption = lane === undefined ? undefined : { lane };
    const admission =
      this.#admitNow(request, agent, laneOption, signal) ?? (await this.#admit(request, agent, laneOption, deadline, signal, callContext));
    const admittedAt = clock.now();
    const waitMs = admittedAt - start;
    const acquireLabels = admission.acquireOutcome === 'acquired' ? series.acquired : this.#labels(agent, admission.acquireOutcome);
    m.observe(m.acquireDuration, acquireLabels, waitMs / 1000, exemplar);
    if (admission.kind === 'refused') {
      outcome = admission.outcome;
      error = admission.error;
    } else {
      state.permit = admission.permit;
      reserved = admission.reserved;
      series.tokensReserved.add(reserved);
      // The safety net: one sweeper per wrapper reclaims a permit still held at the deadline.
      state.deadline = admittedAt + this.maxCallMs;
      this.#sweeper.add(state);

      this.#retryBudget.recordCall();
      let backoffWaited = 0;
      for (;;) {
        attempts++;
        try {
          // The delegate runs inside the call span's context when there is a trace.
          await (callContext
            ? context.with(callContext, () => this.#pump(request, stream, state, channel))
            : this.#pump(request, stream, state, channel));
          outcome = 'ok';
          break;
        } catch (err) {
          if (signal.aborted) {
            const reason = signal.reason;
            outcome = reason instanceof MaxCallTimeExceeded ? 'error' : 'cancelled';
            error = reason;
            break;
          }
          const isRateLimited = this.#options.isRateLimited ?? isRateLimitError;
          if (!isRateLimited(err)) {
            outcome = 'error';
            error = err;
            break;
          }
          sawRateLimit = true;
          m.rateLimited.inc(labels);
          if (state.yielded) {
            // Partial output already reached the consumer: a retry would show it twice.
            outcome = 'rate_limited';
            error = err;
            break;
          }
          const decision = this.#retryDecision(err, attempts, waitMs + backoffWaited);
          if (decision.kind === 'give_up') {
            outcome = 'rate_limited';
            error = new RateLimitExhausted(this.name, decision.reason, attempts, err);
            break;
          }
          m.retries.inc(labels);
          span.addEvent('retry', { attempt: attempts, delay_ms: decision.delayMs });
          try {
            await sleep(clock, decision.delayMs, signal);
          } catch (reason) {
            outcome = reason instanceof MaxCallTimeExceeded ? 'error' : 'cancelled';
            error = reason;
            break;
          }
          backoffWaited += decision.delayMs;
        }
      }
    }

    // The provider call is over: release, settle tokens, measure, then let the consumer see the end.
    const end = clock.now();
    if (admission.kind === 'admitted') this.#sweeper.delete(state);
    const inFlight = this.semaphore.inUse;
    state.permit?.release();
    if (onCallerAbort) callerSignal?.removeEventListener('abort', onCallerAbort);
    const usage = state.finalUsage ?? state.lastPartialUsage;
    const actual = usage?.total ?? reserved;
    if (admission.kind === 'admitted') {
      this.budget?.reconcile(reserved, actual, admission.ticket);
      series.tokensActual.add(actual);
      if (usage) this.estimator.observe?.(request, agent, usage.total);
      const callMs = end - admittedAt;
      m.observe(m.callDuration, labels, callMs / 1000, exemplar);
      this.#telemetry.recordCall(
        model,
        callMs / 1000,
        usage && { inputTokens: usage.input, outputTokens: usage.output },
        outcome === 'ok' ? undefined : errorType(error),
      );
      if (this.#options.adaptiveLimit) {
        const limit = this.#options.adaptiveLimit.onSample({
          durationMs: callMs,
          rateLimited: sawRateLimit,
          failed: outcome === 'error',
          inFlight,
        });
        if (limit !== this.semaphore.limit) this.semaphore.setLimit(limit);
      }
    }
    series.calls[outcome].add();
    // A non-recording span ignores attributes: do not build them.
    if (span.isRecording()) {
      endSpan(
        span,
        {
          [SPAN_ATTRIBUTES.reservedTokens]: reserved,
          [SPAN_ATTRIBUTES.actualTokens]: actual,
          [SPAN_ATTRIBUTES.attempts]: attempts,
          [SPAN_ATTRIBUTES.outcome]: outcome,
          [SPAN_ATTRIBUTES.waitMs]: waitMs,
        },
        outcome === 'ok' ? undefined : error,
      );
    } else {
      span.end();
    }
    if (this.#options.onCallEnd) {
      this.#report({
        limiter: this.name,
        agent,
        outcome,
        waitMs,
        reservedTokens: reserved,
        actualTokens: admission.kind === 'admitted' ? actual : 0,
        attempts,
        durationMs: end - start,
      });
    }
    state.ended = true;
    if (outcome === 'ok') channel.end();
    else channel.fail(error);
  }

  /** A permit and budget taken at once when both are free, else undefined with nothing held. */
  #admitNow(
    request: LlmRequest,
    agent: string,
    laneOption: { lane: string } | undefined,
    signal: AbortSignal,
  ): Admitted | undefined {
    if (signal.aborted) return undefined;
    const permit = this.semaphore.tryAcquire(laneOption);
    if (!permit) return undefined;
    try {
      const reserved = this.#estimate(request, agent);
      if (!this.budget || this.budget.tryReserve(reserved)) {
        return { kind: 'admitted', acquireOutcome: 'acquired', permit, reserved, ticket: this.budget?.lastAdmission };
      }
    } catch {
      // The slow path reports the error.
    }
    // Held for no time (taken and given back in this same synchronous turn): no permit seconds.
    permit.release();
    return undefined;
  }

  /** Wait for a permit, then for budget, within the deadline. */
  async #admit(
    request: LlmRequest,
    agent: string,
    laneOption: { lane: string } | undefined,
    deadline: number,
    signal: AbortSignal,
    callContext: ReturnType<typeof context.active> | undefined,
  ): Promise<
    | Admitted
    | { kind: 'refused'; acquireOutcome: 'timeout' | 'aborted'; outcome: CallOutcome; error: unknown }
  > {
    const waitStart = this.#clock.now();
    let waitSpan: Span | undefined;
    const startWaitSpan = () => {
      waitSpan ??= this.#telemetry.startWaitSpan(callContext ?? context.active());
    };
    const refuse = (err: unknown, reason: TimeoutReason) => {
      waitSpan?.end();
      if (err instanceof DeadlineExceeded) {
        this.metrics.timeouts.inc({ limiter: this.name, agent, reason });
        const timeout = new RateLimitTimeout(this.name, reason, this.#clock.now() - waitStart);
        return { kind: 'refused' as const, acquireOutcome: 'timeout' as const, outcome: 'timeout' as const, error: timeout };
      }
      if (signal.aborted) {
        return { kind: 'refused' as const, acquireOutcome: 'aborted' as const, outcome: 'cancelled' as const, error: err };
      }
      return { kind: 'refused' as const, acquireOutcome: 'aborted' as const, outcome: 'error' as const, error: err };
    };

    let permit = signal.aborted ? undefined : this.semaphore.tryAcquire(laneOption);
    if (!permit) {
      startWaitSpan();
      try {
        permit = await this.semaphore.acquire({ deadline, signal, lane: laneOption?.lane });
      } catch (err) {
        return refuse(err, 'permit');
      }
    }
    let reserved: number;
    let ticket: AdmissionTicket | undefined;
    try {
      reserved = this.#estimate(request, agent);
      if (this.budget && !this.budget.tryReserve(reserved)) {
        startWaitSpan();
        const granted = await this.budget.reserve(reserved, { deadline, signal });
        ticket = typeof granted === 'number' ? granted : undefined;
      } else {
        ticket = this.budget?.lastAdmission;
      }
    } catch (err) {
      permit.release();
      return refuse(err, 'budget');
    }
    waitSpan?.end();
    return { kind: 'admitted', acquireOutcome: 'acquired', permit, reserved, ticket };
  }

  #estimate(request: LlmRequest, agent: string): number {
    const tokens = Math.ceil(this.estimator.estimate(request, agent));
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`RateLimitedLlm "${this.name}": estimatedTokens gave ${tokens}, need a finite number >= 0`);
    }
    if (this.budget && tokens > this.budget.capacity) throw new BudgetRequestTooLarge(tokens, this.budget.capacity);
    return tokens;
  }

  /** Decide whether a rate-limited attempt is retried, and after how long. */
  #retryDecision(
    err: unknown,
    attempts: number,
    waitedMs: number,
  ): { kind: 'retry'; delayMs: number } | { kind: 'give_up'; reason: ExhaustedReason } {
    const isDaily = this.#options.isDailyQuota ?? isDailyQuotaError;
    if (isDaily(err)) return { kind: 'give_up', reason: 'daily_quota' };
    if (attempts >= this.maxAttempts) return { kind: 'give_up', reason: 'attempts' };
    const readServerDelay = this.#options.retryAfterMs ?? serverRetryDelayMs;
    const serverDelay = readServerDelay(err);
    // Honour the server's delay; add up to one base delay of jitter so clients told the same delay spread out.
    const delayMs =
      serverDelay !== undefined
        ? serverDelay + this.#random() * this.#backoff.baseMs
        : fullJitterDelayMs(attempts - 1, this.#backoff, this.#random);
    if ((serverDelay ?? delayMs) > this.maxWaitMs - waitedMs) return { kind: 'give_up', reason: 'delay_exceeds_wait' };
    if (!this.#retryBudget.tryRetry()) return { kind: 'give_up', reason: 'retry_budget' };
    return { kind: 'retry', delayMs: Math.min(delayMs, Math.max(0, this.maxWaitMs - waitedMs)) };
  }

  /**
   * One delegate call, its responses pushed into the channel. Rejects with the delegate's
   * error, or with the abort reason as soon as the call is aborted: a delegate that ignores
   * its signal may never settle, so it is not waited for. Callbacks rather than a race per
   * step keep the uncontended path to one promise per call.
   */
  #pump(
    request: LlmRequest,
    stream: boolean,
    state: CallState,
    channel: ResponseChannel<LlmResponse>,
  ): Promise<void> {
    const signal = state.controller.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      let over = false;
      const finish = (error: unknown, failed: boolean) => {
        if (over) return;
        over = true;
        state.interrupt = undefined;
        if (failed) reject(error);
        else resolve();
      };
      const onError = (error: unknown) => finish(error, true);
      const step = () => {
        try {
          iterator.next().then(onResult, onError);
        } catch (error) {
          onError(error);
        }
      };
      const onResult = (result: IteratorResult<LlmResponse, void>) => {
        if (over) return;
        if (result.done) {
          finish(undefined, false);
          return;
        }
        state.sawResponse(result.value);
        channel.push(result.value);
        step();
      };
      const iterator = this.delegate.generateContentAsync(request, stream, signal);
      state.interrupt = (reason) => {
        finish(reason, true);
        // Do not wait: the delegate's pending step settles into the void.
        iterator.return(undefined).catch(() => {});
      };
      step();
    });
  }

  /** The cached series of an agent's hot-path metrics. */
  #series(agent: string): AgentSeries {
    let series = this.#seriesByAgent.get(agent);
    if (!series) {
      const m = this.metrics;
      const labels = { limiter: this.name, agent };
      const tally = (outcome: CallOutcome) => m.tally('calls', { limiter: this.name, agent, outcome });
      series = {
        labels,
        acquired: { limiter: this.name, agent, outcome: 'acquired' },
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

  readonly #seriesByAgent = new Map<string, AgentSeries>();

  // Label objects are cached per agent and outcome: prom-client takes them on every call.
  readonly #labelCache = new Map<string, { limiter: string; agent: string; outcome?: string }>();

  #labels(agent: string, outcome?: string): { limiter: string; agent: string; outcome?: string } {
    const key = outcome === undefined ? agent : `${agent}\u0000${outcome}`;
    let labels = this.#labelCache.get(key);
    if (!labels) {
      labels = outcome === undefined ? { limiter: this.name, agent } : { limiter: this.name, agent, outcome };
      this.#labelCache.set(key, labels);
    }
    return labels;
  }

  #report(report: CallReport): void {
    try {
      this.#options.onCallEnd?.(report);
    } catch {
      // A faulty observer must not break the call or leak the permit.
    }
  }
}

function toEstimator(option: RateLimitedLlmOptions['estimatedTokens'], budget: Budget | undefined): TokenEstimator {
  if (typeof option === 'number') return { estimate: () => option };
  if (typeof option === 'function') return { estimate: (request) => option(request) };
  return option ?? new UsageEstimator({ maxTokens: budget?.capacity });
}
