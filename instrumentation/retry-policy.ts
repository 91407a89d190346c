// Whether a failed delegate call is retried, and after how long. Only provider rate limits
// are retried; a per-day quota never is; the delay is the provider's own when it names one
// (plus jitter), else full-jitter backoff; every retry must fit the call's bounded wait and
// the retry budget shared by the wrapper's calls.
import type { BackoffOptions } from './backoff.ts';
import { fullJitterDelayMs } from './backoff.ts';
import type { Clock } from './clock.ts';
import { DEFAULT_BACKOFF, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_WAIT_MS } from './defaults.ts';
import type { ExhaustedReason } from './errors.ts';
import { isDailyQuotaError, isRateLimitError, serverRetryDelayMs } from './rate-limit-errors.ts';
import { RetryBudget, type RetryBudgetOptions } from './retry-budget.ts';

/** The retry settings of RateLimitedLlmOptions. */
export interface RetrySettings {
  /** Bound on the whole wait for admission (permit + budget) and on retry delays, ms (default DEFAULT_MAX_WAIT_MS). */
  readonly maxWaitMs?: number;
  /** Delegate calls per model call, the first included (default DEFAULT_MAX_ATTEMPTS). */
  readonly maxAttempts?: number;
  /** Full-jitter backoff window (default DEFAULT_BACKOFF). */
  readonly backoff?: BackoffOptions;
  /** Retry budget instance (to share) or its options (default: DEFAULT_RETRY_RATIO of recent calls). */
  readonly retryBudget?: RetryBudget | RetryBudgetOptions;
  /** Which errors are provider rate limits, the only ones retried (default: 429 / RESOURCE_EXHAUSTED). */
  readonly isRateLimited?: (error: unknown) => boolean;
  /** The server's requested delay in ms, or undefined. */
  readonly retryAfterMs?: (error: unknown) => number | undefined;
  /** True when the rate limit cannot clear soon (per-day quota): fail at once. */
  readonly isDailyQuota?: (error: unknown) => boolean;
  /** [0, 1) source for backoff jitter. */
  readonly random?: () => number;
}

export interface RetryPolicyOptions extends RetrySettings {
  /** The clock of the retry budget's window. */
  readonly clock: Clock;
}

export type RetryDecision = { readonly kind: 'retry'; readonly delayMs: number } | { readonly kind: 'give_up'; readonly reason: ExhaustedReason };

export class RetryPolicy {
  readonly maxWaitMs: number;
  readonly maxAttempts: number;
  readonly isRateLimited: (error: unknown) => boolean;
  readonly #backoff: BackoffOptions;
  readonly #budget: RetryBudget;
  readonly #retryAfterMs: (error: unknown) => number | undefined;
  readonly #isDailyQuota: (error: unknown) => boolean;
  readonly #random: () => number;

  constructor(options: RetryPolicyOptions) {
    this.maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.isRateLimited = options.isRateLimited ?? isRateLimitError;
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.#budget =
      options.retryBudget instanceof RetryBudget
        ? options.retryBudget
        : new RetryBudget({ clock: options.clock, ...options.retryBudget });
    this.#retryAfterMs = options.retryAfterMs ?? serverRetryDelayMs;
    this.#isDailyQuota = options.isDailyQuota ?? isDailyQuotaError;
    this.#random = options.random ?? Math.random;
  }

  /** The provider's retry delay on a rate-limit error (RetryInfo, Retry-After), ms; undefined when it names none or the quota is per day. */
  providerDelayMs(error: unknown): number | undefined {
    return this.#isDailyQuota(error) ? undefined : this.#retryAfterMs(error);
  }

  /** Count a call (its first attempt) toward the retry budget. */
  recordCall(): void {
    this.#budget.recordCall();
  }

  /** After `attempts` delegate calls and `waitedMs` of waiting, decide on a rate-limit error. */
  decide(error: unknown, attempts: number, waitedMs: number): RetryDecision {
    if (this.#isDailyQuota(error)) return { kind: 'give_up', reason: 'daily_quota' };
    if (attempts >= this.maxAttempts) return { kind: 'give_up', reason: 'attempts' };
    const serverDelay = this.#retryAfterMs(error);
    // Honour the server's delay; add up to one base delay of jitter so clients told the same delay spread out.
    const delayMs =
      serverDelay !== undefined
        ? serverDelay + this.#random() * this.#backoff.baseMs
        : fullJitterDelayMs(attempts - 1, this.#backoff, this.#random);
    const left = this.maxWaitMs - waitedMs;
    if ((serverDelay ?? delayMs) > left) return { kind: 'give_up', reason: 'delay_exceeds_wait' };
    if (!this.#budget.tryRetry()) return { kind: 'give_up', reason: 'retry_budget' };
    return { kind: 'retry', delayMs: Math.min(delayMs, Math.max(0, left)) };
  }
}
