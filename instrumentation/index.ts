// Public entry of quotascope's instrumentation: what a user wires around an ADK model. The
// Redis-backed shared budget is in ./redis.ts (it loads the redis client) and the test
// helpers in ./testing.ts; everything else is internal.

export {
  type Budget,
  type BudgetFunding,
  type BudgetSharing,
  type BudgetTicket,
  CENTRAL_OUTAGE_POLICIES,
  type CentralOutagePolicy,
  type CentralSharing,
  LOCAL_SHARING,
  type LocalSharing,
  type ReserveOptions,
} from './budget/budget.ts';
export { COUNTED_TOKEN_KINDS, type CountedTokenKind, type CountedTokens, type Usage } from './counted-tokens.ts';
export {
  DEFAULT_COUNTED_TOKENS,
  DEFAULT_BACKOFF,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_CALL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_MIN_RETRIES,
  DEFAULT_RETRY_RATIO,
  DEFAULT_RETRY_WINDOW_MS,
  DEFAULT_WINDOW_MS,
  MAX_WINDOW_MS,
  MIN_WINDOW_MS,
  MAX_WAITING_LIMIT,
  ADMISSION_MODES,
  type AdmissionMode,
  DEFAULT_ADMISSION_MODE,
  DEFAULT_REQUEST_DEADLINE_MS,
  MAX_REQUEST_DEADLINE_MS,
  MIN_REQUEST_DEADLINE_MS,
} from './defaults.ts';
export { ERROR_CODES, RateLimitExhausted, RateLimitTimeout, RequestShed, type ShedReason } from './errors.ts';
export { RequestAdmission, type RequestAdmissionOptions, type RequestRunOptions } from './admission/request-admission.ts';
export { redactUrl } from './redact-url.ts';
export { type TokenEstimator, UsageEstimator } from './estimator.ts';
export type { AdaptiveLimit } from './limits/adaptive-limit.ts';
export { AimdLimit, type AimdOptions } from './limits/aimd.ts';
export { QuotaStepDown, type QuotaStepDownOptions, type RateLimitSignal, type StepDownVerdict } from './limits/quota-step-down.ts';
export { type QuotaShare, replicaShare } from './limits/replica-share.ts';
export { CALL_OUTCOMES, limiterMetrics, type MetricDefinition, REQUEST_OUTCOMES, type RequestOutcome } from './metrics/definitions.ts';
export { createLimiterMetrics } from './metrics/limiter-metrics.ts';
export type { CallOutcome, CallReport } from './call-observers.ts';
export { isRateLimitedLlm, type LimiterSnapshot, RateLimitedLlm, type RateLimitedLlmOptions } from './rate-limited-llm.ts';
export { FairSemaphore, type FairSemaphoreOptions } from './semaphore.ts';
export { TokenBudget, type TokenBudgetOptions } from './budget/token-budget.ts';
export { declareRunsNode } from './tree/runs-node.ts';
