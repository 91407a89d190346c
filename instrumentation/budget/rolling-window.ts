// The tokens admitted over the last window (a minute unless told otherwise), for
// TokenBudget's rolling-window guard.
//
// Provider quotas are counted per minute window. A token bucket of one minute's capacity that
// starts full admits up to capacity + refill (2 × the rate) in one 60 s window while it
// drains, so the bucket alone overruns a per-minute quota. This window remembers what was
// admitted and when, so the budget can refuse anything that would make a 60 s window hold
// more than tokensPerMinute.
//
// Memory is bounded: admissions are summed per slot of 1/LOCAL_WINDOW_SLOTS (600) of the window (100 ms of a
// minute) in a ring of 601 slots. A slot is counted until its END is a window old (60.0 to
// 60.1 s after each admission in it, never less), so no window is ever undercounted; the
// price is at most one slot of extra wait.
// A slot number is the admission's ticket: reconcile adjusts that slot, so the window counts
// what the call really used (an underestimate's debt included) while the slot is live.

import { LOCAL_WINDOW_SLOTS } from '../defaults.ts';
import { leavesInMs } from './window-rule.ts';

/** Slots live at once: an admission in slot s is counted while the current slot < s + SLOTS. */
const SLOTS = LOCAL_WINDOW_SLOTS + 1;
// Sums of floating-point adjustments; tolerate rounding noise.
const EPSILON = 1e-6;

export class RollingWindow {
  /** The most one window may hold (an adaptive limit may move it). */
  limit: number;
  readonly windowMs: number;
  readonly #slotMs: number;
  /** Absolute slot number held at each ring position (-Infinity = empty). */
  readonly #slotAt = new Float64Array(SLOTS).fill(Number.NEGATIVE_INFINITY);
  readonly #tokens = new Float64Array(SLOTS);
  #sum = 0;
  /** Newest slot seen; every slot <= current - SLOTS has been subtracted from the sum. */
  #current = Number.NEGATIVE_INFINITY;

  constructor(limit: number, windowMs = 60_000) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.#slotMs = windowMs / LOCAL_WINDOW_SLOTS;
  }

  /** Tokens counted in the window ending now. */
  used(now: number): number {
    this.#advance(now);
    return this.#sum;
  }

  /** Whether `tokens` more fit in the window ending now. */
  fits(now: number, tokens: number): boolean {
    this.#advance(now);
    return this.#sum + tokens <= this.limit + EPSILON;
  }

  /** Count an admission now; returns its ticket (the slot) for `adjust`. */
  add(now: number, tokens: number): number {
    const slot = this.#advance(now);
    const pos = position(slot);
    if (this.#slotAt[pos] !== slot) {
      this.#slotAt[pos] = slot;
      this.#tokens[pos] = 0;
    }
    this.#tokens[pos] += tokens;
    this.#sum += tokens;
    return slot;
  }

  /**
   * Settle an admission against the provider's usage. With its ticket and while its slot is
   * live, the slot is corrected by actual − reserved (give-back or debt). Otherwise only a
   * debt is counted, now (later than the admission: the window over- never under-counts);
   * a give-back whose admission is unknown or already out of the window is dropped.
   */
  adjust(now: number, reserved: number, actual: number, ticket: number | undefined): void {
    const delta = Math.max(0, actual) - reserved;
    this.#advance(now);
    if (ticket !== undefined) {
      const pos = position(ticket);
      if (this.#slotAt[pos] === ticket) {
        // Never below zero: a slot cannot give back more than was admitted in it.
        const applied = Math.max(delta, -this.#tokens[pos]);
        this.#tokens[pos] += applied;
        this.#sum += applied;
        return;
      }
    }
    if (delta > 0) this.add(now, delta);
  }

  /** Milliseconds until `tokens` more fit, as old slots leave the window (0 if they fit now). */
  waitMs(now: number, tokens: number): number {
    this.#advance(now);
    const excess = this.#sum + tokens - this.limit;
    if (excess <= EPSILON) return 0;
    const leftInMs = leavesInMs(this.leaving(now), now, excess);
    // Undefined only for tokens > limit, which callers refuse up front.
    return leftInMs === undefined ? this.windowMs + this.#slotMs : Math.max(1, Math.ceil(leftInMs));
  }

  /**
   * The live slots as [when they leave the window (epoch of the clock, ms), tokens], oldest
   * first: what the window will have freed by any later time.
   */
  leaving(now: number): [number, number][] {
    const current = this.#advance(now);
    const out: [number, number][] = [];
    for (let slot = current - SLOTS + 1; slot <= current; slot++) {
      const pos = position(slot);
      if (this.#slotAt[pos] !== slot || this.#tokens[pos] === 0) continue;
      out.push([(slot + SLOTS) * this.#slotMs, this.#tokens[pos]]);
    }
    return out;
  }

  /** Move to the slot of `now`, subtracting the slots that left the window; returns it. */
  #advance(now: number): number {
    const slot = Math.max(Math.floor(now / this.#slotMs), this.#current);
    if (slot === this.#current) return slot;
    if (slot - this.#current >= SLOTS) {
      // Everything in the ring is at least a minute old.
      this.#slotAt.fill(Number.NEGATIVE_INFINITY);
      this.#tokens.fill(0);
      this.#sum = 0;
    } else {
      for (let gone = this.#current - SLOTS + 1; gone <= slot - SLOTS; gone++) {
        const pos = position(gone);
        if (this.#slotAt[pos] !== gone) continue;
        this.#sum -= this.#tokens[pos];
        this.#slotAt[pos] = Number.NEGATIVE_INFINITY;
        this.#tokens[pos] = 0;
      }
      // Do not carry rounding noise forward.
      if (Math.abs(this.#sum) < EPSILON) this.#sum = 0;
    }
    this.#current = slot;
    return slot;
  }
}

function position(slot: number): number {
  return ((slot % SLOTS) + SLOTS) % SLOTS;
}
