// The step down of a static or central budget on a provider 429 (as AIMD does in adaptive
// mode, but towards the configured ceiling, not a learned one). Kept apart from the budgets:
// it only reads their window and moves their window limit (setWindowLimit).
//
// - A 429 of the caller's own usage (it names a per-minute token or request quota, or it
//   names none while the window held nearly the whole limit) cuts the tokens per window to
//   just below what the provider counted in its window when the 429 came, as far as this
//   budget can tell: its rolling window (a static share: what it admitted; central: the
//   fleet's), scaled to the part of the provider's window that had passed, which the retry
//   delay tells (a fixed window is full until its end). A quota cut mid-window shows as a
//   429 well before the window ends: the rate that filled it is what the new quota holds.
//   Each cut keeps at least maxCut of the limit before it, and the limit never goes below
//   minFraction of the ceiling. A second cut comes no sooner than the first 429's retry delay
//   and spacingMs: calls already in flight hear the same wall and only hold the limit.
// - A 429 from shared capacity (no per-minute quota named and the window well under the
//   limit, or a quota of another kind) leaves the limit alone: the provider's pause
//   (RateLimitedLlm calls budget.pauseFor) is all it asks.
// - The cut limit holds for holdMs after the last 429 of the caller's own, then climbs by
//   step of the ceiling every stepMs, back to the ceiling.
// The limit is a function of time and the 429s heard (limitAt); a timer moves the budget's
// window limit when it changes.
import { z } from 'zod';
import type { Budget } from '../budget/budget.ts';
import { type Clock, realClock, type TimerHandle, unrefTimer } from '../clock.ts';
import {
  DEFAULT_WINDOW_MS,
  STEP_DOWN_HOLD_WINDOWS,
  STEP_DOWN_MARGIN,
  STEP_DOWN_MAX_CUT,
  STEP_DOWN_MAX_MS,
  STEP_DOWN_MIN_FRACTION,
  STEP_DOWN_NEAR_FRACTION,
  STEP_DOWN_SPACING_WINDOWS,
  STEP_DOWN_STEP,
  STEP_DOWN_STEP_WINDOWS,
} from '../defaults.ts';
import { parseOptions } from '../limiter-options.ts';
import type { NamedQuota } from '../rate-limit-errors.ts';

/** A budget whose window limit can be moved (TokenBudget, RedisTokenBudget). */
export type SteppableBudget = Budget & Required<Pick<Budget, 'setWindowLimit' | 'windowLimit'>>;

export interface QuotaStepDownOptions {
  readonly budget: Budget;
  /** Least part of the limit a cut keeps (default STEP_DOWN_MAX_CUT, 0.5). */
  readonly maxCut?: number;
  /** Lowest limit, as a part of the ceiling (default STEP_DOWN_MIN_FRACTION, 0.25). */
  readonly minFraction?: number;
  /** How far below the counted window a cut lands (default STEP_DOWN_MARGIN, 0.05). */
  readonly margin?: number;
  /** A 429 naming no quota is the caller's own from this part of the limit in the window on (default 0.9). */
  readonly nearFraction?: number;
  /** How long the cut limit holds after the last 429 of the caller's own, ms (default 2 windows). */
  readonly holdMs?: number;
  /** The climb back: this part of the ceiling (default 0.05) every stepMs (default a tenth of a window). */
  readonly step?: number;
  readonly stepMs?: number;
  /** Least time between two cuts, ms (default a quarter window); the 429's retry delay when longer. */
  readonly spacingMs?: number;
  readonly clock?: Clock;
}

/** What a 429 told: the quota it names and the delay it asks for. */
export interface RateLimitSignal {
  readonly quota: NamedQuota;
  readonly retryAfterMs?: number;
}

/** What a 429 did: cut the limit, held it (the caller's own, but too soon for another cut), or nothing (shared capacity). */
export type StepDownVerdict = 'cut' | 'held' | 'shared';

/** A part of the limit or ceiling, in (0, 1]. */
const part = z.number().gt(0).max(1);
/** A time, ms, from `min` to a day. */
const duration = (min: number) => z.number().min(min).max(STEP_DOWN_MAX_MS);

/** The options' numbers, each bounded (the times' defaults are parts of the budget's window, filled in before). */
const stepDownOptionsSchema = z.object({
  maxCut: part.default(STEP_DOWN_MAX_CUT),
  minFraction: part.default(STEP_DOWN_MIN_FRACTION),
  margin: z.number().min(0).max(1).default(STEP_DOWN_MARGIN),
  nearFraction: part.default(STEP_DOWN_NEAR_FRACTION),
  step: part.default(STEP_DOWN_STEP),
  holdMs: duration(0),
  stepMs: duration(1),
  spacingMs: duration(0),
});

export class QuotaStepDown {
  /** The configured tokens per window: the limit the step down returns to. */
  readonly ceiling: number;
  /** The lowest limit. */
  readonly floor: number;
  readonly maxCut: number;
  readonly margin: number;
  readonly nearFraction: number;
  readonly holdMs: number;
  readonly step: number;
  readonly stepMs: number;
  readonly spacingMs: number;
  /** The quota window, ms (the budget's). */
  readonly windowMs: number;
  readonly #budget: SteppableBudget;
  readonly #clock: Clock;
  /** The limit the last cut set; undefined before any (or once climbed back). */
  #cut: number | undefined;
  #climbFrom = Number.NEGATIVE_INFINITY;
  #noCutBefore = Number.NEGATIVE_INFINITY;
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(options: QuotaStepDownOptions) {
    const budget = options.budget;
    if (typeof budget.setWindowLimit !== 'function' || budget.windowLimit === undefined) {
      throw new TypeError('QuotaStepDown budget: needs windowLimit and setWindowLimit (TokenBudget, RedisTokenBudget)');
    }
    this.#budget = budget as SteppableBudget;
    this.#clock = options.clock ?? realClock;
    const windowMs = budget.windowMs ?? DEFAULT_WINDOW_MS;
    this.windowMs = windowMs;
    this.ceiling = budget.windowLimit;
    const checked = parseOptions('QuotaStepDown', stepDownOptionsSchema, {
      ...options,
      holdMs: options.holdMs ?? STEP_DOWN_HOLD_WINDOWS * windowMs,
      stepMs: options.stepMs ?? STEP_DOWN_STEP_WINDOWS * windowMs,
      spacingMs: options.spacingMs ?? STEP_DOWN_SPACING_WINDOWS * windowMs,
    });
    this.maxCut = checked.maxCut;
    this.floor = this.ceiling * checked.minFraction;
    this.margin = checked.margin;
    this.nearFraction = checked.nearFraction;
    this.step = checked.step;
    this.holdMs = checked.holdMs;
    this.stepMs = checked.stepMs;
    this.spacingMs = checked.spacingMs;
  }

  /** The tokens per window now. */
  get limit(): number {
    return this.limitAt(this.#clock.now());
  }

  /** The tokens per window at `now` (not before the last 429 heard): held after a cut, then climbing back to the ceiling. */
  limitAt(now: number): number {
    const cut = this.#cut;
    if (cut === undefined) return this.ceiling;
    if (now < this.#climbFrom) return cut;
    const steps = Math.floor((now - this.#climbFrom) / this.stepMs) + 1;
    return Math.min(this.ceiling, cut + steps * this.step * this.ceiling);
  }

  /** The provider answered 429 just now. */
  onRateLimited(signal: RateLimitSignal): StepDownVerdict {
    if (this.#closed) return 'shared';
    const now = this.#clock.now();
    const limit = this.limitAt(now);
    const counted = this.#budget.windowTokens;
    const own = signal.quota === 'minute' || (signal.quota === 'unnamed' && counted !== undefined && counted >= this.nearFraction * limit);
    if (!own) return 'shared';
    let verdict: StepDownVerdict = 'held';
    let next = limit;
    if (now >= this.#noCutBefore) {
      const measured = (counted ?? limit) * this.#passedOfProviderWindow(signal.retryAfterMs) * (1 - this.margin);
      next = Math.min(limit, Math.max(measured, limit * this.maxCut, this.floor));
      const delay = signal.retryAfterMs !== undefined && Number.isFinite(signal.retryAfterMs) ? Math.max(0, signal.retryAfterMs) : 0;
      this.#noCutBefore = now + Math.max(delay, this.spacingMs);
      verdict = 'cut';
    }
    this.#cut = next;
    this.#climbFrom = now + this.holdMs;
    this.#apply();
    return verdict;
  }

  /**
   * The part of the provider's window that had passed when it answered 429, from its retry
   * delay (the window is full until its end); 1 when it named none, or a wait of a window or
   * more (another quota than this one).
   */
  #passedOfProviderWindow(retryAfterMs: number | undefined): number {
    if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs >= this.windowMs) return 1;
    return 1 - Math.max(0, retryAfterMs) / this.windowMs;
  }

  /** Stop moving the budget's limit (the limit stays where it is). */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Set the budget's window limit to the limit now, and wake up when it next changes. */
  #apply(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.#clock.now();
    const limit = this.limitAt(now);
    if (limit !== this.#budget.windowLimit) this.#budget.setWindowLimit(limit);
    if (limit >= this.ceiling) {
      this.#cut = undefined;
      return;
    }
    const next = now < this.#climbFrom ? this.#climbFrom : this.#climbFrom + (Math.floor((now - this.#climbFrom) / this.stepMs) + 1) * this.stepMs;
    this.#timer = this.#clock.setTimeout(() => this.#apply(), next - now);
    unrefTimer(this.#timer);
  }
}
