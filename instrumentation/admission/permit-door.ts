// The way from request admission to a shared budget, one request at a time. Under a shared
// budget the window's room goes to whichever replica asks first. A replica whose permits are
// all held would take fleet room that its calls cannot use yet: they wait for permits while
// the room stays held and the provider counts nothing. Another replica with free permits could
// run that request at once. So a request asks the shared budget only once this replica can
// start its first calls: nobody before it is still starting, and the permits those calls need
// are free. A static share is this replica's alone, so its requests do not pass this door.
import type { Clock } from '../clock.ts';
import type { FairSemaphore } from '../semaphore.ts';
import { WaiterQueue, type WaitOptions } from '../waiter-queue.ts';

/** A request through the door: it holds the door until its first calls started, one of its calls ended, or it left. */
export interface DoorPass {
  /** One of the request's calls took a permit. */
  callStarted(): void;
  /** The request's start is over (a call of it ended, it was shed, or it ended). */
  leave(): void;
}

class HeldPass implements DoorPass {
  #left: number;
  #open = true;
  readonly #onLeave: () => void;

  constructor(calls: number, onLeave: () => void) {
    this.#left = calls;
    this.#onLeave = onLeave;
  }

  callStarted(): void {
    if (--this.#left <= 0) this.leave();
  }

  leave(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#onLeave();
  }
}

export class PermitDoor {
  readonly #semaphore: FairSemaphore;
  /** Requests waiting, each with the permits its first calls need. */
  readonly #waiters: WaiterQueue<number, DoorPass>;
  #starting = false;

  constructor(semaphore: FairSemaphore, clock: Clock) {
    this.#semaphore = semaphore;
    this.#waiters = new WaiterQueue<number, DoorPass>({ clock, what: 'permit door', onGiveUp: () => this.#letIn() });
    semaphore.onFree(() => this.#letIn());
  }

  /** Requests waiting at the door. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Wait until this replica can start `calls` calls at once (at most its permit limit) and no
   * request before is still starting; rejects with DeadlineExceeded or the abort reason.
   */
  enter(calls: number, options: WaitOptions): Promise<DoorPass> {
    const waited = this.#waiters.wait(Math.max(1, calls), options);
    this.#letIn();
    return waited;
  }

  /**
   * Enter, then `reserve` while holding the door: the request's pass with what the reservation
   * gave. A reservation that fails leaves the door at once, so the next request may go.
   */
  async reserveThrough<T>(calls: number, options: WaitOptions, reserve: () => Promise<T>): Promise<{ readonly pass: DoorPass; readonly value: T }> {
    const pass = await this.enter(calls, options);
    try {
      return { pass, value: await reserve() };
    } catch (error) {
      pass.leave();
      throw error;
    }
  }

  #letIn(): void {
    if (this.#starting) return;
    const head = this.#waiters.head();
    if (!head || this.#semaphore.free < Math.min(head.data, this.#semaphore.limit)) return;
    this.#starting = true;
    head.grant(
      new HeldPass(head.data, () => {
        this.#starting = false;
        this.#letIn();
      }),
    );
  }
}
