// The safety net for permits held past the maximum call time: ONE timer per wrapper, not one
// per call. Calls register while they hold a permit and leave when the provider call ends;
// the timer is armed for the earliest deadline among them and, when it fires, reclaims
// every call that is due and re-arms for the next. An uncontended call therefore costs a
// Set insertion and deletion instead of a setTimeout/clearTimeout pair.
import { type Clock, type TimerHandle, unrefTimer } from './clock.ts';

/** A call holding a permit. `reclaim()` is called once, at or after `deadline`, if it is still held. */
export interface HeldCall {
  readonly deadline: number;
  reclaim(): void;
}

export class PermitSweeper {
  readonly #clock: Clock;
  readonly #held = new Set<HeldCall>();
  #timer: TimerHandle | undefined;
  /** When the armed timer fires (clock time). */
  #armedAt = Number.POSITIVE_INFINITY;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Calls currently holding a permit. */
  get size(): number {
    return this.#held.size;
  }

  add(call: HeldCall): void {
    this.#held.add(call);
    // Usually a timer is already armed for an earlier deadline: nothing to do.
    if (call.deadline < this.#armedAt) this.#arm(call.deadline);
  }

  /** The call ended: it will not be reclaimed. The timer stays armed; a sweep that finds nothing due re-arms or stops. */
  delete(call: HeldCall): void {
    this.#held.delete(call);
  }

  /** Stop the timer (calls added later arm it again). */
  close(): void {
    this.#disarm();
  }

  #arm(at: number): void {
    this.#disarm();
    this.#armedAt = at;
    this.#timer = this.#clock.setTimeout(() => this.#sweep(), at - this.#clock.now());
    unrefTimer(this.#timer); // never keep the process alive for the safety net alone
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
  }

  #sweep(): void {
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    const due: HeldCall[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const call of this.#held) {
      if (call.deadline <= now) due.push(call);
      else if (call.deadline < next) next = call.deadline;
    }
    for (const call of due) this.#held.delete(call);
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
    for (const call of due) {
      try {
        call.reclaim();
      } catch {
        // One failing reclaim must not stop the others.
      }
    }
  }
}
