// Client-side retry budget (client-side throttling, as in Finagle's RetryBudget): retries
// may be at most `ratio` of the calls made over a sliding window, plus a small floor so a
// quiet client can still retry. When the provider answers 429 to everything,
// load grows by at most ~10 % instead of multiplying by maxAttempts.
import { z } from 'zod';
import { type Clock, realClock } from './clock.ts';
import { DEFAULT_MIN_RETRIES, DEFAULT_RETRY_RATIO, DEFAULT_RETRY_WINDOW_MS } from './defaults.ts';
import { parseOptions } from './limiter-options.ts';

export interface RetryBudgetOptions {
  /** Retries allowed per call made in the window (default 0.1). */
  readonly ratio?: number;
  /** Sliding window in ms (default 60 s). */
  readonly windowMs?: number;
  /** Retries always allowed per window, whatever the call count (default 10). */
  readonly minRetries?: number;
  readonly clock?: Clock;
}

const retryBudgetOptionsSchema = z.object({
  ratio: z.number().min(0).default(DEFAULT_RETRY_RATIO),
  windowMs: z.number().gt(0).default(DEFAULT_RETRY_WINDOW_MS),
  minRetries: z.number().min(0).default(DEFAULT_MIN_RETRIES),
});

// The window is kept as a ring of slots so counting stays O(slots), not O(calls).
const SLOTS = 10;

export class RetryBudget {
  readonly ratio: number;
  readonly windowMs: number;
  readonly minRetries: number;
  readonly #clock: Clock;
  readonly #calls = new Array<number>(SLOTS).fill(0);
  readonly #retries = new Array<number>(SLOTS).fill(0);
  #slotStart: number;
  #slot = 0;

  constructor(options: RetryBudgetOptions = {}) {
    ({ ratio: this.ratio, windowMs: this.windowMs, minRetries: this.minRetries } = parseOptions('RetryBudget', retryBudgetOptionsSchema, options));
    this.#clock = options.clock ?? realClock;
    this.#slotStart = this.#clock.now();
  }

  /** Count a call (first attempt) toward the window. */
  recordCall(): void {
    this.#advance();
    this.#calls[this.#slot]++;
  }

  /** Spend one retry if the budget allows it; false means do not retry. */
  tryRetry(): boolean {
    this.#advance();
    const calls = sum(this.#calls);
    const retries = sum(this.#retries);
    if (retries >= Math.max(this.minRetries, this.ratio * calls)) return false;
    this.#retries[this.#slot]++;
    return true;
  }

  #advance(): void {
    const slotMs = this.windowMs / SLOTS;
    const now = this.#clock.now();
    let steps = Math.floor((now - this.#slotStart) / slotMs);
    if (steps <= 0) return;
    this.#slotStart += steps * slotMs;
    steps = Math.min(steps, SLOTS);
    for (let i = 0; i < steps; i++) {
      this.#slot = (this.#slot + 1) % SLOTS;
      this.#calls[this.#slot] = 0;
      this.#retries[this.#slot] = 0;
    }
  }
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}
