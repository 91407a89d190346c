// A token bucket in model tokens. It refills continuously at tokensPerMinute / 60,000 per
// millisecond up to one minute's worth. Reservations wait in FIFO order (a large one is
// not starved by a stream of small ones) and are settled against the provider's reported
// usage afterwards: an underestimate drives the level negative, so the debt is repaid
// before new calls start.
//
// Rolling-minute guard (option `rollingWindow`, default on): a bucket that starts full admits
// up to capacity + refill = 2 × tokensPerMinute in one 60 s window while it drains, but
// provider quotas are counted per minute window, so that burst overruns them. With the guard,
// a reservation is admitted only when the bucket has the tokens AND the admissions of the
// last 60 s (actual usage once reconciled, debt included) plus it stay within
// tokensPerMinute. Off (`rollingWindow: false`) is the pure bucket, for a provider whose
// quota refills continuously.
import { type Clock, realClock, type TimerHandle } from './clock.ts';
import type { AdmissionTicket, Budget, ReserveOptions } from './budget.ts';
import { BudgetRequestTooLarge, DeadlineExceeded } from './errors.ts';
import { RollingWindow } from './rolling-window.ts';

export type { ReserveOptions } from './budget.ts';

export interface TokenBudgetOptions {
  clock?: Clock;
  /** Starting bucket level (default: full). */
  initialLevel?: number;
  /**
   * Also admit nothing that would put more than tokensPerMinute in any rolling 60 s window
   * (default true: provider quotas are per-minute windows). false: the bucket alone, which
   * may admit up to 2 × tokensPerMinute in a minute while a full bucket drains.
   */
  rollingWindow?: boolean;
}

interface Waiter {
  readonly tokens: number;
  grant(ticket: AdmissionTicket | undefined): void;
}

// Refill is computed from elapsed time in floating point; tolerate rounding noise.
const EPSILON = 1e-6;

export class TokenBudget implements Budget {
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly #perMs: number;
  readonly #clock: Clock;
  readonly #window: RollingWindow | undefined;
  #lastAdmission: AdmissionTicket | undefined;
  #level: number;
  #refilledAt: number;
  readonly #waiters = new Set<Waiter>();
  #wakeTimer: TimerHandle | undefined;

  constructor(tokensPerMinute: number, options: TokenBudgetOptions = {}) {
    if (!Number.isFinite(tokensPerMinute) || tokensPerMinute <= 0) {
      throw new RangeError(`tokensPerMinute must be a positive number, got ${tokensPerMinute}`);
    }
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.#perMs = tokensPerMinute / 60_000;
    this.#clock = options.clock ?? realClock;
    this.#level = Math.min(options.initialLevel ?? this.capacity, this.capacity);
    this.#refilledAt = this.#clock.now();
    this.#window = options.rollingWindow === false ? undefined : new RollingWindow(tokensPerMinute);
  }

  /** Whether the rolling-minute guard is on. */
  get rollingWindow(): boolean {
    return this.#window !== undefined;
  }

  /** Tokens counted in the last 60 s (actual usage once reconciled); undefined with the guard off. */
  get windowTokens(): number | undefined {
    return this.#window?.used(this.#clock.now());
  }

  /** Ticket of the last admission made by a `tryReserve` that returned true (read right after it). */
  get lastAdmission(): AdmissionTicket | undefined {
    return this.#lastAdmission;
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
    if (this.#window && !this.#window.fits(this.#clock.now(), tokens)) return false;
    this.#take(tokens);
    return true;
  }

  /** Wait (FIFO, without blocking the event loop) until the tokens can be taken; resolves with the admission's ticket. */
  reserve(tokens: number, options: ReserveOptions = {}): Promise<AdmissionTicket | undefined> {
    try {
      if (this.tryReserve(tokens)) return Promise.resolve(this.#lastAdmission);
    } catch (error) {
      return Promise.reject(error);
    }
    const { deadline, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (deadline !== undefined && deadline <= this.#clock.now()) {
      return Promise.reject(new DeadlineExceeded('token budget'));
    }
    return new Promise<AdmissionTicket | undefined>((resolve, reject) => {
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
        grant: (ticket) => {
          leave();
          resolve(ticket);
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
   * With the rolling-minute guard, `admission` (the reservation's ticket) lets the window
   * count the actual usage in place of the estimate; without it only a debt is counted (now).
   */
  reconcile(reserved: number, actual: number, admission?: AdmissionTicket): void {
    if (!Number.isFinite(reserved) || !Number.isFinite(actual)) {
      throw new RangeError(`reconcile needs finite numbers, got reserved=${reserved} actual=${actual}`);
    }
    this.#refill();
    this.#level = Math.min(this.capacity, this.#level + reserved - actual);
    this.#window?.adjust(this.#clock.now(), reserved, actual, admission);
    this.#admit();
  }

  #take(tokens: number): void {
    this.#level -= tokens;
    this.#lastAdmission = this.#window?.add(this.#clock.now(), tokens);
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
      const bucketWaitMs = this.#level + EPSILON < head.tokens ? Math.ceil((head.tokens - this.#level) / this.#perMs) : 0;
      const windowWaitMs = this.#window ? this.#window.waitMs(this.#clock.now(), head.tokens) : 0;
      const waitMs = Math.max(bucketWaitMs, windowWaitMs);
      if (waitMs > 0) {
        this.#wakeTimer = this.#clock.setTimeout(() => {
          this.#wakeTimer = undefined;
          this.#admit();
        }, waitMs);
        return;
      }
      this.#take(head.tokens);
      head.grant(this.#lastAdmission);
    }
  }
}
