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
//
// This file keeps the generator, the pump and the channel, and the call path that ties the
// concepts together: admission (admission/call-admission.ts), the retry decision (retry-policy.ts) and what
// watches a call (call-observers.ts).
import type { BaseLlmConnection, LlmRequest, LlmResponse } from '@google/adk';
import { BaseLlm } from '@google/adk';
import { context } from '@opentelemetry/api';
import { z } from 'zod';
import { type Admission, AdmissionControl } from './admission/call-admission.ts';
import { type AdmittedRequest, currentRequest } from './admission/admitted-request.ts';
import type { Budget } from './budget/budget.ts';
import { BUDGET_FUNDED } from './admission/funded-share.ts';
import { type CallOutcome, type CallReport, CallObservers, type CallWatch, type Usage } from './call-observers.ts';
import { CallCostModel } from './admission/call-cost.ts';
import { CallState } from './call-state.ts';
import { DoorWaiters } from './admission/door-waiters.ts';
import { type Clock, realClock, sleep } from './clock.ts';
import { type CountedTokens, countedTokensSchema, countsInput, countTokens } from './counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_MAX_CALL_MS, MAX_EXPECTED_TOKENS_PER_CALL } from './defaults.ts';
import { MaxCallTimeExceeded, RateLimitExhausted } from './errors.ts';
import { type TokenEstimator, UsageEstimator } from './estimator.ts';
import { limiterOptionFields, optionProblems } from './limiter-options.ts';
import type { AdaptiveLimit } from './limits/adaptive-limit.ts';
import type { QuotaStepDown } from './limits/quota-step-down.ts';
import { type AnyRegistry, createLimiterMetrics, type LimiterMetrics } from './metrics/limiter-metrics.ts';
import { PermitSweeper } from './permit-sweeper.ts';
import { quotaNamedBy } from './rate-limit-errors.ts';
import { callCutoff, permitReclaimAt } from './admission/request-deadlines.ts';
import { ResponseChannel } from './response-channel.ts';
import { RetryPolicy, type RetrySettings } from './retry-policy.ts';
import { FairSemaphore } from './semaphore.ts';
import { GenAiTelemetry, type TelemetryOptions } from './telemetry.ts';

export type { CallOutcome, CallReport } from './call-observers.ts';

export interface RateLimitedLlmOptions extends TelemetryOptions, RetrySettings {
  /** The model that really calls the provider (e.g. ADK's Gemini). */
  readonly delegate: BaseLlm;
  /** The `limiter` label of every metric (one name per model and quota). */
  readonly name: string;
  /** Concurrency limit (1 to MAX_PERMITS); or pass a `semaphore` to share one. */
  readonly maxConcurrent?: number;
  readonly semaphore?: FairSemaphore;
  /** Tokens-per-minute budget (TokenBudget, or RedisTokenBudget shared by replicas); without one only concurrency is limited. */
  readonly budget?: Budget;
  /**
   * Which tokens a call is charged (the budget's unit): 'input' (Gemini's TPM), 'total', or a
   * function of usage. Default: the budget's countedTokens, else DEFAULT_COUNTED_TOKENS.
   */
  readonly countedTokens?: CountedTokens;
  /** Tokens to reserve per call, in counted tokens: a number, a function of the request, or an estimator. Default: UsageEstimator. */
  readonly estimatedTokens?: number | ((request: LlmRequest) => number) | TokenEstimator;
  /**
   * A model call's time before this limiter has measured one, ms (default
   * DEFAULT_EXPECTED_CALL_MS): request admission sizes a cold request's deadline with it.
   */
  readonly expectedCallMs?: number;
  /**
   * Counted tokens per call before this limiter has measured one: one number, or per agent
   * name (a calibration's). Request admission funds a cold request whole from it. Default:
   * none (one request at a time learns the cost while the others wait at the door).
   */
  readonly expectedTokensPerCall?: number | Readonly<Record<string, number>>;
  /**
   * Most calls waiting for a permit or budget at once (`snapshot().waiting`); a call that
   * would wait beyond it is refused at once with RateLimitTimeout reason `queue_full`.
   * Default: no cap (each wait is still bounded by maxWaitMs).
   */
  readonly maxWaiting?: number;
  /** A permit held longer than this is reclaimed and the call aborted, ms (default DEFAULT_MAX_CALL_MS). */
  readonly maxCallMs?: number;
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
  /**
   * Steps the budget's window limit down on a provider 429 of this caller's own usage and back
   * up to the ceiling (static and central budgets; adaptive mode's AimdLimit does its own).
   * Shared by the limiters of one budget; its owner closes it.
   */
  readonly stepDown?: QuotaStepDown;
  readonly clock?: Clock;
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
// The options shared with the services are limiterOptionFields', unwrapped of the services'
// defaults: maxConcurrent has none here, and an unset maxWaitMs is the retry policy's.
const limiterOption = limiterOptionFields.shape;
const expectedTokens = z.number().finite().positive().max(MAX_EXPECTED_TOKENS_PER_CALL);
const optionsSchema = z.looseObject({
  name: z.string().min(1),
  maxConcurrent: limiterOption.permits.unwrap().optional(),
  estimatedTokens: z.union([z.number().finite().nonnegative(), z.function(), z.object({ estimate: z.function() })]).optional(),
  countedTokens: countedTokensSchema.optional(),
  maxWaitMs: limiterOption.maxWaitMs.unwrap().optional(),
  maxAttempts: z.number().int().min(1).optional(),
  maxCallMs: z.number().finite().positive().optional(),
  maxWaiting: limiterOption.maxWaiting,
  expectedCallMs: limiterOption.expectedCallMs,
  expectedTokensPerCall: z.union([expectedTokens, z.record(z.string(), expectedTokens)]).optional(),
  backoff: z.object({ baseMs: z.number().finite().nonnegative(), capMs: z.number().finite().nonnegative() }).optional(),
  laneOf: z.function().optional(),
});

function validateOptions(options: RateLimitedLlmOptions): void {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new TypeError(`RateLimitedLlm options: ${optionProblems(parsed.error)}`);
  }
  if (!options.semaphore && options.maxConcurrent === undefined) {
    throw new TypeError('RateLimitedLlm options: maxConcurrent: give maxConcurrent or a shared semaphore');
  }
  const own = options.countedTokens;
  const budgets = options.budget?.countedTokens;
  if (own !== undefined && budgets !== undefined && own !== budgets) {
    throw new TypeError(`RateLimitedLlm options: countedTokens: ${String(own)} differs from the budget's (${String(budgets)}); set it on the budget`);
  }
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

/** The brand of a RateLimitedLlm, so one from another copy of this module is recognised too. */
const RATE_LIMITED_LLM_BRAND = Symbol.for('quotascope.rateLimitedLlm');

/** True for a RateLimitedLlm from any copy of this module. */
export function isRateLimitedLlm(value: unknown): value is RateLimitedLlm {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[RATE_LIMITED_LLM_BRAND] === true;
}

export class RateLimitedLlm extends BaseLlm {
  readonly [RATE_LIMITED_LLM_BRAND] = true;
  readonly name: string;
  readonly delegate: BaseLlm;
  readonly semaphore: FairSemaphore;
  readonly budget: Budget | undefined;
  /** The tokens a call is charged, reserved and reconciled in (the budget's unit). */
  readonly countedTokens: CountedTokens;
  readonly estimator: TokenEstimator;
  readonly metrics: LimiterMetrics;
  readonly maxWaitMs: number;
  readonly maxAttempts: number;
  readonly maxCallMs: number;
  /** What its calls cost per agent and how long they take, learned from finished calls (request admission funds requests with it). */
  readonly callCost: CallCostModel;
  /** Requests waiting at request admission's door for this limiter now (the door's leading signal). */
  readonly doorWaiters = new DoorWaiters();
  readonly #laneOf: ((request: LlmRequest) => string | undefined) | undefined;
  readonly #clock: Clock;
  readonly #admission: AdmissionControl;
  readonly #retry: RetryPolicy;
  readonly #observers: CallObservers;
  readonly #removeGaugeSource: () => void;
  readonly #sweeper: PermitSweeper;
  readonly #stepDown: QuotaStepDown | undefined;

  constructor(options: RateLimitedLlmOptions) {
    super({ model: options.delegate.model });
    validateOptions(options);
    this.name = options.name;
    this.delegate = options.delegate;
    this.#laneOf = options.laneOf;
    this.#clock = options.clock ?? realClock;
    this.semaphore =
      options.semaphore ?? new FairSemaphore(options.maxConcurrent as number, { clock: this.#clock });
    this.budget = options.budget;
    this.countedTokens = options.countedTokens ?? options.budget?.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.estimator = toEstimator(options.estimatedTokens, options.budget, this.countedTokens);
    this.#retry = new RetryPolicy({ ...options, clock: this.#clock });
    this.maxWaitMs = this.#retry.maxWaitMs;
    this.maxAttempts = this.#retry.maxAttempts;
    this.maxCallMs = options.maxCallMs ?? DEFAULT_MAX_CALL_MS;
    this.callCost = new CallCostModel({
      callMs: options.expectedCallMs,
      tokensPerCall: options.expectedTokensPerCall,
    });
    this.#admission = new AdmissionControl({
      name: this.name,
      semaphore: this.semaphore,
      budget: this.budget,
      estimator: this.estimator,
      clock: this.#clock,
      maxWaiting: options.maxWaiting,
    });
    this.#sweeper = new PermitSweeper(this.#clock);
    this.#stepDown = options.stepDown;
    this.metrics = createLimiterMetrics(options.registry);
    this.metrics.useMaxWait(this.name, this.maxWaitMs / 1000);
    this.#observers = new CallObservers({
      name: this.name,
      metrics: this.metrics,
      telemetry: new GenAiTelemetry(options),
      semaphore: this.semaphore,
      estimator: this.estimator,
      adaptiveLimit: options.adaptiveLimit,
      onCallEnd: options.onCallEnd,
    });
    this.#removeGaugeSource = this.#addGauges();
  }

  #addGauges(): () => void {
    // Permit time is the semaphore's own integral of permits held, read at scrape time: it
    // includes the wait for budget while holding a permit, and never lumps a long call.
    this.metrics.tally('permitSeconds', { limiter: this.name }, () => this.semaphore.heldPermitSeconds);
    return this.metrics.addSource({
      name: this.name,
      snapshot: () => ({
        ...this.snapshot(),
        budgetAvailable: this.budget?.available,
        budgetCapacity: this.budget?.capacity,
        budgetWindowTokens: this.budget?.windowTokens,
        budgetWindowLimit: this.budget?.windowLimit,
        maxWaitSeconds: this.maxWaitMs / 1000,
        doorOldestWaitSeconds: this.doorWaiters.oldestWaitMs(this.#clock.now()) / 1000,
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
    const lane = this.#laneOf?.(request);
    const admitted = currentRequest();
    const channel = new ResponseChannel<LlmResponse>();
    const state = new CallState(this.#reclaim);
    void this.#drive({ request, stream, agent, lane, admitted }, channel, abortSignal, state);
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
    if (!state.permit || state.ended) return;
    // Cancel first, so the call's end is reported before its permit passes to the next waiter.
    state.cancel(new MaxCallTimeExceeded(this.name, this.maxCallMs));
    if (state.permit.release()) this.metrics.permitsReclaimed.inc({ limiter: this.name });
  };

  /** Admission, attempts, release and accounting for one model call. Never rejects. */
  async #drive(
    call: ModelCall,
    channel: ResponseChannel<LlmResponse>,
    callerSignal: AbortSignal | undefined,
    state: CallState,
  ): Promise<void> {
    const { request, stream, agent, lane, admitted: inRequest } = call;
    const start = this.#clock.now();
    const stopFollowing = callerSignal && followCallerAbort(callerSignal, state);
    const watch = this.#observers.start(request, agent, request.model ?? this.model);
    // A call of an admitted request is never cut for time by the limiter: it waits (in
    // admission order) until the later of maxWait and its request's deadline.
    const cutoff = callCutoff(start, this.maxWaitMs, inRequest?.deadline);
    const pending = this.#admission.admit({
      request,
      agent,
      lane: lane === undefined ? undefined : { lane },
      start,
      deadline: cutoff.deadline,
      deadlineIsRequest: cutoff.isRequest,
      signal: state.controller.signal,
      watch,
      priority: inRequest?.admittedAt,
      funding: inRequest?.fundingOf(this, agent) ?? BUDGET_FUNDED,
    });
    // Uncontended calls are admitted synchronously; only a call that must wait pays for the async path.
    const admission = pending instanceof Promise ? await pending : pending;
    const admittedAt = this.#clock.now();
    const timing = { start, admittedAt, waitMs: admittedAt - start };
    let result: AttemptsResult;
    if (admission.kind === 'refused') {
      watch.admission(admission.acquireOutcome, timing.waitMs, 0);
      result = { outcome: admission.outcome, error: admission.error, attempts: 0, rateLimited: false };
    } else {
      watch.admission('acquired', timing.waitMs, admission.reserved);
      if (inRequest) {
        // Only where a call's cost is learned beyond its request's message (input counted).
        if (countsInput(this.countedTokens) && inRequest.messageTokens > 0) state.carriesMessage = inRequest.carriesMessage(request.contents);
        this.callCost.observeStart(agent, admittedAt - inRequest.admittedAt, inRequest.startedCall(this, agent));
      }
      state.permit = admission.permit;
      // The safety net: one sweeper per wrapper reclaims a permit still held at the deadline.
      state.deadline = permitReclaimAt(admittedAt, this.maxCallMs);
      this.#sweeper.add(state);
      result = await this.#attempts(request, stream, state, channel, timing.waitMs, watch);
    }
    stopFollowing?.();
    this.#finish(agent, state, channel, admission, timing, result, watch, inRequest);
  }

  /** Delegate calls until one succeeds, fails for good, or the retry policy gives up. */
  async #attempts(
    request: LlmRequest,
    stream: boolean,
    state: CallState,
    channel: ResponseChannel<LlmResponse>,
    waitMs: number,
    watch: CallWatch,
  ): Promise<AttemptsResult> {
    const signal = state.controller.signal;
    this.#retry.recordCall();
    let attempts = 0;
    let rateLimited = false;
    let backoffWaited = 0;
    for (;;) {
      attempts++;
      try {
        // The delegate runs inside the call span's context when there is a trace.
        const callContext = watch.callContext;
        await (callContext
          ? context.with(callContext, () => this.#pump(request, stream, state, channel))
          : this.#pump(request, stream, state, channel));
        return { outcome: 'ok', error: undefined, attempts, rateLimited };
      } catch (err) {
        if (signal.aborted) return { outcome: abortOutcome(signal.reason), error: signal.reason, attempts, rateLimited };
        if (!this.#retry.isRateLimited(err)) return { outcome: 'error', error: err, attempts, rateLimited };
        rateLimited = true;
        // The provider named when it takes calls again: the budget admits nothing before then.
        const providerDelayMs = this.#retry.providerDelayMs(err);
        watch.rateLimited(providerDelayMs);
        if (providerDelayMs !== undefined) this.budget?.pauseFor?.(providerDelayMs);
        this.#stepDown?.onRateLimited({ quota: quotaNamedBy(err), retryAfterMs: providerDelayMs });
        // Partial output already reached the consumer: a retry would show it twice.
        if (state.yielded) return { outcome: 'rate_limited', error: err, attempts, rateLimited };
        const decision = this.#retry.decide(err, attempts, waitMs + backoffWaited);
        if (decision.kind === 'give_up') {
          const error = new RateLimitExhausted(this.name, decision.reason, attempts, err);
          return { outcome: 'rate_limited', error, attempts, rateLimited };
        }
        watch.retrying(attempts, decision.delayMs);
        try {
          await sleep(this.#clock, decision.delayMs, signal);
        } catch (reason) {
          return { outcome: abortOutcome(reason), error: reason, attempts, rateLimited };
        }
        backoffWaited += decision.delayMs;
      }
    }
  }

  /** The provider call is over: release, settle tokens, report, then let the consumer see the end. */
  #finish(
    agent: string,
    state: CallState,
    channel: ResponseChannel<LlmResponse>,
    admission: Admission,
    timing: { readonly start: number; readonly admittedAt: number; readonly waitMs: number },
    result: AttemptsResult,
    watch: CallWatch,
    inRequest: AdmittedRequest | undefined,
  ): void {
    const end = this.#clock.now();
    const admitted = admission.kind === 'admitted';
    if (admitted) this.#sweeper.delete(state);
    const inFlight = this.semaphore.inUse;
    state.permit?.release();
    const usage = state.finalUsage ?? state.lastPartialUsage;
    const reserved = admitted ? admission.reserved : 0;
    const actual = this.#counted(usage) ?? reserved;
    if (admitted && admission.ticket) this.budget?.reconcile(admission.ticket, actual);
    const { outcome, error, attempts, rateLimited } = result;
    const report: CallReport = {
      limiter: this.name,
      agent,
      outcome,
      waitMs: timing.waitMs,
      reservedTokens: reserved,
      actualTokens: actual,
      attempts,
      durationMs: end - timing.start,
    };
    const callMs = end - timing.admittedAt;
    watch.ended(report, { admitted, callMs, usage, rateLimited, error, inFlight });
    // Learned beyond the request's message where it counts and the call carried it: a request funds its own message on top.
    if (outcome === 'ok' && usage) {
      this.callCost.observe(agent, actual, callMs, {
        messageTokens: countsInput(this.countedTokens) ? inRequest?.messageTokens : 0,
        carriesMessage: state.carriesMessage,
      });
    }
    inRequest?.recordCall(this, this.name, { ok: outcome === 'ok', countedTokens: admitted ? actual : 0 });
    state.ended = true;
    if (outcome === 'ok') channel.end();
    else channel.fail(error);
  }

  /** The call's counted tokens; a throwing countedTokens function counts as unreported (the estimate stands). */
  #counted(usage: Usage | undefined): number | undefined {
    try {
      return countTokens(this.countedTokens, usage);
    } catch {
      return undefined;
    }
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
}

/** One model call as the consumer asked for it. */
interface ModelCall {
  readonly request: LlmRequest;
  readonly stream: boolean;
  readonly agent: string;
  readonly lane: string | undefined;
  /** The admitted request it belongs to (read in the consumer's async context), if any. */
  readonly admitted: AdmittedRequest | undefined;
}

/** What the attempts of an admitted call came to. */
interface AttemptsResult {
  readonly outcome: CallOutcome;
  readonly error: unknown;
  readonly attempts: number;
  /** The provider answered 429 at least once. */
  readonly rateLimited: boolean;
}

/** An abort ends a call as cancelled, unless the sweeper reclaimed it (an error: it ran too long). */
function abortOutcome(reason: unknown): CallOutcome {
  return reason instanceof MaxCallTimeExceeded ? 'error' : 'cancelled';
}

/** Cancel the call when the caller aborts; returns the function that stops following. */
function followCallerAbort(callerSignal: AbortSignal, state: CallState): () => void {
  if (callerSignal.aborted) state.cancel(callerSignal.reason);
  const onAbort = () => state.cancel(callerSignal.reason);
  callerSignal.addEventListener('abort', onAbort, { once: true });
  return () => callerSignal.removeEventListener('abort', onAbort);
}

function toEstimator(
  option: RateLimitedLlmOptions['estimatedTokens'],
  budget: Budget | undefined,
  countedTokens: CountedTokens,
): TokenEstimator {
  if (typeof option === 'number') return { estimate: () => option };
  if (typeof option === 'function') return { estimate: (request) => option(request) };
  return option ?? new UsageEstimator({ maxTokens: budget?.capacity, countedTokens });
}
