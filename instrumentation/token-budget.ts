// A token bucket in model tokens. It refills continuously at tokensPerMinute / 60,000 per
// millisecond up to one minute's worth. Reservations wait in FIFO order (a large one is
// not starved by a stream of small ones) and are settled against the provider's reported
// usage afterwards: an underestimate drives the level negative, so the debt is repaid
// before new calls start.
import { type Clock, realClock, type TimerHandle } from './clock.ts';
import type { Budget, ReserveOptions } from './budget.ts';
import { BudgetRequestTooLarge, DeadlineExceeded } from './errors.ts';

export type { ReserveOptions } from './budget.ts';

interface Waiter {
  readonly tokens: number;
  grant(): void;
}

// Refill is computed from elapsed time in floating point; tolerate rounding noise.
const EPSILON = 1e-6;

export class TokenBudget implements Budget {
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly #perMs: number;
  readonly #clock: Clock;
  #level: number;
  #refilledAt: number;
  readonly #waiters = new Set<Waiter>();
  #wakeTimer: TimerHandle | undefined;

  constructor(tokensPerMinute: number, options: { clock?: Clock; initialLevel?: number } = {}) {
    if (!Number.isFinite(tokensPerMinute) || tokensPerMinute <= 0) {
      throw new RangeError(`tokensPerMinute must be a positive number, got ${tokensPerMinute}`);
    }
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.#perMs = tokensPerMinute / 60_000;
    this.#clock = options.clock ?? realClock;
    this.#level = Math.min(options.initialLevel ?? this.capacity, this.capacity);
    this.#refilledAt = this.#clock.now();
  }

  /** Current bucket level (refilled to now); negative while a debt is being repaid. */
  get available(): number {
    this.#refill();
    return this.#level;
  }

  get waiting(): number {
    return this.#waiters.size;
  }

  /** Take tokens now if they are there and nobody is queued. */
  tryReserve(tokens: number): boolean {
    this.#check(tokens);
    if (this.#waiters.size > 0) return false;
    this.#refill();
    if (this.#level + EPSILON < tokens) return false;
    this.#level -= tokens;
    return true;
  }

  /** Wait (FIFO, without blocking the event loop) until the tokens can be taken. */
  reserve(tokens: number, options: ReserveOptions = {}): Promise<void> {
    try {
      if (this.tryReserve(tokens)) return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
    const { deadline, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (deadline !== undefined && deadline <= this.#clock.now()) {
      return Promise.reject(new DeadlineExceeded('token budget'));
    }
    return new Promise<void>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const leave = () => {
        this.#waiters.delete(waiter);
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (reason: unknown) => {
        leave();
        reject(reason);
        // The head may have left: the next waiter may fit now, or needs its own wake-up.
        this.#admit();
      };
      const onAbort = () => giveUp(signal?.reason);
      const waiter: Waiter = {
        tokens,
        grant: () => {
          leave();
          resolve();
        },
      };
      this.#waiters.add(waiter);
      if (deadline !== undefined) {
        timer = this.#clock.setTimeout(
          () => giveUp(new DeadlineExceeded('token budget')),
          deadline - this.#clock.now(),
        );
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#admit();
    });
  }

  /**
   * Settle a reservation against what the provider reported: give back an overestimate,
   * take the shortfall of an underestimate (possibly going negative). Never above capacity.
   */
  reconcile(reserved: number, actual: number): void {
    if (!Number.isFinite(reserved) || !Number.isFinite(actual)) {
      throw new RangeError(`reconcile needs finite numbers, got reserved=${reserved} actual=${actual}`);
    }
    this.#refill();
    this.#level = Math.min(this.capacity, this.#level + reserved - actual);
    this.#admit();
  }

  #check(tokens: number): void {
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`token reservation must be a finite number >= 0, got ${tokens}`);
    }
    if (tokens > this.capacity) throw new BudgetRequestTooLarge(tokens, this.capacity);
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#refilledAt;
    if (elapsed > 0) {
      this.#level = Math.min(this.capacity, this.#level + elapsed * this.#perMs);
      this.#refilledAt = now;
    }
  }

  #admit(): void {
    if (this.#wakeTimer !== undefined) {
      this.#clock.clearTimeout(this.#wakeTimer);
      this.#wakeTimer = undefined;
    }
    this.#refill();
    while (this.#waiters.size > 0) {
      const head = this.#waiters.values().next().value as Waiter;
      if (this.#level + EPSILON < head.tokens) {
        const waitMs = Math.ceil((head.tokens - this.#level) / this.#perMs);
        this.#wakeTimer = this.#clock.setTimeout(() => {
          this.#wakeTimer = undefined;
          this.#admit();
        }, waitMs);
        return;
      }
      this.#level -= head.tokens;
      head.grant();
    }
  }
}
