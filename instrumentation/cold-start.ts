// A limiter that has learned no call's cost cannot fund a request whole, so such a request's
// calls are admitted one by one while they teach it. When a burst meets a cold limiter, every
// request of the burst took that path at once, their calls competed for the budget, and the
// first burst ended with missing branches. So one request at a time learns: the others wait
// at the door until a call has ended with a cost (then they are funded whole), or until the
// learner ended without teaching one (then the next one learns).
import type { Clock } from './clock.ts';
import { WaiterQueue, type WaitOptions } from './waiter-queue.ts';

/** What a request at a cold limiter does: learn (its calls are admitted one by one), or ask again for a learned cost. */
export type ColdStartTurn = { readonly kind: 'learn'; done(): void } | { readonly kind: 'learned' };

export class ColdStart {
  readonly #waiters: WaiterQueue<undefined, ColdStartTurn>;
  #learning = false;

  constructor(clock: Clock) {
    this.#waiters = new WaiterQueue<undefined, ColdStartTurn>({ clock, what: 'cold start', onGiveUp: () => this.#next() });
  }

  /** A request is learning now. */
  get learning(): boolean {
    return this.#learning;
  }

  /** Requests waiting for a learned cost. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** Learn now when nobody is learning, else wait; rejects with DeadlineExceeded or the abort reason. */
  enter(options: WaitOptions): Promise<ColdStartTurn> {
    const waited = this.#waiters.wait(undefined, options);
    this.#next();
    return waited;
  }

  /** A call ended with a cost: every waiting request asks again, and is funded whole. */
  learned(): void {
    for (let head = this.#waiters.head(); head; head = this.#waiters.head()) head.grant({ kind: 'learned' });
  }

  #next(): void {
    if (this.#learning) return;
    const head = this.#waiters.head();
    if (!head) return;
    this.#learning = true;
    let open = true;
    head.grant({
      kind: 'learn',
      done: () => {
        if (!open) return;
        open = false;
        this.#learning = false;
        this.#next();
      },
    });
  }
}
