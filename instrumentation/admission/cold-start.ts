// A limiter that has learned no call's cost, and was given no expected cost, cannot fund a
// request whole, so such a request's calls are admitted one by one while they teach it. When a
// burst meets a cold limiter, every request of the burst took that path at once, their calls
// competed for the budget, and the first burst ended with missing branches. So one request at
// a time learns: the others wait at the door until the learner's request has ended (then, its
// calls having taught each of the tree's agents' cost, they are funded whole), or until its
// turn ended without teaching one (then the next one learns). A request that learns on one
// cold limiter learns on the others of its tree too when nobody does there, so a two-model
// tree has one learner, not two. A turn is bounded (each request's `turnMs`: its tree's chain
// at the expected call time, with margin): a learner whose calls hang holds the others no
// longer than that, and a request shed while it waits is told when the turn ends. A turn whose
// learner finished a call within it is renewed for another turnMs: the learner is slow, not
// hung. Ended at its first turnMs while its request ran on, a learner left the writer of
// research_pipeline unseen; the requests let in were funded at the planner's cost, waited for
// top-ups the window no longer had, and ended partial (the library alone, no expected cost).
//
// States: idle (nobody learns) → learning (one turn, at most turnMs) → when the turn ends (the
// learner's request ended, or the turn ran out): every waiter released when a cost is known,
// else idle and the next waiter learns.
import type { Clock, TimerHandle } from '../clock.ts';
import { WaiterQueue, type WaitOptions } from '../waiter-queue.ts';

/** What a request at a cold limiter does: learn (its calls are admitted one by one), or ask again for a learned cost. */
export type ColdStartTurn = { readonly kind: 'learn'; done(): void } | { readonly kind: 'learned' };

/** A request at the door of a cold limiter: its wait, and how long its turn may last if it learns. */
export interface ColdStartEntry extends WaitOptions {
  readonly turnMs: number;
}

export class ColdStart {
  readonly #clock: Clock;
  readonly #known: () => boolean;
  readonly #finishedCalls: () => number;
  readonly #waiters: WaiterQueue<number, ColdStartTurn>;
  #learning = false;
  /** When the current turn runs out, on the clock. */
  #turnEndsAt = 0;

  /**
   * `known`: whether the limiter has learned a cost now (read when a turn ends);
   * `finishedCalls`: how many calls the limiter has learned from so far (a turn in which it grew is renewed).
   */
  constructor(clock: Clock, known: () => boolean, finishedCalls: () => number = () => 0) {
    this.#clock = clock;
    this.#known = known;
    this.#finishedCalls = finishedCalls;
    this.#waiters = new WaiterQueue<number, ColdStartTurn>({ clock, what: 'cold start', onGiveUp: () => this.#next() });
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
  enter(entry: ColdStartEntry): Promise<ColdStartTurn> {
    const waited = this.#waiters.wait(entry.turnMs, entry);
    this.#next();
    return waited;
  }

  /** Learn now, without waiting, when nobody learns or waits: the turn's end, else undefined. */
  tryLearn(turnMs: number): (() => void) | undefined {
    if (this.#learning || this.#waiters.size > 0) return undefined;
    return this.#turn(turnMs);
  }

  #next(): void {
    if (this.#learning) return;
    if (this.#known()) {
      // Every waiting request asks again, and is funded whole.
      for (let head = this.#waiters.head(); head; head = this.#waiters.head()) head.grant({ kind: 'learned' });
      return;
    }
    const head = this.#waiters.head();
    if (!head) return;
    head.grant({ kind: 'learn', done: this.#turn(head.data) });
  }

  /** Start a turn of at most turnMs; returns its end (once). */
  #turn(turnMs: number): () => void {
    this.#learning = true;
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
    let finished = this.#finishedCalls();
    const expire = () => {
      const now = this.#finishedCalls();
      if (now === finished) return end();
      finished = now;
      this.#turnEndsAt = this.#clock.now() + turnMs;
      timer = this.#clock.setTimeout(expire, turnMs);
    };
    timer = this.#clock.setTimeout(expire, turnMs);
    return end;
  }
}
