// The wrapper's own errors carry a JSON message with a stable code and a readable text, so
// a load test can count them per branch. ADK 2.0.0 (LlmAgent.runAndHandleError) builds the
// error event from the Google error shape: errorCode = JSON.parse(message).error.code and
// errorMessage = .error.message. The message therefore holds both the flat fields
// ({code, reason, message}) and that `error` object.
import type { TimeoutReason } from './metrics/definitions.ts';

export type { TimeoutReason } from './metrics/definitions.ts';

export const ERROR_CODES = {
  timeout: 'RATE_LIMIT_TIMEOUT',
  rateLimited: 'RATE_LIMITED',
  maxCallTime: 'MAX_CALL_TIME_EXCEEDED',
  budgetUnavailable: 'BUDGET_UNAVAILABLE',
  requestShed: 'REQUEST_SHED',
} as const;

export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

function jsonMessage(code: ErrorCode, fields: Record<string, unknown>, text: string): string {
  return JSON.stringify({ code, ...fields, message: text, error: { code, message: text, ...fields } });
}

/**
 * A wrapper error about one limiter, for a reason: the JSON message holds the code, the
 * reason and `fields`, with the readable text.
 */
abstract class LimiterError<R extends string> extends Error {
  readonly reason: R;
  readonly limiter: string;

  constructor(code: ErrorCode, limiter: string, reason: R, fields: Record<string, unknown>, text: string, options?: ErrorOptions) {
    super(jsonMessage(code, { reason, ...fields }, text), options);
    this.name = new.target.name;
    this.reason = reason;
    this.limiter = limiter;
  }
}

const timeoutText: Record<TimeoutReason, (waitedMs: number) => string> = {
  permit: (ms) => `no permit within ${ms} ms (maxWaitMs)`,
  budget: (ms) => `no token budget within ${ms} ms (maxWaitMs)`,
  queue_full: (ms) => `maxWaiting calls are already waiting: refused after ${ms} ms`,
  request_deadline: (ms) => `its request's deadline leaves no time for the call: not started after ${ms} ms`,
};

/** The bounded wait (maxWaitMs) for a permit or for token budget expired, or the wait queue was full (maxWaiting). */
export class RateLimitTimeout extends LimiterError<TimeoutReason> {
  readonly code = ERROR_CODES.timeout;
  readonly waitedMs: number;

  constructor(limiter: string, reason: TimeoutReason, waitedMs: number) {
    super(ERROR_CODES.timeout, limiter, reason, {}, `limiter "${limiter}": ${timeoutText[reason](Math.round(waitedMs))}`);
    this.waitedMs = waitedMs;
  }
}

/** What each reason means: why a provider 429 was not retried any further, why a request was shed at the door. */
const reasonText = {
  exhausted: {
    attempts: 'every attempt was rate limited',
    retry_budget: 'the retry budget (share of recent calls) is spent',
    delay_exceeds_wait: 'the server asked to wait longer than the remaining maxWaitMs',
    daily_quota: 'a per-day quota is exhausted; retrying today will not help',
  },
  shed: {
    deadline: 'its model calls cannot be funded in time to finish within the request deadline',
    too_large: 'its model calls need more tokens than one window of the budget holds',
    lane: 'its lane is shed first while other requests wait',
    budget_unavailable: 'the shared token budget is unreachable and its outage policy is fail-closed',
  },
} as const;

/** Why a provider rate-limit error was not retried any further. */
export type ExhaustedReason = keyof typeof reasonText.exhausted;
/** Why a request was shed at the door. */
export type ShedReason = keyof typeof reasonText.shed;

/** The provider answered 429 / RESOURCE_EXHAUSTED and the wrapper gave up. `cause` is the last provider error. */
export class RateLimitExhausted extends LimiterError<ExhaustedReason> {
  readonly code = ERROR_CODES.rateLimited;
  readonly attempts: number;

  constructor(limiter: string, reason: ExhaustedReason, attempts: number, cause: unknown) {
    const text = `limiter "${limiter}": provider rate limit after ${attempts} attempt(s): ${reasonText.exhausted[reason]}`;
    super(ERROR_CODES.rateLimited, limiter, reason, { attempts }, text, { cause });
    this.attempts = attempts;
  }
}

/** A provider call held its permit past maxCallMs: the permit was reclaimed and the call aborted. */
export class MaxCallTimeExceeded extends Error {
  readonly code = ERROR_CODES.maxCallTime;
  readonly limiter: string;

  constructor(limiter: string, maxCallMs: number) {
    const text = `limiter "${limiter}": provider call ran longer than maxCallMs (${maxCallMs} ms); permit reclaimed`;
    super(jsonMessage(ERROR_CODES.maxCallTime, {}, text));
    this.name = 'MaxCallTimeExceeded';
    this.limiter = limiter;
  }
}

/** A wait (semaphore or budget) reached its deadline. Internal: the wrapper maps it to RateLimitTimeout. */
export class DeadlineExceeded extends Error {
  constructor(what: string) {
    super(`${what}: deadline exceeded`);
    this.name = 'DeadlineExceeded';
  }
}

/** A token reservation that can never fit in the bucket. Fails at once instead of after maxWait. */
export class BudgetRequestTooLarge extends Error {
  readonly requested: number;
  readonly capacity: number;

  constructor(requested: number, capacity: number) {
    super(
      `token reservation of ${requested} exceeds the budget capacity of ${capacity} tokens (one minute of tokensPerMinute); lower the estimate or raise the budget`,
    );
    this.name = 'BudgetRequestTooLarge';
    this.requested = requested;
    this.capacity = capacity;
  }
}

/** A central budget's identity: the quota window and the configured limit it counts against. */
export interface BudgetIdentity {
  readonly windowMs: number;
  readonly tokensPerWindow: number;
}

const identityText = ({ windowMs, tokensPerWindow }: BudgetIdentity) => `window ${windowMs} ms, limit ${tokensPerWindow} tokens`;

/**
 * The central budget's Redis key belongs to another deployment: a window or a limit other
 * than this budget's. Nothing is counted in it; `retryAfterMs` is when the key expires if
 * the other deployment stops writing it.
 */
export class CentralBudgetConflict extends Error {
  readonly key: string;
  readonly retryAfterMs: number;

  constructor(key: string, held: BudgetIdentity, own: BudgetIdentity, retryAfterMs: number) {
    super(
      `key "${key}" holds another configuration (${identityText(held)}) than this deployment (${identityText(own)}): deployments sharing one quota use the same window and limit; give this one its own key`,
    );
    this.name = 'CentralBudgetConflict';
    this.key = key;
    this.retryAfterMs = Math.max(0, Math.ceil(retryAfterMs));
  }
}

/** Why a central budget cannot be used, in words: a key of another configuration, a Redis key of the wrong type, or Redis unreachable. */
export function centralProblemText(key: string, cause: unknown): string {
  const detail = cause instanceof Error ? cause.message : String(cause);
  if (cause instanceof CentralBudgetConflict) return `central token budget ${detail}`;
  if (detail.startsWith('WRONGTYPE')) return `central token budget "${key}" is a Redis key of the wrong type, not the budget's hash (${detail})`;
  return `central token budget "${key}" is unreachable (${detail})`;
}

/**
 * The central (Redis) token budget cannot be used (unreachable, a key of the wrong type, or a
 * key of another configuration) and its outage policy is fail-closed (RedisTokenBudget's
 * centralOutage), or the key conflicts. `cause` is the Redis error; `retryAfterMs`, when
 * known, is when the budget may be usable again.
 */
export class CentralBudgetUnavailable extends Error {
  readonly code = ERROR_CODES.budgetUnavailable;
  readonly key: string;
  readonly retryAfterMs: number | undefined;

  constructor(key: string, cause: unknown) {
    const policy = cause instanceof CentralBudgetConflict ? 'reservation refused' : 'the outage policy is fail-closed: reservation refused';
    const text = `${centralProblemText(key, cause)}; ${policy}`;
    super(jsonMessage(ERROR_CODES.budgetUnavailable, { key }, text), { cause });
    this.name = 'CentralBudgetUnavailable';
    this.key = key;
    this.retryAfterMs = cause instanceof CentralBudgetConflict ? cause.retryAfterMs : undefined;
  }
}

/**
 * A whole request turned away at the door, before any model call: it could not be funded
 * within its deadline. `retryAfterMs` is when the budget could fund it again.
 */
export class RequestShed extends LimiterError<ShedReason> {
  readonly code = ERROR_CODES.requestShed;
  readonly retryAfterMs: number;
  /** The readable text (the message is the JSON form). */
  readonly text: string;

  constructor(limiter: string, reason: ShedReason, retryAfterMs: number) {
    const retryAfter = Math.max(0, Math.ceil(retryAfterMs));
    const text = `request shed by limiter "${limiter}": ${reasonText.shed[reason]}; retry after ${retryAfter} ms`;
    super(ERROR_CODES.requestShed, limiter, reason, { retryAfterMs: retryAfter }, text);
    this.text = text;
    this.retryAfterMs = retryAfter;
  }
}

/** How one branch of a run ended, as read from its events (budget_unavailable: the central budget failing closed). */
export const BRANCH_OUTCOMES = ['ok', 'timeout', 'rate_limited', 'budget_unavailable', 'error'] as const;
export type BranchOutcome = (typeof BRANCH_OUTCOMES)[number];

/**
 * ADK 2.0 takes `errorCode` from `JSON.parse(message).error.code` and falls back to
 * 'UNKNOWN_ERROR' with the raw message otherwise; a wrapper error whose JSON message has
 * a top-level `code` therefore arrives as UNKNOWN_ERROR with that JSON as errorMessage.
 * Read the code from either place.
 */
export function effectiveErrorCode(errorCode: string, errorMessage: string | undefined): string {
  if (errorCode !== 'UNKNOWN_ERROR' || !errorMessage) return errorCode;
  try {
    const parsed: unknown = JSON.parse(errorMessage);
    if (typeof parsed === 'object' && parsed !== null) {
      const code = (parsed as { code?: unknown; error?: { code?: unknown } }).code ?? (parsed as { error?: { code?: unknown } }).error?.code;
      if (typeof code === 'string' || typeof code === 'number') return String(code);
    }
  } catch {
    // Not JSON: a plain error text.
  }
  return errorCode;
}

/** The outcome an error code stands for: the wrapper's codes, or a provider's 429 by number or by status. */
export function outcomeOfErrorCode(code: string): BranchOutcome {
  if (code === ERROR_CODES.timeout) return 'timeout';
  if (code === ERROR_CODES.rateLimited || code === '429' || code === 'RESOURCE_EXHAUSTED') return 'rate_limited';
  if (code === ERROR_CODES.budgetUnavailable) return 'budget_unavailable';
  return 'error';
}
