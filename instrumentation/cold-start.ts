// A limiter that has learned no call's cost, and was given no expected cost, cannot fund a
// request whole, so such a request's calls are admitted one by one while they teach it. When a
// burst meets a cold limiter, every request of the burst took that path at once, their calls
// competed for the budget, and the first burst ended with missing branches. So one request at
// a time learns: the others wait at the door until a call has ended with a cost (then they are
// funded whole), or until the learner's turn ended without teaching one (then the next one
// learns). A turn is bounded (`turnMs`): a learner whose first call hangs holds the others no
// longer than that, and a request shed while it waits is told when the turn ends.
//
// States: idle (nobody learns) → learning (one turn, at most turnMs) → idle when the turn ends
// (the learner's request ended, or the turn ran out); `learned()` releases every waiter.
import type { Clock, TimerHandle } from './clock.ts';
import { WaiterQueue, type WaitOptions } from './waiter-queue.ts';

/** What a request at a cold limiter does: learn (its calls are admitted one by one), or ask again for a learned cost. */
export type ColdStartTurn = { readonly kind: 'learn'; done(): void } | { readonly kind: 'learned' };

export class ColdStart {
  readonly #clock: Clock;
  readonly #turnMs: () => number;
  readonly #waiters: WaiterQueue<undefined, ColdStartTurn>;
  #learning = false;
  /** When the current turn runs out, on the clock. */
  #turnEndsAt = 0;

  /** `turnMs`: the longest one learner holds the others, read at each turn's start. */
  constructor(clock: Clock, turnMs: () => number) {
    this.#clock = clock;
    this.#turnMs = turnMs;
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

  /** Ms until the current turn runs out at the latest (0 when nobody learns): a truthful retry-after for a request shed while waiting. */
  turnLeftMs(): number {
    return this.#learning ? Math.max(0, this.#turnEndsAt - this.#clock.now()) : 0;
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
    const turnMs = this.#turnMs();
    this.#turnEndsAt = this.#clock.now() + turnMs;
    let open = true;
    let timer: TimerHandle | undefined;
    const end = () => {
      if (!open) return;
      open = false;
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      this.#learning = false;
      this.#next();
    };
    timer = this.#clock.setTimeout(end, turnMs);
    head.grant({ kind: 'learn', done: end });
  }
}
