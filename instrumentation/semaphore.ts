// A counting semaphore with strict FIFO admission: a newcomer never overtakes a waiter,
// so a burst of calls is admitted in arrival order. A waiter may carry a priority (request
// admission gives its request's admission order): waiters go in priority order, then FIFO. Waiters may carry a deadline and an
// AbortSignal; one that gives up leaves the queue without ever taking a permit.
//
// Lanes (traffic classes): an acquire may name a lane, and a lane may be capped (at most n
// permits held by it), so a batch backfill cannot take every permit from interactive users.
// Admission is FIFO among ELIGIBLE waiters: a waiter whose lane is at its cap is skipped
// (it never blocks the ones behind it) and keeps its place for when its lane frees up.
// With no cap configured the queue is exactly the strict FIFO above.
import { z } from 'zod';
import { type Clock, realClock } from './clock.ts';
import { WaiterQueue } from './waiter-queue.ts';

/** A held permit. release() is idempotent and reports whether this call released it. */
export interface Permit {
  readonly released: boolean;
  release(): boolean;
}

export interface AcquireOptions {
  /** Absolute time on the semaphore's clock after which the waiter gives up. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
  /** The traffic class this permit counts against (see setLaneLimit). */
  readonly lane?: string;
  /** Lower is admitted first (default: the time of the call, i.e. FIFO); see WaiterQueue. */
  readonly priority?: number;
}

export interface FairSemaphoreOptions {
  readonly clock?: Clock;
  /** Per-lane caps: a lane may hold at most this many permits (lanes not named are uncapped). */
  readonly laneLimits?: Readonly<Record<string, number>>;
}

/** One lane's count and cap; permits and waiters point at it, so a call does no map lookup to release. */
interface LaneState {
  held: number;
  limit: number | undefined;
}

export class FairSemaphore {
  #limit: number;
  #inUse = 0;
  readonly #waiters: WaiterQueue<LaneState | undefined, Permit>;
  readonly #clock: Clock;
  // The integral of inUse over time (permit-milliseconds), advanced at every change of inUse,
  // so rate() of the exported counter is the exact mean of permits held, with no sampling.
  #heldMs = 0;
  #changedAt: number;
  // Every lane seen, capped or not (a cap set later sees its holders). Lanes are a few
  // traffic classes: entries are kept, never churned per call.
  readonly #lanes = new Map<string, LaneState>();
  #cappedLanes = 0;
  /** Called after a permit is released or the limit changes (permits may be free). */
  readonly #onFree = new Set<() => void>();

  constructor(limit: number, options: FairSemaphoreOptions = {}) {
    assertLimit(limit);
    this.#limit = limit;
    this.#clock = options.clock ?? realClock;
    this.#changedAt = this.#clock.now();
    // A waiter that gave up leaves no permit behind; admitting after it keeps the invariant simple.
    this.#waiters = new WaiterQueue({ clock: this.#clock, what: 'semaphore', onGiveUp: () => this.#admit() });
    for (const [lane, cap] of Object.entries(options.laneLimits ?? {})) {
      this.#setCap(lane, cap);
    }
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

  /** Permits no one holds or waits for. */
  get free(): number {
    return Math.max(0, this.#limit - this.#inUse - this.#waiters.size);
  }

  /** Call `listener` whenever permits may have come free (a release, a limit change); returns the unsubscribe. */
  onFree(listener: () => void): () => void {
    this.#onFree.add(listener);
    return () => this.#onFree.delete(listener);
  }

  /** Permits held by a lane right now. */
  laneInUse(lane: string): number {
    return this.#lanes.get(lane)?.held ?? 0;
  }

  /** A lane's cap, or undefined when it is uncapped. */
  laneLimit(lane: string): number | undefined {
    return this.#lanes.get(lane)?.limit;
  }

  /** Change the limit at run time. Raising it admits waiters at once; lowering it lets holders finish. */
  setLimit(limit: number): void {
    assertLimit(limit);
    this.#limit = limit;
    this.#admit();
    for (const listener of this.#onFree) listener();
  }

  /**
   * Cap a lane at `limit` permits (undefined removes the cap). Raising or removing a cap
   * admits its waiters at once; lowering it lets holders finish.
   */
  setLaneLimit(lane: string, limit: number | undefined): void {
    this.#setCap(lane, limit);
    this.#admit();
  }

  #setCap(lane: string, limit: number | undefined): void {
    if (limit !== undefined) assertLimit(limit, `lane "${lane}" limit`);
    const state = this.#lane(lane);
    this.#cappedLanes += (limit === undefined ? 0 : 1) - (state.limit === undefined ? 0 : 1);
    state.limit = limit;
  }

  #lane(name: string): LaneState {
    let state = this.#lanes.get(name);
    if (!state) {
      state = { held: 0, limit: undefined };
      this.#lanes.set(name, state);
    }
    return state;
  }

  /** Take a permit now if one is free, the lane is under its cap and no eligible waiter is queued, else undefined. */
  tryAcquire(options?: { readonly lane?: string }): Permit | undefined {
    if (this.#inUse >= this.#limit) return undefined;
    if (this.#waiters.size > 0) {
      // Without caps every waiter is eligible: nobody passes them. With caps, waiters may be
      // parked on a full lane; a newcomer passes them only if none of them could go.
      if (this.#cappedLanes === 0 || this.#hasEligibleWaiter()) return undefined;
    }
    const laneName = options?.lane;
    const lane = laneName === undefined ? undefined : this.#lane(laneName);
    if (lane !== undefined && !hasRoom(lane)) return undefined;
    this.#accountHeldTime();
    this.#inUse++;
    return this.#newPermit(lane);
  }

  acquire(options: AcquireOptions = {}): Promise<Permit> {
    const immediate = this.tryAcquire(options);
    if (immediate) return Promise.resolve(immediate);
    const lane = options.lane === undefined ? undefined : this.#lane(options.lane);
    return this.#waiters.wait(lane, options);
  }

  /** Counts the permit (inUse already counted by the caller) against its lane. */
  #newPermit(lane: LaneState | undefined): Permit {
    if (lane !== undefined) lane.held++;
    return new HeldPermit(this.#releaseOne, lane);
  }

  #hasEligibleWaiter(): boolean {
    for (const waiter of this.#waiters) {
      if (waiter.data === undefined || hasRoom(waiter.data)) return true;
    }
    return false;
  }

  // One function per semaphore, shared by its permits (a permit is taken on every call).
  readonly #releaseOne = (lane: LaneState | undefined): void => {
    this.#accountHeldTime();
    this.#inUse--;
    if (lane !== undefined) lane.held--;
    this.#admit();
    for (const listener of this.#onFree) listener();
  };

  #admit(): void {
    if (this.#inUse >= this.#limit || this.#waiters.size === 0) return;
    // Every inUse change below happens at this same instant: account the time before it once.
    this.#accountHeldTime();
    if (this.#cappedLanes === 0) {
      while (this.#inUse < this.#limit && this.#waiters.size > 0) {
        const first = this.#waiters.head();
        if (first === undefined) return;
        this.#inUse++;
        first.grant(this.#newPermit(first.data));
      }
      return;
    }
    // FIFO among eligible waiters: skip the ones whose lane is full (the queue iterates safely
    // while granted waiters delete themselves).
    for (const waiter of this.#waiters) {
      if (this.#inUse >= this.#limit) return;
      if (waiter.data !== undefined && !hasRoom(waiter.data)) continue;
      this.#inUse++;
      waiter.grant(this.#newPermit(waiter.data));
    }
  }
}

/** A permit as a small class: no per-permit closures or accessors on the hot path. */
class HeldPermit implements Permit {
  #released = false;
  readonly #onRelease: (lane: LaneState | undefined) => void;
  readonly #lane: LaneState | undefined;

  constructor(onRelease: (lane: LaneState | undefined) => void, lane: LaneState | undefined) {
    this.#onRelease = onRelease;
    this.#lane = lane;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): boolean {
    if (this.#released) return false;
    this.#released = true;
    this.#onRelease(this.#lane);
    return true;
  }
}

function hasRoom(lane: LaneState): boolean {
  return lane.limit === undefined || lane.held < lane.limit;
}

/** A semaphore's limit, or a lane's. */
const permitLimit = z.int().min(1);

function assertLimit(limit: number, what = 'limit'): void {
  if (!permitLimit.safeParse(limit).success) {
    throw new RangeError(`semaphore ${what} must be an integer >= 1, got ${limit}`);
  }
}
