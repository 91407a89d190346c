// Additive-increase / multiplicative-decrease limits (as in Netflix's concurrency-limits
// AIMDLimit), on the rate that binds: the permits (concurrency) and, given a budget, the
// tokens it admits per window. Passed to RateLimitedLlm as `adaptiveLimit`, it moves the
// semaphore's limit; the budget's window limit it moves itself (budget.setWindowLimit).
// Each replica runs its own: no coordination, each learns its part of the quota from the
// 429s its own calls get.
//
// - Decrease: a provider 429 (heard the moment it is answered, onRateLimited) or a call
//   slower than latencyThresholdMs multiplies the permits by backoffRatio, and cuts the
//   tokens per window, at most once per window. The cut goes just below the rate that drew
//   the 429, not a blind halving. A provider that names its retry delay (a fixed window is
//   full until its end) tells how much of its window had passed: what this replica admitted
//   since the window began (onAdmitted, in estimates: scaled by what its own budget counted
//   over its last window against them; else its last window's tokens scaled to that part)
//   is its share of a quota the fleet just filled. The limit goes shareMargin below that
//   share, no lower than half the limit. Without a retry delay the cut is tokenBackoffRatio
//   of the rate in use (its last window's tokens when at least half its limit, else the
//   limit). The share (or the rate in use) is remembered as the ceiling. Later 429s in the
//   window, and a slow call admitted before the decrease, only hold back the next increase.
// - Increase: a success while the permits were used adds a permit. After each window in which
//   the budget bound (calls waited for tokens, or the window was nearly full) and no 429 came
//   (the window right after a decrease only confirms it), the window limit grows. While the
//   ceiling is trusted (ceilingWindows windows after the 429 that measured it; a later 429
//   measuring about the same share, or filling the provider's window in its last
//   2 × shareMargin, confirms it without extending the trust) it returns at once
//   to one step (tokenStep) short of it and stays there: no probe above a quota just measured
//   (a probe costs about one 429 per replica sending when the provider's window fills, since
//   replicas do not hear each other's 429s). Then the ceiling is forgotten, the quota may
//   have moved, and the limit probes upwards by additive steps that grow while the windows
//   stay clean (tokenStep, × tokenGrowth per clean window): a raised quota is used within
//   about ceilingWindows + 2 windows of the last 429.
import type { Budget } from '../budget/budget.ts';
import { type Clock, realClock } from '../clock.ts';
import { z } from 'zod';
import {
  AIMD_BACKOFF_RATIO,
  AIMD_CEILING_WINDOWS,
  AIMD_MAX_CEILING_WINDOWS,
  AIMD_MAX_TOKEN_GROWTH,
  AIMD_NEARLY_FULL,
  AIMD_SHARE_MARGIN,
  AIMD_TOKEN_BACKOFF_RATIO,
  AIMD_TOKEN_GROWTH,
  DEFAULT_WINDOW_MS,
  MAX_WINDOW_MS,
} from '../defaults.ts';
import { parseOptions } from '../limiter-options.ts';
import type { AdaptiveLimit, CallSample } from './adaptive-limit.ts';
import { AdmissionLog } from './admission-log.ts';

/** A budget AIMD can move: its window limit has a setter. */
export type AdaptiveBudget = Budget & Required<Pick<Budget, 'setWindowLimit' | 'windowLimit'>>;

export interface AimdOptions {
  /** Permits to start from. */
  readonly initial: number;
  readonly min?: number;
  readonly max: number;
  /** Factor applied to the permits on a congestion signal (default AIMD_BACKOFF_RATIO, 0.9). */
  readonly backoffRatio?: number;
  /** A call slower than this counts as congestion, ms (default: none). */
  readonly latencyThresholdMs?: number;
  /** The budget whose tokens per window AIMD moves too (TokenBudget, RedisTokenBudget); none: permits only. */
  readonly budget?: Budget;
  /** Lowest window limit (default 10 % of the budget's capacity); the highest is the capacity. */
  readonly minTokens?: number;
  /** Factor applied to the window limit on a congestion signal that names no retry delay (default AIMD_TOKEN_BACKOFF_RATIO, 0.8). */
  readonly tokenBackoffRatio?: number;
  /** How far below its share of the filled window a 429 naming a retry delay puts the window limit (default AIMD_SHARE_MARGIN, 0.05). */
  readonly shareMargin?: number;
  /** The window limit's first additive step above a forgotten ceiling, and the gap below a trusted one (default 2 % of the capacity). */
  readonly tokenStep?: number;
  /** The step's factor per further clean window (default AIMD_TOKEN_GROWTH, 16). */
  readonly tokenGrowth?: number;
  /** Windows a ceiling is trusted: no probe above it before (default AIMD_CEILING_WINDOWS, 9). */
  readonly ceilingWindows?: number;
  /** The window decisions are made in, ms (default: the budget's windowMs, else a minute). */
  readonly windowMs?: number;
  readonly clock?: Clock;
}

/** The options' numbers, each bounded (windowMs: the option, else the budget's, else a minute). */
const aimdOptionsSchema = z
  .object({
    min: z.int().min(1).default(1),
    max: z.int().min(1),
    backoffRatio: z.number().gt(0).lt(1).default(AIMD_BACKOFF_RATIO),
    windowMs: z.int().min(1).max(MAX_WINDOW_MS),
    tokenBackoffRatio: z.number().gt(0).lt(1).default(AIMD_TOKEN_BACKOFF_RATIO),
    shareMargin: z.number().min(0).lt(0.5).default(AIMD_SHARE_MARGIN),
    tokenGrowth: z.number().min(1).max(AIMD_MAX_TOKEN_GROWTH).default(AIMD_TOKEN_GROWTH),
    ceilingWindows: z.int().min(1).max(AIMD_MAX_CEILING_WINDOWS).default(AIMD_CEILING_WINDOWS),
  })
  .refine((options) => options.min <= options.max, { path: ['max'], error: 'must be >= min' });

/** The window limit's bounds, given a budget: in (0, its capacity]; by default a tenth of it, and steps of a fiftieth. */
function tokenFieldsSchema(capacity: number) {
  return z.object({
    minTokens: z.number().gt(0).max(capacity).default(capacity / 10),
    tokenStep: z.number().gt(0).max(capacity).default(capacity / 50),
  });
}

export class AimdLimit implements AdaptiveLimit {
  #limit: number;
  readonly min: number;
  readonly max: number;
  readonly backoffRatio: number;
  readonly latencyThresholdMs: number;
  readonly windowMs: number;
  readonly minTokens: number | undefined;
  readonly maxTokens: number | undefined;
  readonly tokenBackoffRatio: number;
  readonly shareMargin: number;
  readonly tokenStep: number;
  readonly tokenGrowth: number;
  readonly ceilingWindows: number;
  readonly #budget: AdaptiveBudget | undefined;
  readonly #clock: Clock;
  #lastDecreaseAt = Number.NEGATIVE_INFINITY;
  #windowStart: number;
  #windowRateLimited = false;
  #windowBound = false;
  /** Clean windows in a row since the last decrease (or the last stop below the ceiling). */
  #clean = 0;
  #ceiling: number | undefined;
  #ceilingAt = Number.NEGATIVE_INFINITY;
  /** 429s come through onRateLimited: a sample's rateLimited is not a second signal. */
  #hearsRateLimits = false;
  /** What this replica admitted over the last window, by when (told through onAdmitted). */
  readonly #admitted: AdmissionLog;
  #hearsAdmissions = false;

  constructor(options: AimdOptions) {
    const budget = options.budget;
    const checked = parseOptions('AimdLimit', aimdOptionsSchema, { ...options, windowMs: options.windowMs ?? budget?.windowMs ?? DEFAULT_WINDOW_MS });
    this.min = checked.min;
    this.max = checked.max;
    this.backoffRatio = checked.backoffRatio;
    this.latencyThresholdMs = options.latencyThresholdMs ?? Number.POSITIVE_INFINITY;
    this.#clock = options.clock ?? realClock;
    if (budget && (typeof budget.setWindowLimit !== 'function' || budget.windowLimit === undefined)) {
      throw new TypeError('AIMD budget: needs windowLimit and setWindowLimit (TokenBudget, RedisTokenBudget)');
    }
    this.#budget = budget as AdaptiveBudget | undefined;
    this.windowMs = checked.windowMs;
    this.tokenBackoffRatio = checked.tokenBackoffRatio;
    this.shareMargin = checked.shareMargin;
    this.tokenGrowth = checked.tokenGrowth;
    this.ceilingWindows = checked.ceilingWindows;
    const capacity = budget?.capacity;
    this.maxTokens = capacity;
    const tokens = capacity === undefined ? undefined : parseOptions('AimdLimit', tokenFieldsSchema(capacity), options);
    this.minTokens = tokens?.minTokens;
    this.tokenStep = tokens?.tokenStep ?? 0;
    this.#limit = clamp(Math.round(options.initial), this.min, this.max);
    this.#windowStart = this.#clock.now();
    this.#admitted = new AdmissionLog(this.windowMs);
  }

  /** Current permit limit. */
  get limit(): number {
    return this.#limit;
  }

  /** The budget's window limit now (undefined without a budget). */
  get tokenLimit(): number | undefined {
    return this.#budget?.windowLimit;
  }

  /** The trusted ceiling of the tokens per window (the share a 429 measured), undefined once forgotten or before any. */
  get tokenCeiling(): number | undefined {
    if (this.#ceiling !== undefined && this.#clock.now() - this.#ceilingAt > this.ceilingWindows * this.windowMs) return undefined;
    return this.#ceiling;
  }

  onRateLimited(retryAfterMs?: number): number {
    this.#hearsRateLimits = true;
    const now = this.#clock.now();
    this.#closeWindows(now);
    if (now - this.#lastDecreaseAt >= this.windowMs) this.#decrease(now, retryAfterMs);
    else this.#windowRateLimited = true;
    return this.#limit;
  }

  onAdmitted(tokens: number): void {
    this.#hearsAdmissions = true;
    this.#admitted.add(this.#clock.now(), tokens);
  }

  onSample(sample: CallSample): number {
    const now = this.#clock.now();
    this.#closeWindows(now);
    const slow = sample.durationMs > this.latencyThresholdMs;
    if (sample.rateLimited && this.#hearsRateLimits) {
      this.#windowRateLimited = true; // heard when it was answered
    } else if (sample.rateLimited || slow) {
      this.#congested(now, sample);
    } else if (!sample.failed) {
      // Grow only when the limit is being used: an idle limiter learns nothing about capacity.
      if (sample.inFlight * 2 >= this.#limit) this.#limit = clamp(this.#limit + 1, this.min, this.max);
      if (this.#budgetBinds()) this.#windowBound = true;
    }
    return this.#limit;
  }

  /** A congestion signal from a finished call: a decrease if it is news about the current limits. */
  #congested(now: number, sample: CallSample): void {
    const admittedAt = now - sample.durationMs;
    if (now - this.#lastDecreaseAt >= this.windowMs && admittedAt >= this.#lastDecreaseAt) this.#decrease(now);
    else this.#windowRateLimited = true;
  }

  #decrease(now: number, retryAfterMs?: number): void {
    this.#limit = clamp(Math.floor(this.#limit * this.backoffRatio), this.min, this.max);
    const budget = this.#budget;
    if (budget) {
      const minTokens = this.minTokens as number;
      const limit = budget.windowLimit;
      // The rate in use: this replica's window if it used at least half its limit (else the limit).
      const used = budget.windowTokens ?? limit;
      const inUse = used >= limit / 2 ? Math.min(limit, used) : limit;
      const passed = this.#passedOfProviderWindow(retryAfterMs);
      // Its share of the window the fleet filled, and the limit just below it; or a plain cut.
      const share = passed === undefined ? inUse : Math.max(limit / 2, Math.min(limit, this.#admittedSince(now, passed, used)));
      const cut = passed === undefined ? inUse * this.tokenBackoffRatio : Math.max(limit / 2, share * (1 - this.shareMargin));
      const trusted = this.tokenCeiling;
      const measured = Math.max(minTokens, share);
      const near = 1 - 2 * this.shareMargin;
      // About the trusted share again, or a window filled in its last 2 × shareMargin (the fleet
      // was that near the quota: it did not drop): the ceiling follows, the trust is not
      // extended, so the quota is still probed on schedule. Else the quota dropped: trust anew.
      const confirms = trusted !== undefined && (measured >= trusted * near || (passed !== undefined && passed >= near));
      this.#ceiling = measured;
      if (!confirms) this.#ceilingAt = now;
      budget.setWindowLimit(Math.max(minTokens, cut));
    }
    this.#lastDecreaseAt = now;
    this.#windowStart = now;
    this.#windowRateLimited = false;
    this.#windowBound = false;
    this.#clean = 0;
  }

  /**
   * The part of the provider's window that had passed when it answered 429, from its retry
   * delay (the window is full until its end); undefined when it named none, or a wait longer
   * than a window (another quota than this one).
   */
  #passedOfProviderWindow(retryAfterMs: number | undefined): number | undefined {
    if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs >= this.windowMs) return undefined;
    return 1 - Math.max(0, retryAfterMs) / this.windowMs;
  }

  /**
   * What this replica admitted in the provider's window so far: as told through onAdmitted,
   * else its last window's tokens scaled to the part of the window that passed.
   */
  #admittedSince(now: number, passed: number, used: number): number {
    if (!this.#hearsAdmissions) return used * passed;
    const admitted = this.#admitted.since(now, now - passed * this.windowMs);
    // Admissions are estimates; this replica's own budget counts what the provider reported.
    const logged = this.#admitted.total(now);
    const counted = this.#budget?.sharing.kind === 'central' ? undefined : this.#budget?.windowTokens;
    const scale = counted !== undefined && counted > 0 && logged > 0 ? clamp(counted / logged, 0.5, 2) : 1;
    return admitted * scale;
  }

  /** Whether calls wait for tokens or the window is nearly full: the window limit binds. */
  #budgetBinds(): boolean {
    const budget = this.#budget;
    if (!budget) return false;
    return budget.waiting > 0 || (budget.windowTokens ?? 0) >= AIMD_NEARLY_FULL * budget.windowLimit;
  }

  /** Every window that ended since the last: a clean one in which the budget bound raises the window limit. */
  #closeWindows(now: number): void {
    if (now - this.#windowStart < this.windowMs) return;
    const clean = !this.#windowRateLimited && this.#windowBound;
    // The window right after a decrease only confirms it: the other replicas may still be hearing 429s.
    const confirmed = this.#windowStart - this.#lastDecreaseAt >= this.windowMs;
    if (clean && confirmed) this.#increase();
    else if (this.#windowRateLimited) this.#clean = 0;
    // Windows with no sample at all teach nothing: start the next one now.
    this.#windowStart = now - this.#windowStart >= 2 * this.windowMs ? now : this.#windowStart + this.windowMs;
    this.#windowRateLimited = false;
    this.#windowBound = false;
  }

  #increase(): void {
    const budget = this.#budget;
    if (!budget) return;
    const tokens = budget.windowLimit;
    const ceiling = this.tokenCeiling;
    if (ceiling === undefined && this.#ceiling !== undefined) {
      this.#ceiling = undefined; // the quota may have moved: probe from the first step
      this.#clean = 0;
    }
    if (ceiling !== undefined) {
      // Trusted: back at once to one step short of it, and no further.
      const short = Math.max(this.minTokens as number, ceiling - this.tokenStep);
      if (tokens < short) budget.setWindowLimit(short);
      return;
    }
    budget.setWindowLimit(Math.min(this.maxTokens as number, tokens + this.tokenStep * this.tokenGrowth ** this.#clean));
    this.#clean++;
  }

}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
