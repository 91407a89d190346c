// The wait queue shared by the semaphore and both token budgets: waiters in order of their
// priority (lower first; the time they arrived unless told otherwise, so plain FIFO), then of
// arrival, each with an optional deadline and AbortSignal. Request admission gives a call its
// request's admission order as priority: an admitted request's calls go before newer ones'. A waiter leaves exactly once (granted,
// failed, past its deadline or aborted), and leaving clears its timer and its abort listener,
// so nothing outlives the wait. What a waiter waits for is the owner's business: the owner
// walks the queue and grants.
import type { Clock, TimerHandle } from './clock.ts';
import { DeadlineExceeded } from './errors.ts';

export interface WaitOptions {
  /** Absolute time on the queue's clock after which the waiter gives up with DeadlineExceeded. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  /** Lower waits less; default: now on the queue's clock (arrival order). */
  readonly priority?: number;
}

export interface WaiterQueueOptions<D> {
  readonly clock: Clock;
  /** Names the resource in DeadlineExceeded ("semaphore", "token budget"). */
  readonly what: string;
  /** Called after any waiter left the queue (granted or not), before its promise settles. */
  readonly onLeave?: (waiter: Waiter<D, unknown>) => void;
  /** Called after a waiter gave up or was failed: the next one may be able to go now. */
  readonly onGiveUp?: () => void;
}

/** One queued wait. grant and fail are no-ops once the waiter has left. */
export interface Waiter<D, T> {
  readonly data: D;
  readonly queued: boolean;
  grant(value: T): void;
  fail(reason: unknown): void;
}

/** How a waiter leaves its queue: one object per queue, shared by its waiters. */
interface Exit<D, T> {
  /** Removes the waiter; false when it had already left. */
  leave(waiter: QueuedWaiter<D, T>): boolean;
  /** Tells the owner a waiter left without being granted. */
  gaveUp(): void;
}

class QueuedWaiter<D, T> implements Waiter<D, T> {
  queued = true;
  timer: TimerHandle | undefined;
  readonly data: D;
  readonly priority: number;
  readonly signal: AbortSignal | undefined;
  readonly #exit: Exit<D, T>;
  readonly #resolve: (value: T) => void;
  readonly #reject: (reason: unknown) => void;
  readonly onAbort = (): void => this.fail(this.signal?.reason);

  constructor(
    exit: Exit<D, T>,
    data: D,
    priority: number,
    signal: AbortSignal | undefined,
    resolve: (value: T) => void,
    reject: (reason: unknown) => void,
  ) {
    this.#exit = exit;
    this.data = data;
    this.priority = priority;
    this.signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  grant(value: T): void {
    if (!this.#exit.leave(this)) return;
    this.#resolve(value);
  }

  fail(reason: unknown): void {
    if (!this.#exit.leave(this)) return;
    this.#reject(reason);
    this.#exit.gaveUp();
  }
}

export class WaiterQueue<D, T> {
  // Sorted by priority, then arrival. Queues are short (bounded by the callers' maxWaiting and
  // deadlines), and most waiters arrive with the highest priority value and are appended.
  readonly #waiters: QueuedWaiter<D, T>[] = [];
  readonly #options: WaiterQueueOptions<D>;
  readonly #exit: Exit<D, T> = {
    leave: (waiter) => {
      if (!waiter.queued) return false;
      waiter.queued = false;
      const at = this.#waiters[0] === waiter ? 0 : this.#waiters.indexOf(waiter);
      this.#waiters.splice(at, 1);
      if (waiter.timer !== undefined) this.#options.clock.clearTimeout(waiter.timer);
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.#options.onLeave?.(waiter);
      return true;
    },
    gaveUp: () => this.#options.onGiveUp?.(),
  };

  constructor(options: WaiterQueueOptions<D>) {
    this.#options = options;
  }

  get size(): number {
    return this.#waiters.length;
  }

  /** The first waiter in order, or undefined when the queue is empty. */
  head(): Waiter<D, T> | undefined {
    return this.#waiters[0];
  }

  /** Waiters in order, each while still queued; safe to grant or fail while iterating. */
  *[Symbol.iterator](): IterableIterator<Waiter<D, T>> {
    for (const waiter of [...this.#waiters]) {
      if (waiter.queued) yield waiter;
    }
  }

  /** Queue a waiter; rejects at once when the signal is already aborted or the deadline has passed. */
  wait(data: D, options: WaitOptions = {}): Promise<T> {
    const { deadline, signal } = options;
    const clock = this.#options.clock;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (deadline !== undefined && deadline <= clock.now()) return Promise.reject(new DeadlineExceeded(this.#options.what));
    return new Promise<T>((resolve, reject) => {
      const waiter = new QueuedWaiter(this.#exit, data, options.priority ?? clock.now(), signal, resolve, reject);
      this.#insert(waiter);
      if (deadline !== undefined) {
        waiter.timer = clock.setTimeout(() => waiter.fail(new DeadlineExceeded(this.#options.what)), deadline - clock.now());
      }
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
    });
  }

  /** After every waiter of lower or equal priority: FIFO among equals. */
  #insert(waiter: QueuedWaiter<D, T>): void {
    const waiters = this.#waiters;
    let at = waiters.length;
    while (at > 0 && waiters[at - 1].priority > waiter.priority) at--;
    waiters.splice(at, 0, waiter);
  }

  /** Fail every queued waiter with `reason`. */
  failAll(reason: unknown): void {
    for (const waiter of [...this.#waiters]) waiter.fail(reason);
  }
}
