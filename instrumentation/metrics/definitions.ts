// The one source of truth for the limiter's metric names, help texts, labels and buckets.
// The wrapper registers them, the dashboards and alert specs build their queries from
// them, and the tests read them: nobody retypes a metric name as a string elsewhere.
import { MAX_WAIT_MS_LIMIT } from '../defaults.ts';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricDefinition<L extends string = string> {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly labelNames: readonly L[];
  /** Histogram bucket upper bounds, in the metric's base unit. */
  readonly buckets?: readonly number[];
}

/**
 * Acquire-time buckets in seconds: resolve both a 2 ms wait (uncontended) and a 20 s wait
 * (the worked example's maxWait), with roughly doubling steps between.
 */
export const ACQUIRE_SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 12, 16, 20, 25, 30, 60,
] as const;

/** The largest maxWait acquireSecondsBuckets() takes, s: the largest maxWaitMs a limiter accepts. */
export const MAX_WAIT_SECONDS_LIMIT = MAX_WAIT_MS_LIMIT / 1000;

/**
 * Acquire-time buckets for a limiter whose maxWait is `maxWaitSeconds`: the default buckets
 * below maxWait, maxWait itself, then one bound 5 % above it for the waits that expire a
 * little late (timer lag). Nothing waits longer, so no quantile can interpolate past that
 * last bound. A maxWait above the default range is reached by doubling the last bound.
 */
export function acquireSecondsBuckets(maxWaitSeconds: number): number[] {
  if (!Number.isFinite(maxWaitSeconds) || maxWaitSeconds < 0.001 || maxWaitSeconds > MAX_WAIT_SECONDS_LIMIT) {
    throw new RangeError(`maxWaitSeconds must be between 0.001 and ${MAX_WAIT_SECONDS_LIMIT}, got ${maxWaitSeconds}`);
  }
  const bounds: number[] = ACQUIRE_SECONDS_BUCKETS.filter((b) => b < maxWaitSeconds);
  while (bounds.length > 0 && bounds[bounds.length - 1] * 2 < maxWaitSeconds) bounds.push(bounds[bounds.length - 1] * 2);
  const justAbove = Number((maxWaitSeconds * 1.05).toPrecision(6));
  return [...bounds, maxWaitSeconds, justAbove];
}

/** Request admission-wait buckets in seconds: the acquire buckets, then up to the longest request deadline. */
export const ADMISSION_SECONDS_BUCKETS = [...ACQUIRE_SECONDS_BUCKETS, 120, 300, 600] as const;

/** Model-call buckets in seconds: the worked example's calls take about 8 s. */
export const CALL_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 10, 12, 16, 20, 30, 60, 120] as const;

export const limiterMetrics = {
  permitsInUse: {
    name: 'llm_limiter_permits_in_use',
    help: 'Permits held right now.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  permitsLimit: {
    name: 'llm_limiter_permits_limit',
    help: 'Current maximum number of permits (moves under adaptive concurrency).',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  waitingCalls: {
    name: 'llm_limiter_waiting_calls',
    help: 'Calls queued for a permit or for token budget.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  acquireDuration: {
    name: 'llm_limiter_acquire_duration_seconds',
    help: 'Time from call to admission (permit and budget), by outcome: acquired, timeout, aborted.',
    type: 'histogram',
    labelNames: ['limiter', 'agent', 'outcome'],
    buckets: ACQUIRE_SECONDS_BUCKETS,
  },
  tokensReserved: {
    name: 'llm_limiter_tokens_reserved_total',
    help: 'Tokens reserved up front from the estimate.',
    type: 'counter',
    labelNames: ['limiter', 'agent'],
  },
  tokensActual: {
    name: 'llm_limiter_tokens_actual_total',
    help: 'Tokens the provider reported (estimate kept when no usage was reported).',
    type: 'counter',
    labelNames: ['limiter', 'agent'],
  },
  budgetAvailable: {
    name: 'llm_limiter_budget_available_tokens',
    help: 'Token bucket level; negative after an underestimate is reconciled.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  budgetCapacity: {
    name: 'llm_limiter_budget_capacity_tokens',
    help: 'Token bucket capacity (tokens per minute).',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  doorOldestWait: {
    name: 'llm_limiter_door_oldest_wait_seconds',
    help: 'How long the oldest user request now waiting at the door of request admission has waited (0 when none): it rises while requests queue, before any is shed.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  budgetWindowLimit: {
    name: 'llm_limiter_budget_window_limit_tokens',
    help: 'Tokens the budget admits per window now: the capacity unless a 429 stepped it down (static, central) or an adaptive limit moved it.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  budgetWindow: {
    name: 'llm_limiter_budget_window_tokens',
    help: 'Tokens admitted in the last 60 s as the rolling-minute guard counts them (actual usage once reconciled); at most the capacity plus reconciled debt. Absent without the guard.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  rateLimited: {
    name: 'llm_limiter_rate_limited_total',
    help: 'Provider rate-limit errors (429) seen, every attempt.',
    type: 'counter',
    labelNames: ['limiter', 'agent'],
  },
  retries: {
    name: 'llm_limiter_retries_total',
    help: 'Retries issued after a rate-limit error.',
    type: 'counter',
    labelNames: ['limiter', 'agent'],
  },
  timeouts: {
    name: 'llm_limiter_timeouts_total',
    help: 'Calls refused for want of a permit or budget, by reason: permit, budget (maxWait expired), queue_full (maxWaiting calls already waiting: refused at once), request_deadline (its request\'s deadline leaves no time for the call: not started).',
    type: 'counter',
    labelNames: ['limiter', 'agent', 'reason'],
  },
  calls: {
    name: 'llm_limiter_calls_total',
    help: 'Finished calls by outcome: ok, error, rate_limited, cancelled, timeout.',
    type: 'counter',
    labelNames: ['limiter', 'agent', 'outcome'],
  },
  callDuration: {
    name: 'llm_limiter_call_duration_seconds',
    help: 'Model call time after admission, retries included.',
    type: 'histogram',
    labelNames: ['limiter', 'agent'],
    buckets: CALL_SECONDS_BUCKETS,
  },
  permitsReclaimed: {
    name: 'llm_limiter_permits_reclaimed_total',
    help: 'Permits reclaimed because a call held one past the maximum call time (a leak).',
    type: 'counter',
    labelNames: ['limiter'],
  },
  maxWait: {
    name: 'llm_limiter_max_wait_seconds',
    help: 'The configured maxWait: the longest a call waits for a permit and budget before it times out.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
  permitSeconds: {
    name: 'llm_limiter_permit_seconds_total',
    help: "Permit-seconds held: the time integral of permits in use (budget wait included), advancing while permits are held; its rate is the exact mean number of permits in use (Little's law L).",
    type: 'counter',
    labelNames: ['limiter'],
  },
  budgetCentralUnavailable: {
    name: 'llm_limiter_budget_central_unavailable_total',
    help: 'Token reservations made while the central (Redis) budget was unreachable, by handling: local_share (served by the local static share), refused.',
    type: 'counter',
    labelNames: ['limiter', 'handling'],
  },
  requests: {
    name: 'llm_limiter_requests_total',
    help: 'User requests by outcome: admitted (funded whole at the door), shed (turned away whole before any model call), abandoned (the client left while waiting at the door), completed (ended with every call ok), partial (ended with some call not ok).',
    type: 'counter',
    labelNames: ['limiter', 'outcome'],
  },
  requestAdmission: {
    name: 'llm_limiter_request_admission_duration_seconds',
    help: 'Time from a request\'s arrival to its admission decision, by outcome: admitted, shed, abandoned (the client left first).',
    type: 'histogram',
    labelNames: ['limiter', 'outcome'],
    buckets: ADMISSION_SECONDS_BUCKETS,
  },
  wastedTokens: {
    name: 'llm_limiter_wasted_tokens_total',
    help: 'Counted tokens spent by requests that did not end wholly ok (partial requests): quota that bought no answer.',
    type: 'counter',
    labelNames: ['limiter'],
  },
  requestDeadline: {
    name: 'llm_limiter_request_deadline_seconds',
    help: 'The configured request deadline: an admitted request is funded to finish within it, and a call that cannot finish before it is not started.',
    type: 'gauge',
    labelNames: ['limiter'],
  },
} as const satisfies Record<string, MetricDefinition>;

export type LimiterMetricKey = keyof typeof limiterMetrics;

export const CALL_OUTCOMES = ['ok', 'error', 'rate_limited', 'cancelled', 'timeout'] as const;
/**
 * Why a call was refused admission: maxWait expired waiting for a permit or for budget, the
 * wait queue was full (maxWaiting), or its request's deadline leaves no time for the call.
 */
export const TIMEOUT_REASONS = ['permit', 'budget', 'queue_full', 'request_deadline'] as const;
/** Request outcomes: at the door (admitted, shed, abandoned: the client left while waiting), then at the end (completed, partial). */
export const REQUEST_OUTCOMES = ['admitted', 'shed', 'abandoned', 'completed', 'partial'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];
export type TimeoutReason = (typeof TIMEOUT_REASONS)[number];
