// A token bucket in model tokens (the counted tokens: input, or input + output; see
// counted-tokens.ts). It refills continuously at tokensPerMinute / windowMs per millisecond
// up to one window's worth (windowMs is a minute unless a provider counts in shorter windows). Reservations wait in FIFO order (a large one is
// not starved by a stream of small ones) and are settled against the provider's reported
// usage afterwards: an underestimate drives the level negative, so the debt is repaid
// before new calls start.
//
// An adaptive limit may lower the tokens admitted per window below the capacity
// (setWindowLimit); the capacity stays the largest reservation accepted, and a reservation
// above the lowered limit is admitted alone into an empty window. A provider 429 naming a
// retry delay pauses admissions until then (pauseFor).
//
// Rolling-minute guard (option `rollingWindow`, default on): a bucket that starts full admits
// up to capacity + refill = 2 × tokensPerMinute in one 60 s window while it drains, but
// provider quotas are counted per minute window, so that burst overruns them. With the guard,
// a reservation is admitted only when the bucket has the tokens AND the admissions of the
// last 60 s (actual usage once reconciled, debt included) plus it stay within
// tokensPerMinute. Off (`rollingWindow: false`) is the pure bucket, for a provider whose
// quota refills continuously.
import { type Budget, type BudgetFunding, type BudgetTicket, LOCAL_SHARING, type LocalSharing, type ReserveOptions, type UsePart } from './budget.ts';
import { type Clock, realClock, type TimerHandle } from '../clock.ts';
import { type CountedTokens, countedTokensSchema } from '../counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_WINDOW_MS, LOCAL_WINDOW_SLOTS, MAX_WINDOW_MS, MIN_WINDOW_MS } from '../defaults.ts';
import { BudgetRequestTooLarge } from '../errors.ts';
import { RollingWindow } from './rolling-window.ts';
import { type Waiter, WaiterQueue } from '../waiter-queue.ts';
import { drawFromHolds, fitsAfterHoldsInMs, fitsInTurnInMs, type Hold, heldTokens, partsOf, turnsBehind, WindowOutlook } from './window-rule.ts';
import { parseOptions } from '../limiter-options.ts';
import { z } from 'zod';

export type { ReserveOptions, UsePart } from './budget.ts';

export interface TokenBudgetOptions {
  clock?: Clock;
  /** Starting bucket level (default: full). */
  initialLevel?: number;
  /**
   * Also admit nothing that would put more than tokensPerMinute in any rolling 60 s window
   * (default true: provider quotas are per-minute windows). false: the bucket alone, which
   * may admit up to 2 × tokensPerMinute in a minute while a full bucket drains.
   */
  rollingWindow?: boolean;
  /**
   * Which tokens the budget counts (its unit): 'input' (default, as Gemini's TPM), 'total',
   * or a function of usage. The wrapper reserves and reconciles in this unit.
   */
  countedTokens?: CountedTokens;
  /**
   * The quota window, ms (default 60,000): the bucket holds and refills tokensPerMinute per
   * window, and the rolling guard counts this window. Bounded to [1,000, 3,600,000].
   */
  windowMs?: number;
}

const budgetOptionsSchema = z.object({
  tokensPerMinute: z.number().positive().finite(),
  windowMs: z.number().int().min(MIN_WINDOW_MS).max(MAX_WINDOW_MS).optional(),
  countedTokens: countedTokensSchema.optional(),
});

/** Checks the options every budget shares; throws a RangeError naming the field. */
export function checkBudgetOptions(tokensPerMinute: number, options: { countedTokens?: unknown; windowMs?: number }): void {
  parseOptions('budget', budgetOptionsSchema, { tokensPerMinute, windowMs: options.windowMs, countedTokens: options.countedTokens });
}

/**
 * A TokenBudget's admission: its tokens and the rolling-window slot they were counted in (the
 * last one, for an admission counted when used), with what is still held (pending) and what
 * was counted so far.
 */
class TokenTicket implements BudgetTicket {
  readonly tokens: number;
  slot: number | undefined;
  readonly issuer: TokenBudget;
  /** windowAtUse: the parts not yet counted in the window, earliest due first. */
  holds: Hold[];
  /** Tokens counted in the window for this admission. */
  counted: number;

  constructor(issuer: TokenBudget, tokens: number, slot: number | undefined, holds: Hold[]) {
    this.issuer = issuer;
    this.tokens = tokens;
    this.slot = slot;
    this.holds = holds;
    this.counted = tokens - this.pending;
  }

  /** Tokens not yet counted in the window. */
  get pending(): number {
    return heldTokens(this.holds);
  }
}

/** A queued reservation: its tokens, and when it uses them (parts after admission). */
interface Wanted {
  readonly tokens: number;
  readonly atUse: boolean;
  readonly parts: readonly UsePart[];
}

// Refill is computed from elapsed time in floating point; tolerate rounding noise.
const EPSILON = 1e-6;

export class TokenBudget implements Budget, BudgetFunding {
  readonly sharing: LocalSharing = LOCAL_SHARING;
  /** Tokens per window (per minute unless windowMs says otherwise). */
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly countedTokens: CountedTokens;
  readonly windowMs: number;
  #perMs: number;
  /** Tokens admitted per window now (<= capacity). */
  #limit: number;
  #pausedUntil = Number.NEGATIVE_INFINITY;
  readonly #clock: Clock;
  readonly #window: RollingWindow | undefined;
  #level: number;
  #refilledAt: number;
  /** Admitted windowAtUse tokens not yet counted in the window: held against it. */
  #pending = 0;
  /** Tickets with tokens held against the window. */
  readonly #held = new Set<TokenTicket>();
  readonly #waiters: WaiterQueue<Wanted, BudgetTicket>;
  #wakeTimer: TimerHandle | undefined;

  constructor(tokensPerMinute: number, options: TokenBudgetOptions = {}) {
    checkBudgetOptions(tokensPerMinute, options);
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.#limit = tokensPerMinute;
    this.#perMs = tokensPerMinute / this.windowMs;
    this.#clock = options.clock ?? realClock;
    this.#level = Math.min(options.initialLevel ?? this.capacity, this.capacity);
    this.#refilledAt = this.#clock.now();
    this.#window = options.rollingWindow === false ? undefined : new RollingWindow(tokensPerMinute, this.windowMs);
    // The head may have left: the next waiter may fit now, or needs its own wake-up.
    this.#waiters = new WaiterQueue({ clock: this.#clock, what: 'token budget', onGiveUp: () => this.#admit() });
  }

  /** It funds whole requests: fundableInMs, chargeWindow, windowRoomInMs. */
  get funding(): BudgetFunding {
    return this;
  }

  /** Whether the rolling-minute guard is on. */
  get rollingWindow(): boolean {
    return this.#window !== undefined;
  }

  /** Tokens counted in the last 60 s (actual usage once reconciled); undefined with the guard off. */
  get windowTokens(): number | undefined {
    return this.#window?.used(this.#clock.now());
  }

  /** Current bucket level (refilled to now); negative while a debt is being repaid. */
  get available(): number {
    this.#refill();
    return this.#level;
  }

  get waiting(): number {
    return this.#waiters.size;
  }

  /** Admitted windowAtUse tokens not yet counted in the window (held against it). */
  get pendingTokens(): number {
    return this.#pending;
  }

  /** Tokens admitted per window now: the capacity unless an adaptive limit lowered it. */
  get windowLimit(): number {
    return this.#limit;
  }

  /**
   * Admit `tokens` per window from now on (bucket size, refill and the rolling guard), at most
   * the capacity. Lowering it takes effect at once; what the window already holds stays counted.
   */
  setWindowLimit(tokens: number): void {
    if (!Number.isFinite(tokens) || tokens <= 0) throw new RangeError(`window limit must be a positive number, got ${tokens}`);
    this.#refill();
    this.#limit = Math.min(tokens, this.capacity);
    this.#perMs = this.#limit / this.windowMs;
    this.#level = Math.min(this.#level, this.#limit);
    if (this.#window) this.#window.limit = this.#limit;
    this.#admit();
  }

  /** Admit nothing for `ms` (the provider's retry delay after a 429); a longer pause already set stands. */
  pauseFor(ms: number): void {
    if (!Number.isFinite(ms) || ms <= 0) return;
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#clock.now() + ms);
    this.#admit();
  }

  /**
   * Count tokens admitted elsewhere (a shared budget's admission, mirrored into its local
   * fallback): the rolling guard counts them and the bucket drains, to no lower than empty.
   * Never waits; the ticket settles them like any other.
   */
  charge(tokens: number): BudgetTicket {
    if (!Number.isFinite(tokens) || tokens < 0) throw new RangeError(`charged tokens must be a finite number >= 0, got ${tokens}`);
    this.#refill();
    const level = this.#level;
    const ticket = this.#take(tokens, false, [{ afterMs: 0, tokens }]);
    this.#level = Math.max(Math.min(level, 0), level - tokens);
    return ticket;
  }

  /** Take tokens now if they are there and nobody is queued: the admission's ticket, else undefined. */
  tryReserve(tokens: number, options: Pick<ReserveOptions, 'windowAtUse' | 'useSchedule'> = {}): BudgetTicket | undefined {
    this.#check(tokens);
    if (this.#waiters.size > 0) return undefined;
    if (this.#clock.now() < this.#pausedUntil) return undefined;
    this.#refill();
    if (this.#level + EPSILON < Math.min(tokens, this.#limit)) return undefined;
    const atUse = options.windowAtUse === true;
    const parts = partsOf(tokens, atUse, options.useSchedule);
    if (this.#windowWaitMs(this.#clock.now(), tokens, parts) > 0) return undefined;
    return this.#take(tokens, atUse, parts);
  }

  /** Wait (FIFO, without blocking the event loop) until the tokens can be taken; resolves with the admission's ticket. */
  reserve(tokens: number, options: ReserveOptions = {}): Promise<BudgetTicket> {
    try {
      const ticket = this.tryReserve(tokens, options);
      if (ticket) return Promise.resolve(ticket);
    } catch (error) {
      return Promise.reject(error);
    }
    const atUse = options.windowAtUse === true;
    const waited = this.#waiters.wait({ tokens, atUse, parts: partsOf(tokens, atUse, options.useSchedule) }, options);
    this.#admit();
    return waited;
  }

  /** Milliseconds until `tokens` could be taken behind the reservations queued now (0: now). */
  fundableInMs(tokens: number, useSchedule?: readonly UsePart[]): number {
    this.#check(tokens);
    this.#refill();
    // The reservations queued ahead are admitted first, each in its turn on its own schedule.
    const { ahead, turns } = turnsBehind(this.#waiters, partsOf(tokens, true, useSchedule));
    const need = ahead + tokens;
    const bucketWaitMs = this.#level + EPSILON < need ? (need - this.#level) / this.#perMs : 0;
    // The window frees what it holds as its slots age and its holds are counted and age; more
    // than one window of queued tokens waits whole windows.
    const window = this.#window;
    const now = this.#clock.now();
    const windowWaitMs = window
      ? (fitsInTurnInMs(now, window.leaving(now), [...this.#holds()], turns, this.#limit, this.windowMs) ?? Math.ceil(need / window.limit) * this.windowMs)
      : 0;
    return Math.ceil(Math.max(bucketWaitMs, windowWaitMs));
  }

  /**
   * Settle an admission against what the provider reported: give back an overestimate,
   * take the shortfall of an underestimate (possibly going negative). Never above capacity.
   * With the rolling-minute guard, this budget's own ticket lets the window count the actual
   * usage in place of the estimate; any other ticket counts only a debt (now).
   */
  reconcile(ticket: BudgetTicket, actual: number): void {
    const reserved = ticket.tokens;
    if (!Number.isFinite(reserved) || !Number.isFinite(actual)) {
      throw new RangeError(`reconcile needs finite numbers, got reserved=${reserved} actual=${actual}`);
    }
    this.#refill();
    this.#level = Math.min(this.#limit, this.#level + reserved - actual);
    const own = ticket instanceof TokenTicket && ticket.issuer === this ? ticket : undefined;
    if (own) {
      // What was never used leaves the pending hold; the window settles what it counted.
      this.#release(own);
      this.#window?.adjust(this.#clock.now(), own.counted, actual, own.slot);
    } else {
      this.#window?.adjust(this.#clock.now(), reserved, actual, undefined);
    }
    this.#admit();
  }

  /**
   * Ms until the rolling guard lets a reservation of `tokens` used as `parts` in (0: now): until
   * the window, with every hold counted from when it falls due, never holds more than the
   * limit. A whole request counted when used waits for room for all of it, each part from its
   * time on: letting it in over the limit by its own size overran a quota budgeted at 100 %
   * (the quota bench). A reservation above a lowered window limit (at most the capacity) goes
   * alone into an empty window with nothing pending, so it is never starved; while only
   * pending holds are left it looks again after a slot.
   */
  #windowWaitMs(now: number, tokens: number, parts: readonly UsePart[]): number {
    const window = this.#window;
    if (!window) return 0;
    if (tokens <= this.#limit) return this.#scheduleWaitMs(now, parts);
    const emptyMs = window.waitMs(now, this.#limit);
    if (emptyMs > 0) return emptyMs;
    return this.#pending > EPSILON ? this.#slotWaitMs : 0;
  }

  /** The earliest admission time (ms from now) at which `parts` fit the window's outlook. */
  #scheduleWaitMs(now: number, parts: readonly UsePart[]): number {
    const window = this.#window;
    if (!window) return 0;
    const waitMs = new WindowOutlook(window.leaving(now), this.#holds()).fitsInMs(now, parts, this.#limit);
    // Nothing left to leave makes room: the holds must be counted or released first.
    return waitMs ?? this.#slotWaitMs;
  }

  /** One slot of the rolling window, ms: how long to wait before looking again while only holds fill it. */
  get #slotWaitMs(): number {
    return Math.ceil(this.windowMs / LOCAL_WINDOW_SLOTS);
  }

  *#holds(): IterableIterator<Hold> {
    for (const ticket of this.#held) yield* ticket.holds;
  }

  /** The ticket's holds leave the window's outlook (used, or never to be). */
  #release(ticket: TokenTicket): void {
    this.#pending = Math.max(0, this.#pending - ticket.pending);
    ticket.holds = [];
    this.#held.delete(ticket);
  }

  /** A windowAtUse admission's tokens are used now: count them in the window (beyond its reservation too), from its earliest holds. */
  chargeWindow(ticket: BudgetTicket, tokens: number): void {
    if (!(ticket instanceof TokenTicket) || ticket.issuer !== this || !(tokens > 0)) return;
    for (const { taken } of drawFromHolds(ticket.holds, tokens)) this.#pending = Math.max(0, this.#pending - taken);
    if (ticket.holds.length === 0) this.#release(ticket);
    ticket.counted += tokens;
    if (this.#window) ticket.slot = this.#window.add(this.#clock.now(), tokens);
  }

  /**
   * Ms until `tokens` can be counted in the window without overrunning it (0: now). A call
   * that starts before its part fell due may find the window full: the part's room is held
   * from its due time on, so it waits at most until then.
   */
  windowRoomInMs(_ticket: BudgetTicket, tokens: number): number {
    const window = this.#window;
    if (!window || tokens > this.#limit) return 0;
    return window.waitMs(this.#clock.now(), tokens);
  }

  /** Reject every queued reservation and stop the wake-up timer. */
  close(): Promise<void> {
    this.#waiters.failAll(new Error('TokenBudget closed'));
    this.#clearWake();
    return Promise.resolve();
  }

  #take(tokens: number, atUse: boolean, parts: readonly UsePart[]): TokenTicket {
    this.#level -= tokens;
    const now = this.#clock.now();
    if (atUse && this.#window) {
      this.#pending += tokens;
      const holds = parts.map((part) => ({ tokens: part.tokens, dueAt: now + part.afterMs })).sort((a, b) => a.dueAt - b.dueAt);
      const ticket = new TokenTicket(this, tokens, undefined, holds);
      this.#held.add(ticket);
      return ticket;
    }
    return new TokenTicket(this, tokens, this.#window?.add(now, tokens), []);
  }

  #clearWake(): void {
    if (this.#wakeTimer !== undefined) {
      this.#clock.clearTimeout(this.#wakeTimer);
      this.#wakeTimer = undefined;
    }
  }

  #check(tokens: number): void {
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`token reservation must be a finite number >= 0, got ${tokens}`);
    }
    if (tokens > this.capacity) throw new BudgetRequestTooLarge(tokens, this.capacity);
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#refilledAt;
    if (elapsed > 0) {
      this.#level = Math.min(this.#limit, this.#level + elapsed * this.#perMs);
      this.#refilledAt = now;
    }
  }

  #admit(): void {
    this.#clearWake();
    this.#refill();
    for (let head = this.#waiters.head(); head !== undefined; head = this.#waiters.head()) {
      const now = this.#clock.now();
      const waitMs = this.#waitMs(now, head.data);
      if (waitMs > 0) {
        this.#backfill(now, head);
        this.#wakeTimer = this.#clock.setTimeout(() => {
          this.#wakeTimer = undefined;
          this.#admit();
        }, waitMs);
        return;
      }
      head.grant(this.#take(head.data.tokens, head.data.atUse, head.data.parts));
    }
  }

  /** Ms until a queued reservation could be taken (0: now): the bucket, the window and a pause. */
  #waitMs(now: number, { tokens, parts }: Wanted): number {
    const need = Math.min(tokens, this.#limit);
    const bucketWaitMs = this.#level + EPSILON < need ? Math.ceil((need - this.#level) / this.#perMs) : 0;
    return Math.max(bucketWaitMs, this.#windowWaitMs(now, tokens, parts), Math.ceil(this.#pausedUntil - now));
  }

  /**
   * Grants the requests queued behind a head that must wait which can be taken now without
   * delaying it: the head's earliest time (its holds counted when due), with their tokens
   * taken, is no later than without them, and the bucket keeps the head's tokens. A top-up
   * (counted at once) waits for room now; a request at the door behind it, whose calls start
   * later, may fit where the top-up cannot. In strict order the door stood still while the
   * top-up waited (research_pipeline: its writers' second calls).
   */
  #backfill(now: number, head: Waiter<Wanted, TokenTicket>): void {
    const window = this.#window;
    if (!window || this.#pausedUntil > now) return;
    const headAt = (extra: readonly Hold[]) =>
      fitsAfterHoldsInMs(now, window.leaving(now), [...this.#holds(), ...extra], head.data.parts, this.#limit, this.windowMs);
    const before = headAt([]);
    if (before === undefined) return;
    const headNeed = Math.min(head.data.tokens, this.#limit);
    for (const waiter of this.#waiters) {
      const { tokens, atUse, parts } = waiter.data;
      // Only whole requests counted when used (the door's): what they take now is little.
      if (waiter === head || !atUse || this.#level - tokens + EPSILON < headNeed || this.#waitMs(now, waiter.data) > 0) continue;
      const after = headAt(parts.map((part) => ({ dueAt: now + part.afterMs, tokens: part.tokens })));
      if (after === undefined || after > before) continue;
      waiter.grant(this.#take(tokens, atUse, parts));
    }
  }
}
