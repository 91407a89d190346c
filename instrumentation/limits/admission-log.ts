// The tokens one replica's calls were admitted with over the last window, by when: what this
// replica put into the provider's current window. AimdLimit reads the part since the
// provider's window began (from a 429's retry delay) as this replica's share of a full window.
//
// Memory is bounded: admissions are summed per slot of 1/100 of the window in a ring of 101
// slots. A span counts the slots wholly inside it and not the current one, so it never counts
// more than was admitted in it (the call that just drew a 429 was admitted in the current
// slot: the provider did not count it).

/** Slots per window. */
const SLOTS_PER_WINDOW = 100;
const SLOTS = SLOTS_PER_WINDOW + 1;

export class AdmissionLog {
  readonly windowMs: number;
  readonly #slotMs: number;
  /** Absolute slot number held at each ring position (-Infinity = empty). */
  readonly #slotAt = new Float64Array(SLOTS).fill(Number.NEGATIVE_INFINITY);
  readonly #tokens = new Float64Array(SLOTS);

  constructor(windowMs: number) {
    this.windowMs = windowMs;
    this.#slotMs = windowMs / SLOTS_PER_WINDOW;
  }

  /** Count an admission of `tokens` at `now`. */
  add(now: number, tokens: number): void {
    if (!(Number.isFinite(tokens) && tokens > 0)) return;
    const slot = Math.floor(now / this.#slotMs);
    const pos = slot % SLOTS;
    if (this.#slotAt[pos] !== slot) {
      this.#slotAt[pos] = slot;
      this.#tokens[pos] = 0;
    }
    this.#tokens[pos] += tokens;
  }

  /** Tokens admitted over the last window, the current slot included. */
  total(now: number): number {
    const current = Math.floor(now / this.#slotMs);
    let sum = 0;
    for (let pos = 0; pos < SLOTS; pos++) {
      const slot = this.#slotAt[pos];
      if (slot > current - SLOTS && slot <= current) sum += this.#tokens[pos];
    }
    return sum;
  }

  /** Tokens admitted from `from` to `now` (at most one window back), in the slots wholly between them. */
  since(now: number, from: number): number {
    const current = Math.floor(now / this.#slotMs);
    const first = Math.max(Math.ceil(from / this.#slotMs), current - SLOTS_PER_WINDOW);
    let sum = 0;
    for (let pos = 0; pos < SLOTS; pos++) {
      const slot = this.#slotAt[pos];
      if (slot >= first && slot < current) sum += this.#tokens[pos];
    }
    return sum;
  }
}
