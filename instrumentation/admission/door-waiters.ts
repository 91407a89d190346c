// The requests waiting at one limiter's door right now, by arrival: how long the oldest has
// waited is a leading signal. The door-wait histogram records a wait only when the request
// is admitted or shed, so while demand first outgrows the budget it shows nothing; the
// oldest wait rises from the first second requests queue, before any of them is shed.
export class DoorWaiters {
  readonly #arrivals = new Map<symbol, number>();

  /** A request arrived at `arrivedAt` waits at the door; returns its leaving (once). */
  enter(arrivedAt: number): () => void {
    const key = Symbol('door waiter');
    this.#arrivals.set(key, arrivedAt);
    return () => {
      this.#arrivals.delete(key);
    };
  }

  /** Requests at the door now. */
  get size(): number {
    return this.#arrivals.size;
  }

  /** How long the oldest request at the door has waited at `now`, ms (0 when none). */
  oldestWaitMs(now: number): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const at of this.#arrivals.values()) oldest = Math.min(oldest, at);
    return oldest === Number.POSITIVE_INFINITY ? 0 : Math.max(0, now - oldest);
  }
}
