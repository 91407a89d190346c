// Time source for the limiter. Everything that waits (semaphore deadlines, budget refill,
// backoff, permit reclaim) goes through a Clock so tests can run on fake time.

export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

interface ManualTimer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order and
 * lets promise continuations run between them, so async code observes a consistent time.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: ManualTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = { id: this.#nextId++, at: this.#now + Math.max(0, ms), callback };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** Number of timers not yet fired. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Move time forward by ms, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await flushMicrotasks();
    for (;;) {
      const due = this.#earliestDue(target);
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.callback();
      await flushMicrotasks();
    }
    this.#now = target;
    await flushMicrotasks();
  }

  #earliestDue(target: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.at <= target && (!best || t.at < best.at || (t.at === best.at && t.id < best.id))) best = t;
    }
    return best;
  }
}

/** Never keep the process alive for this timer alone (real timers; a fake clock's handle has no unref). */
export function unrefTimer(handle: TimerHandle): void {
  (handle as { unref?: () => void } | undefined)?.unref?.();
}

/**
 * `work`, or a rejection with `expired()` once `ms` have passed on the clock, whichever comes
 * first. `work` is not cancelled: it settles later, unobserved. The verdict waits for the
 * event loop's check phase, after pending I/O is read: an answer that arrived while the loop
 * was blocked past the deadline still wins.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, clock: Clock, expired: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = clock.setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(expired());
      });
    }, ms);
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      finish();
    };
    work.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error)),
    );
  });
}

/** Let every pending promise continuation run (a macrotask turn drains the microtask queue). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Resolve after ms on the given clock; reject with the signal's reason if it aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
