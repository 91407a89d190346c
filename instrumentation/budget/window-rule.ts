// The window rule, in one place: a reservation is admitted only if the window, the holds and
// its new parts stay within the limit at every later time. TokenBudget applies it to its own
// window, RedisTokenBudget to the one Redis last sent; the Lua of redis-window-script.ts is
// its one other copy, kept equal by a differential property (redis-window-rule.test.ts).
//
// What a rolling window will hold at any later time: the tokens it counts as they leave, and
// the holds of admissions counted when used (windowAtUse) as they fall due. A whole request
// admitted at the door holds its later calls' tokens only from when they are expected to
// start, so the window may take tokens that leave it before those calls run.
import type { UsePart } from './budget.ts';

/** Tokens held against the window from dueAt on (a time on the budget's clock). */
export interface Hold {
  tokens: number;
  readonly dueAt: number;
}

// Window sums are floating point (reconciliations); tolerate rounding noise.
const EPSILON = 1e-6;

/** The parts of a reservation: the schedule scaled to `tokens`, or all of it at once. */
export function partsOf(tokens: number, atUse: boolean, schedule: readonly UsePart[] | undefined): UsePart[] {
  let sum = 0;
  for (const part of schedule ?? []) if (part.tokens > 0) sum += part.tokens;
  if (!atUse || !schedule || !(sum > 0)) return [{ afterMs: 0, tokens }];
  return schedule
    .filter((part) => part.tokens > 0)
    .map((part) => ({ afterMs: Number.isFinite(part.afterMs) ? Math.max(0, part.afterMs) : 0, tokens: (part.tokens * tokens) / sum }));
}

/** Tokens the holds keep, not charged yet. */
export function heldTokens(holds: readonly Hold[]): number {
  let sum = 0;
  for (const hold of holds) sum += hold.tokens;
  return sum;
}

/**
 * Take `tokens` from the earliest holds (a call used them): each hold drawn from, with how
 * much; a hold used up leaves the list. What is beyond the holds is not drawn.
 */
export function drawFromHolds<H extends Hold>(holds: H[], tokens: number): { hold: H; taken: number }[] {
  const drawn: { hold: H; taken: number }[] = [];
  let left = tokens;
  while (left > EPSILON && holds.length > 0) {
    const hold = holds[0];
    const taken = Math.min(left, hold.tokens);
    hold.tokens -= taken;
    left -= taken;
    drawn.push({ hold, taken });
    if (hold.tokens <= EPSILON) holds.shift();
  }
  return drawn;
}

/**
 * Tokens over the limit were everything counted now: the window, every hold and `tokens`
 * (<= 0: it fits). More than the limit fits only an empty window with no holds.
 */
export function excessNow(counted: number, held: number, tokens: number, limit: number): number {
  return counted + held + (tokens <= limit ? tokens - limit : 0);
}

/**
 * The rule's decision now: `tokens` fit when everything counted now fits, or, given its
 * `parts` (held from when each falls due), when the outlook's peak from `at` stays within
 * the limit. Without parts only the first applies (the script's reservation counted at once).
 */
export function fitsNow(
  window: { readonly counted: number; readonly held: number; outlook(): WindowOutlook },
  at: number,
  tokens: number,
  parts: readonly UsePart[] | undefined,
  limit: number,
): boolean {
  if (excessNow(window.counted, window.held, tokens, limit) <= EPSILON) return true;
  return parts !== undefined && tokens <= limit && window.outlook().peak(at, parts) <= limit + EPSILON;
}

/**
 * Ms from `now` until `excess` tokens have left the window (`leaving`: when each live slot
 * leaves, ascending, and its tokens); undefined when what leaves is not enough.
 */
export function leavesInMs(leaving: readonly (readonly [number, number])[], now: number, excess: number): number | undefined {
  let freed = 0;
  for (const [at, tokens] of leaving) {
    freed += tokens;
    if (freed + EPSILON >= excess) return at - now;
  }
  return undefined;
}

/** Whole slots after its admission's slot that a part used `afterMs` later is due in (the ms rounded, then floored to slots). */
export function slotsAfter(afterMs: number, slotMs: number): number {
  return Math.floor(Math.round(afterMs) / slotMs);
}

/** Index of the first element above `value` in an ascending array. */
function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class WindowOutlook {
  readonly #leaveAt: number[] = [];
  /** Tokens still live after the first i slots left. */
  readonly #liveAfter: number[] = [];
  readonly #dueAt: number[] = [];
  /** Held tokens due among the first i holds. */
  readonly #heldBy: number[] = [0];

  /** `leaving`: (time, tokens) of the window's live slots as they leave, ascending in time. */
  constructor(leaving: readonly (readonly [number, number])[], holds: Iterable<Hold>) {
    let live = 0;
    for (const [, tokens] of leaving) live += tokens;
    this.#liveAfter.push(live);
    for (const [at, tokens] of leaving) {
      this.#leaveAt.push(at);
      live -= tokens;
      this.#liveAfter.push(live);
    }
    const sorted = [...holds].sort((a, b) => a.dueAt - b.dueAt);
    for (const hold of sorted) {
      this.#dueAt.push(hold.dueAt);
      this.#heldBy.push((this.#heldBy.at(-1) as number) + hold.tokens);
    }
  }

  /**
   * The most the window would hold at any time from `at` on, were `parts` admitted at `at`:
   * live slots not yet left, every hold due by then (an overdue one counts from `at`), and
   * the parts due by then. Counted holds and parts are taken to stay (they leave a window after).
   */
  peak(at: number, parts: readonly UsePart[]): number {
    const times = [at, ...parts.map((part) => at + part.afterMs)];
    for (const due of this.#dueAt) if (due > at) times.push(due);
    let peak = Number.NEGATIVE_INFINITY;
    for (const time of times) {
      let sum = this.#liveAfter[upperBound(this.#leaveAt, time)] + this.#heldBy[upperBound(this.#dueAt, time)];
      for (const part of parts) if (at + part.afterMs <= time) sum += part.tokens;
      if (sum > peak) peak = sum;
    }
    return peak;
  }

  /**
   * The earliest admission time (ms from `now`) at which `parts` keep the window within
   * `limit` (0: now); undefined when no slot leaving makes room (the holds must be counted or
   * released first). The peak from a time on only falls as slots leave, so the first fitting
   * time is found by bisection over the times a slot leaves, less each part's offset.
   */
  fitsInMs(now: number, parts: readonly UsePart[], limit: number): number | undefined {
    if (this.peak(now, parts) <= limit + EPSILON) return 0;
    const times = new Set<number>();
    for (const at of this.#leaveAt) for (const part of parts) if (at - part.afterMs > now) times.add(at - part.afterMs);
    const sorted = [...times].sort((a, b) => a - b);
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.peak(sorted[mid], parts) <= limit + EPSILON) hi = mid;
      else lo = mid + 1;
    }
    if (lo === sorted.length) return undefined;
    return Math.max(1, Math.ceil(sorted[lo] - now));
  }
}

/**
 * The earliest admission time, ms from `now`, at which `parts` fit, were each hold counted
 * when it falls due and gone a window (`windowMs`) later, as the call it was held for is;
 * undefined when the parts alone exceed the limit. A door's estimate of when a request can be
 * funded: the outlook alone takes every hold to stay (WindowOutlook.fitsInMs), and whole
 * windows were said where it found no time; that shed requests a deep tree's door funds
 * within seconds (research_pipeline: its requests' later calls held more than the window's
 * room while three were in flight, so every arrival was told a minute or more).
 */
export function fitsAfterHoldsInMs(
  now: number,
  leaving: readonly (readonly [number, number])[],
  holds: readonly Hold[],
  parts: readonly UsePart[],
  limit: number,
  windowMs: number,
): number | undefined {
  let partTokens = 0;
  for (const part of parts) partTokens += part.tokens;
  if (partTokens > limit + EPSILON) return undefined;
  // Admitted at `at`: the holds due by then were counted and leave a window after their due time.
  const peakAt = (at: number) => {
    const left: (readonly [number, number])[] = [...leaving];
    const staying: Hold[] = [];
    for (const hold of holds) {
      if (hold.dueAt <= at) left.push([hold.dueAt + windowMs, hold.tokens]);
      else staying.push(hold);
    }
    left.sort((a, b) => a[0] - b[0]);
    return new WindowOutlook(left, staying).peak(at, parts);
  };
  // The peak from a time on only falls as holds are counted and slots leave: bisect over the
  // times a hold is counted and the times something leaves, less each part's offset.
  const leaves = [...leaving.map(([at]) => at), ...holds.map((hold) => hold.dueAt + windowMs)];
  const offsets = [0, ...parts.map((part) => part.afterMs)];
  const times = new Set<number>();
  for (const at of leaves) for (const offset of offsets) if (at - offset > now) times.add(at - offset);
  // A hold counted (from its due time) leaves a window later: the peak can fall then too.
  for (const hold of holds) if (hold.dueAt > now) times.add(hold.dueAt);
  const sorted = [now, ...[...times].sort((a, b) => a - b)];
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (peakAt(sorted[mid]) <= limit + EPSILON) hi = mid;
    else lo = mid + 1;
  }
  if (lo === sorted.length) return undefined;
  return lo === 0 ? 0 : Math.max(1, Math.ceil(sorted[lo] - now));
}

/**
 * A reservation asking behind those queued: the queued ones' tokens added up (`ahead`), and
 * every one's parts in the order they are admitted, its own last (`turns`, for fitsInTurnInMs).
 */
export function turnsBehind(
  queued: Iterable<{ readonly data: { readonly tokens: number; readonly parts: readonly UsePart[] } }>,
  parts: readonly UsePart[],
): { ahead: number; turns: (readonly UsePart[])[] } {
  let ahead = 0;
  const turns: (readonly UsePart[])[] = [];
  for (const { data } of queued) {
    ahead += data.tokens;
    turns.push(data.parts);
  }
  turns.push(parts);
  return { ahead, turns };
}

/**
 * The earliest admission time, ms from `now`, of the last of `turns` (each queued
 * reservation's parts, in queue order, then the one asking): each is admitted at the earliest
 * time it fits after the one before it (fitsAfterHoldsInMs) and held from then; undefined when
 * one of them cannot fit. Taken as admitted all at once, requests queued ahead were packed into
 * one instant's room: a request told it fits in 13 s waited 18 s, past its door deadline, while
 * the arrivals behind it were shed (contract_review).
 */
export function fitsInTurnInMs(
  now: number,
  leaving: readonly (readonly [number, number])[],
  holds: readonly Hold[],
  turns: readonly (readonly UsePart[])[],
  limit: number,
  windowMs: number,
): number | undefined {
  let at = now;
  const held: Hold[] = [...holds];
  for (const parts of turns) {
    const inMs = fitsAfterHoldsInMs(at, leaving, held, parts, limit, windowMs);
    if (inMs === undefined) return undefined;
    at += inMs;
    for (const part of parts) held.push({ tokens: part.tokens, dueAt: at + part.afterMs });
  }
  return at - now;
}
