// A counting semaphore with strict FIFO admission: a newcomer never overtakes a waiter,
// so a burst of calls is admitted in arrival order. Waiters may carry a deadline and an
// AbortSignal; one that gives up leaves the queue without ever taking a permit.
import { type Clock, realClock, type TimerHandle } from './clock.ts';
import { DeadlineExceeded } from './errors.ts';

/** A held permit. release() is idempotent and reports whether this call released it. */
export interface Permit {
  readonly released: boolean;
  release(): boolean;
}

export interface AcquireOptions {
  /** Absolute time on the semaphore's clock after which the waiter gives up. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
}

interface Waiter {
  grant(permit: Permit): void;
}

export class FairSemaphore {
  #limit: number;
  #inUse = 0;
  readonly #waiters = new Set<Waiter>();
  readonly #clock: Clock;
  // The integral of inUse over time (permit-milliseconds), advanced at every change of inUse,
  // so rate() of the exported counter is the exact mean of permits held, with no sampling.
  #heldMs = 0;
  #changedAt: number;

  constructor(limit: number, options: { clock?: Clock } = {}) {
    assertLimit(limit);
    this.#limit = limit;
    this.#clock = options.clock ?? realClock;
    this.#changedAt = this.#clock.now();
  }

  /** Permit-seconds held since the semaphore was created: the time integral of inUse. */
  get heldPermitSeconds(): number {
    this.#accountHeldTime();
    return this.#heldMs / 1000;
  }

  #accountHeldTime(): void {
    const now = this.#clock.now();
    this.#heldMs += this.#inUse * (now - this.#changedAt);
    this.#changedAt = now;
  }

  get limit(): number {
    return this.#limit;
  }

  get inUse(): number {
    return this.#inUse;
  }

  get waiting(): number {
    return this.#waiters.size;
  }

  /** Change the limit at run time. Raising it admits waiters at once; lowering it lets holders finish. */
  setLimit(limit: number): void {
    assertLimit(limit);
    this.#limit = limit;
    this.#admit();
  }

  /** Take a permit now if one is free and nobody is queued, else undefined. */
  tryAcquire(): Permit | undefined {
    if (this.#waiters.size > 0 || this.#inUse >= this.#limit) return undefined;
    this.#accountHeldTime();
    this.#inUse++;
    return this.#newPermit();
  }

  acquire(options: AcquireOptions = {}): Promise<Permit> {
    const immediate = this.tryAcquire();
    if (immediate) return Promise.resolve(immediate);
    const { deadline, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (deadline !== undefined && deadline <= this.#clock.now()) {
      return Promise.reject(new DeadlineExceeded('semaphore'));
    }
    return new Promise<Permit>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const leave = () => {
        this.#waiters.delete(waiter);
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        leave();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: (permit) => {
          leave();
          resolve(permit);
        },
      };
      this.#waiters.add(waiter);
      if (deadline !== undefined) {
        timer = this.#clock.setTimeout(() => {
          leave();
          reject(new DeadlineExceeded('semaphore'));
          // Leaving may unblock nobody, but keeps the invariant simple: admit whoever can go.
          this.#admit();
        }, deadline - this.#clock.now());
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #newPermit(): Permit {
    return new HeldPermit(this.#releaseOne);
  }

  // One function per semaphore, shared by its permits (a permit is taken on every call).
  readonly #releaseOne = (): void => {
    this.#accountHeldTime();
    this.#inUse--;
    this.#admit();
  };

  #admit(): void {
    if (this.#inUse >= this.#limit || this.#waiters.size === 0) return;
    this.#accountHeldTime();
    while (this.#inUse < this.#limit && this.#waiters.size > 0) {
      const first = this.#waiters.values().next().value as Waiter;
      this.#inUse++;
      first.grant(this.#newPermit());
    }
  }
}

/** A permit as a small class: no per-permit closures or accessors on the hot path. */
class HeldPermit implements Permit {
  #released = false;
  readonly #onRelease: () => void;

  constructor(onRelease: () => void) {
    this.#onRelease = onRelease;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): boolean {
    if (this.#released) return false;
    this.#released = true;
    this.#onRelease();
    return true;
  }
}

function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`semaphore limit must be an integer >= 1, got ${limit}`);
  }
}
