// Public API of quotascope's instrumentation: the rate-limited ADK model wrapper, the
// primitives it is built from, its errors and its metric definitions.

export type { AdmissionTicket, Budget, ReserveOptions } from './budget.ts';
export { type BackoffOptions, DEFAULT_BACKOFF, fullJitterDelayMs } from './backoff.ts';
export { type Clock, ManualClock, realClock, sleep } from './clock.ts';
export {
  BudgetRequestTooLarge,
  CentralBudgetUnavailable,
  DeadlineExceeded,
  ERROR_CODES,
  type ErrorCode,
  type ExhaustedReason,
  MaxCallTimeExceeded,
  RateLimitExhausted,
  RateLimitTimeout,
  type TimeoutReason,
} from './errors.ts';
export { estimateInputTokens, type TokenEstimator, UsageEstimator, type UsageEstimatorOptions } from './estimator.ts';
export type { AdaptiveLimit, CallSample } from './limits/adaptive-limit.ts';
export { AimdLimit, type AimdOptions } from './limits/aimd.ts';
export { type QuotaShare, type QuotaShareInput, replicaShare } from './limits/replica-share.ts';
export {
  ACQUIRE_OUTCOMES,
  ACQUIRE_SECONDS_BUCKETS,
  CALL_OUTCOMES,
  CALL_SECONDS_BUCKETS,
  CENTRAL_UNAVAILABLE_HANDLING,
  type LimiterMetricKey,
  type MetricDefinition,
  limiterMetrics,
  TIMEOUT_REASONS,
} from './metrics/definitions.ts';
export { type AnyRegistry, createLimiterMetrics, type LimiterGaugeSource, LimiterMetrics } from './metrics/limiter-metrics.ts';
export { isDailyQuotaError, isRateLimitError, serverRetryDelayMs } from './rate-limit-errors.ts';
export {
  agentNameOf,
  type CallOutcome,
  type CallReport,
  type LimiterSnapshot,
  RateLimitedLlm,
  type RateLimitedLlmOptions,
} from './rate-limited-llm.ts';
export { type BudgetRedisClient, type BudgetRedisOptions, connectBudgetRedis, redactUrl } from './redis-client.ts';
export { RedisTokenBudget, type RedisTokenBudgetOptions, type RedisScriptClient, TOKEN_BUCKET_SCRIPT } from './redis-token-budget.ts';
export { RetryBudget, type RetryBudgetOptions } from './retry-budget.ts';
export { type AcquireOptions, FairSemaphore, type FairSemaphoreOptions, type Permit } from './semaphore.ts';
export { CALL_SPAN_NAME, GenAiTelemetry, SPAN_ATTRIBUTES, WAIT_SPAN_NAME } from './telemetry.ts';
export { TokenBudget, type TokenBudgetOptions } from './token-budget.ts';
export { RollingWindow } from './rolling-window.ts';
