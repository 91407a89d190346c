// Additive-increase / multiplicative-decrease limits (as in Netflix's concurrency-limits
// AIMDLimit), on the rate that binds: the permits (concurrency) and, given a budget, the
// tokens it admits per window. Passed to RateLimitedLlm as `adaptiveLimit`, it moves the
// semaphore's limit; the budget's window limit it moves itself (budget.setWindowLimit).
// Each replica runs its own: no coordination, each learns its part of the quota from the
// 429s its own calls get.
//
// - Decrease: a provider 429 (heard the moment it is answered, onRateLimited) or a call
//   slower than latencyThresholdMs multiplies the permits by backoffRatio and the tokens per
//   window by tokenBackoffRatio, at most once per window. The tokens are cut from the rate in
//   use (what this replica admitted in the last window, when that is at least half its
//   limit), as TCP cuts from the flight size, and that rate is remembered as the ceiling.
//   Later 429s in the window, and a slow call admitted before the decrease, only
//   hold back the next increase.
// - Increase: a success while the permits were used adds a permit. After each window in which
//   the budget bound (calls waited for tokens, or the window was nearly full) and no 429 came
//   (the window right after a decrease only confirms it), the window limit grows by an
//   additive step that grows while the windows stay clean (tokenStep, × tokenGrowth per clean
//   window): slow just above a known ceiling, fast after the quota was raised. Below the
//   ceiling it stops one step short of it and holds there for plateauWindows clean windows
//   before it probes above it by one step (a probe above a ceiling that still holds costs a
//   few 429s). A ceiling older than ceilingWindows windows is forgotten: the quota may have moved.
import type { Budget } from '../budget.ts';
import { type Clock, realClock } from '../clock.ts';
import { DEFAULT_WINDOW_MS } from '../defaults.ts';
import type { AdaptiveLimit, CallSample } from './adaptive-limit.ts';

/** A budget AIMD can move: its window limit has a setter. */
export type AdaptiveBudget = Budget & Required<Pick<Budget, 'setWindowLimit' | 'windowLimit'>>;

export interface AimdOptions {
  /** Permits to start from. */
  readonly initial: number;
  readonly min?: number;
  readonly max: number;
  /** Factor applied to the permits on a congestion signal (default 0.9). */
  readonly backoffRatio?: number;
  /** A call slower than this counts as congestion, ms (default: none). */
  readonly latencyThresholdMs?: number;
  /** The budget whose tokens per window AIMD moves too (TokenBudget, RedisTokenBudget); none: permits only. */
  readonly budget?: Budget;
  /** Lowest window limit (default 10 % of the budget's capacity); the highest is the capacity. */
  readonly minTokens?: number;
  /** Factor applied to the window limit on a congestion signal (default 0.8). */
  readonly tokenBackoffRatio?: number;
  /** The window limit's first additive step after a clean window (default 1 % of the capacity). */
  readonly tokenStep?: number;
  /** The step's factor per further clean window (default 6). */
  readonly tokenGrowth?: number;
  /** Clean windows held one step short of the last ceiling before probing above it (default 1). */
  readonly plateauWindows?: number;
  /** Windows a ceiling is remembered (default 6). */
  readonly ceilingWindows?: number;
  /** The window decisions are made in, ms (default: the budget's windowMs, else a minute). */
  readonly windowMs?: number;
  readonly clock?: Clock;
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
  readonly tokenStep: number;
  readonly tokenGrowth: number;
  readonly plateauWindows: number;
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
  /** Clean windows held at the plateau below the ceiling. */
  #held = 0;
  /** 429s come through onRateLimited: a sample's rateLimited is not a second signal. */
  #hearsRateLimits = false;

  constructor(options: AimdOptions) {
    this.min = options.min ?? 1;
    this.max = options.max;
    this.backoffRatio = options.backoffRatio ?? 0.9;
    this.latencyThresholdMs = options.latencyThresholdMs ?? Number.POSITIVE_INFINITY;
    if (!(Number.isInteger(this.min) && this.min >= 1 && Number.isInteger(this.max) && this.max >= this.min)) {
      throw new RangeError(`AIMD limit needs integers 1 <= min <= max, got min=${this.min} max=${this.max}`);
    }
    if (!(this.backoffRatio > 0 && this.backoffRatio < 1)) throw new RangeError(`backoffRatio must be in (0, 1), got ${this.backoffRatio}`);
    this.#clock = options.clock ?? realClock;
    const budget = options.budget;
    if (budget && (typeof budget.setWindowLimit !== 'function' || budget.windowLimit === undefined)) {
      throw new TypeError('AIMD budget: needs windowLimit and setWindowLimit (TokenBudget, RedisTokenBudget)');
    }
    this.#budget = budget as AdaptiveBudget | undefined;
    this.windowMs = options.windowMs ?? budget?.windowMs ?? DEFAULT_WINDOW_MS;
    if (!(Number.isInteger(this.windowMs) && this.windowMs >= 1 && this.windowMs <= 3_600_000)) {
      throw new RangeError(`AIMD windowMs must be a whole number of ms in [1, 3600000], got ${this.windowMs}`);
    }
    this.tokenBackoffRatio = options.tokenBackoffRatio ?? 0.8;
    if (!(this.tokenBackoffRatio > 0 && this.tokenBackoffRatio < 1)) {
      throw new RangeError(`tokenBackoffRatio must be in (0, 1), got ${this.tokenBackoffRatio}`);
    }
    this.tokenGrowth = options.tokenGrowth ?? 6;
    this.plateauWindows = options.plateauWindows ?? 1;
    this.ceilingWindows = options.ceilingWindows ?? 6;
    if (!(Number.isInteger(this.plateauWindows) && this.plateauWindows >= 0 && this.plateauWindows <= 100)) {
      throw new RangeError(`plateauWindows must be an integer in [0, 100], got ${this.plateauWindows}`);
    }
    if (!(Number.isInteger(this.ceilingWindows) && this.ceilingWindows >= 1 && this.ceilingWindows <= 1_000)) {
      throw new RangeError(`ceilingWindows must be an integer in [1, 1000], got ${this.ceilingWindows}`);
    }
    if (!(this.tokenGrowth >= 1 && this.tokenGrowth <= 16)) throw new RangeError(`tokenGrowth must be in [1, 16], got ${this.tokenGrowth}`);
    const capacity = budget?.capacity;
    this.maxTokens = capacity;
    this.minTokens = capacity === undefined ? undefined : (options.minTokens ?? capacity / 10);
    this.tokenStep = capacity === undefined ? 0 : (options.tokenStep ?? capacity / 100);
    if (capacity !== undefined) {
      const minTokens = this.minTokens as number;
      if (!(Number.isFinite(minTokens) && minTokens > 0 && minTokens <= capacity)) {
        throw new RangeError(`minTokens must be in (0, the budget's capacity ${capacity}], got ${minTokens}`);
      }
      if (!(Number.isFinite(this.tokenStep) && this.tokenStep > 0 && this.tokenStep <= capacity)) {
        throw new RangeError(`tokenStep must be in (0, the budget's capacity ${capacity}], got ${this.tokenStep}`);
      }
    }
    this.#limit = clamp(Math.round(options.initial), this.min, this.max);
    this.#windowStart = this.#clock.now();
  }

  /** Current permit limit. */
  get limit(): number {
    return this.#limit;
  }

  /** The budget's window limit now (undefined without a budget). */
  get tokenLimit(): number | undefined {
    return this.#budget?.windowLimit;
  }

  onRateLimited(): number {
    this.#hearsRateLimits = true;
    const now = this.#clock.now();
    this.#closeWindows(now);
    if (now - this.#lastDecreaseAt >= this.windowMs) this.#decrease(now);
    else this.#windowRateLimited = true;
    return this.#limit;
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

  #decrease(now: number): void {
    this.#limit = clamp(Math.floor(this.#limit * this.backoffRatio), this.min, this.max);
    const budget = this.#budget;
    if (budget) {
      // The rate in use: this replica's window if it used at least half its limit (else the limit).
      const used = budget.windowTokens ?? budget.windowLimit;
      const inUse = used >= budget.windowLimit / 2 ? Math.min(budget.windowLimit, used) : budget.windowLimit;
      const cut = Math.max(this.minTokens as number, inUse * this.tokenBackoffRatio);
      this.#ceiling = Math.max(this.minTokens as number, inUse);
      this.#ceilingAt = now;
      this.#held = 0;
      budget.setWindowLimit(cut);
    }
    this.#lastDecreaseAt = now;
    this.#windowStart = now;
    this.#windowRateLimited = false;
    this.#windowBound = false;
    this.#clean = 0;
  }

  /** Whether calls wait for tokens or the window is nearly full: the window limit binds. */
  #budgetBinds(): boolean {
    const budget = this.#budget;
    if (!budget) return false;
    return budget.waiting > 0 || (budget.windowTokens ?? 0) >= 0.9 * budget.windowLimit;
  }

  /** Every window that ended since the last: a clean one in which the budget bound raises the window limit. */
  #closeWindows(now: number): void {
    if (now - this.#windowStart < this.windowMs) return;
    const clean = !this.#windowRateLimited && this.#windowBound;
    // The window right after a decrease only confirms it: the other replicas may still be hearing 429s.
    const confirmed = this.#windowStart - this.#lastDecreaseAt >= this.windowMs;
    if (clean && confirmed) this.#increase(now);
    else if (this.#windowRateLimited) this.#clean = 0;
    // Windows with no sample at all teach nothing: start the next one now.
    this.#windowStart = now - this.#windowStart >= 2 * this.windowMs ? now : this.#windowStart + this.windowMs;
    this.#windowRateLimited = false;
    this.#windowBound = false;
  }

  #increase(now: number): void {
    const budget = this.#budget;
    if (!budget) return;
    const tokens = budget.windowLimit;
    const max = this.maxTokens as number;
    if (now - this.#ceilingAt > this.ceilingWindows * this.windowMs) this.#ceiling = undefined;
    const ceiling = this.#ceiling;
    const short = ceiling === undefined ? undefined : ceiling - this.tokenStep;
    let next = tokens + this.tokenStep * this.tokenGrowth ** this.#clean;
    if (short !== undefined && tokens < short && next > short) {
      // Stop one step short of the last ceiling.
      next = short;
      this.#clean = 0;
      this.#held = 0;
    } else if (short !== undefined && tokens >= short && tokens < (ceiling as number) && this.#held < this.plateauWindows) {
      // Hold there before probing above it.
      this.#held++;
      return;
    } else {
      this.#clean++;
    }
    budget.setWindowLimit(Math.min(max, next));
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
