// A token bucket in model tokens (the counted tokens: input, or input + output; see
// counted-tokens.ts). It refills continuously at tokensPerMinute / windowMs per millisecond
// up to one window's worth (windowMs is a minute unless a provider counts in shorter windows). Reservations wait in FIFO order (a large one is
// not starved by a stream of small ones) and are settled against the provider's reported
// usage afterwards: an underestimate drives the level negative, so the debt is repaid
// before new calls start.
//
// Rolling-minute guard (option `rollingWindow`, default on): a bucket that starts full admits
// up to capacity + refill = 2 × tokensPerMinute in one 60 s window while it drains, but
// provider quotas are counted per minute window, so that burst overruns them. With the guard,
// a reservation is admitted only when the bucket has the tokens AND the admissions of the
// last 60 s (actual usage once reconciled, debt included) plus it stay within
// tokensPerMinute. Off (`rollingWindow: false`) is the pure bucket, for a provider whose
// quota refills continuously.
import type { Budget, BudgetTicket, ReserveOptions } from './budget.ts';
import { type Clock, realClock, type TimerHandle } from './clock.ts';
import { type CountedTokens, countedTokensSchema } from './counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_WINDOW_MS, MAX_WINDOW_MS, MIN_WINDOW_MS } from './defaults.ts';
import { BudgetRequestTooLarge } from './errors.ts';
import { RollingWindow } from './rolling-window.ts';
import { WaiterQueue } from './waiter-queue.ts';

export type { ReserveOptions } from './budget.ts';

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

/** Checks the options every budget shares; throws a RangeError naming the field. */
export function checkBudgetOptions(tokensPerMinute: number, options: { countedTokens?: unknown; windowMs?: number }): void {
  if (!Number.isFinite(tokensPerMinute) || tokensPerMinute <= 0) {
    throw new RangeError(`tokensPerMinute must be a positive number, got ${tokensPerMinute}`);
  }
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  if (!Number.isInteger(windowMs) || windowMs < MIN_WINDOW_MS || windowMs > MAX_WINDOW_MS) {
    throw new RangeError(`windowMs must be a whole number of ms in [${MIN_WINDOW_MS}, ${MAX_WINDOW_MS}], got ${windowMs}`);
  }
  if (options.countedTokens !== undefined && !countedTokensSchema.safeParse(options.countedTokens).success) {
    throw new RangeError(`countedTokens must be 'input', 'total' or a function of usage, got ${JSON.stringify(options.countedTokens)}`);
  }
}

/**
 * A TokenBudget's admission: its tokens and the rolling-window slot they were counted in (the
 * last one, for an admission counted when used), with what is still pending and what was
 * counted so far.
 */
class TokenTicket implements BudgetTicket {
  readonly tokens: number;
  slot: number | undefined;
  readonly issuer: TokenBudget;
  /** windowAtUse: tokens not yet counted in the window. */
  pending: number;
  /** Tokens counted in the window for this admission. */
  counted: number;

  constructor(issuer: TokenBudget, tokens: number, slot: number | undefined, pending: number) {
    this.issuer = issuer;
    this.tokens = tokens;
    this.slot = slot;
    this.pending = pending;
    this.counted = tokens - pending;
  }
}

/** A queued reservation. */
interface Wanted {
  readonly tokens: number;
  readonly atUse: boolean;
}

// Refill is computed from elapsed time in floating point; tolerate rounding noise.
const EPSILON = 1e-6;

export class TokenBudget implements Budget {
  /** Tokens per window (per minute unless windowMs says otherwise). */
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly countedTokens: CountedTokens;
  readonly windowMs: number;
  readonly #perMs: number;
  readonly #clock: Clock;
  readonly #window: RollingWindow | undefined;
  #level: number;
  #refilledAt: number;
  /** Admitted windowAtUse tokens not yet counted in the window: held against it. */
  #pending = 0;
  readonly #waiters: WaiterQueue<Wanted, BudgetTicket>;
  #wakeTimer: TimerHandle | undefined;

  constructor(tokensPerMinute: number, options: TokenBudgetOptions = {}) {
    checkBudgetOptions(tokensPerMinute, options);
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.#perMs = tokensPerMinute / this.windowMs;
    this.#clock = options.clock ?? realClock;
    this.#level = Math.min(options.initialLevel ?? this.capacity, this.capacity);
    this.#refilledAt = this.#clock.now();
    this.#window = options.rollingWindow === false ? undefined : new RollingWindow(tokensPerMinute, this.windowMs);
    // The head may have left: the next waiter may fit now, or needs its own wake-up.
    this.#waiters = new WaiterQueue({ clock: this.#clock, what: 'token budget', onGiveUp: () => this.#admit() });
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

  /** Take tokens now if they are there and nobody is queued: the admission's ticket, else undefined. */
  tryReserve(tokens: number, options: Pick<ReserveOptions, 'windowAtUse'> = {}): BudgetTicket | undefined {
    this.#check(tokens);
    if (this.#waiters.size > 0) return undefined;
    this.#refill();
    if (this.#level + EPSILON < tokens) return undefined;
    const atUse = options.windowAtUse === true;
    if (this.#window && !this.#window.fits(this.#clock.now(), this.#windowNeed(tokens, atUse))) return undefined;
    return this.#take(tokens, atUse);
  }

  /** Wait (FIFO, without blocking the event loop) until the tokens can be taken; resolves with the admission's ticket. */
  reserve(tokens: number, options: ReserveOptions = {}): Promise<BudgetTicket> {
    try {
      const ticket = this.tryReserve(tokens, options);
      if (ticket) return Promise.resolve(ticket);
    } catch (error) {
      return Promise.reject(error);
    }
    const waited = this.#waiters.wait({ tokens, atUse: options.windowAtUse === true }, options);
    this.#admit();
    return waited;
  }

  /** Milliseconds until `tokens` could be taken behind the reservations queued now (0: now). */
  fundableInMs(tokens: number): number {
    this.#check(tokens);
    this.#refill();
    let ahead = 0;
    for (const waiter of this.#waiters) ahead += waiter.data.tokens;
    const need = ahead + tokens;
    const bucketWaitMs = this.#level + EPSILON < need ? (need - this.#level) / this.#perMs : 0;
    // The window frees what it holds as its slots age; more than one window of queued tokens waits whole windows.
    const windowNeed = this.#windowNeed(need, true);
    const windowWaitMs = this.#window
      ? windowNeed <= this.#window.limit
        ? this.#window.waitMs(this.#clock.now(), windowNeed)
        : Math.ceil(windowNeed / this.#window.limit) * this.windowMs
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
    this.#level = Math.min(this.capacity, this.#level + reserved - actual);
    const own = ticket instanceof TokenTicket && ticket.issuer === this ? ticket : undefined;
    if (own) {
      // What was never used leaves the pending hold; the window settles what it counted.
      this.#pending = Math.max(0, this.#pending - own.pending);
      own.pending = 0;
      this.#window?.adjust(this.#clock.now(), own.counted, actual, own.slot);
    } else {
      this.#window?.adjust(this.#clock.now(), reserved, actual, undefined);
    }
    this.#admit();
  }

  /**
   * What must fit in the window for an admission of `tokens`: everything pending, plus the
   * tokens themselves for a call counted at once. A whole request counted when used enters
   * when the window and the pending holds are within the limit, so it may take the window
   * over by at most its own tokens: waiting for room for all of it at once would leave, on
   * average, half a request of every window unused (the bucket still bounds the rate).
   */
  #windowNeed(tokens: number, atUse: boolean): number {
    return atUse ? this.#pending : tokens + this.#pending;
  }

  /** A windowAtUse admission's tokens are used now: count them in the window (beyond its reservation too). */
  chargeWindow(ticket: BudgetTicket, tokens: number): void {
    if (!(ticket instanceof TokenTicket) || ticket.issuer !== this || !(tokens > 0)) return;
    const fromPending = Math.min(tokens, ticket.pending);
    ticket.pending -= fromPending;
    this.#pending = Math.max(0, this.#pending - fromPending);
    ticket.counted += tokens;
    if (this.#window) ticket.slot = this.#window.add(this.#clock.now(), tokens);
  }

  /** Reject every queued reservation and stop the wake-up timer. */
  close(): Promise<void> {
    this.#waiters.failAll(new Error('TokenBudget closed'));
    this.#clearWake();
    return Promise.resolve();
  }

  #take(tokens: number, atUse: boolean): TokenTicket {
    this.#level -= tokens;
    if (atUse && this.#window) {
      this.#pending += tokens;
      return new TokenTicket(this, tokens, undefined, tokens);
    }
    return new TokenTicket(this, tokens, this.#window?.add(this.#clock.now(), tokens), 0);
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
      this.#level = Math.min(this.capacity, this.#level + elapsed * this.#perMs);
      this.#refilledAt = now;
    }
  }

  #admit(): void {
    this.#clearWake();
    this.#refill();
    for (let head = this.#waiters.head(); head !== undefined; head = this.#waiters.head()) {
      const { tokens, atUse } = head.data;
      const bucketWaitMs = this.#level + EPSILON < tokens ? Math.ceil((tokens - this.#level) / this.#perMs) : 0;
      const windowWaitMs = this.#window ? this.#window.waitMs(this.#clock.now(), this.#windowNeed(tokens, atUse)) : 0;
      const waitMs = Math.max(bucketWaitMs, windowWaitMs);
      if (waitMs > 0) {
        this.#wakeTimer = this.#clock.setTimeout(() => {
          this.#wakeTimer = undefined;
          this.#admit();
        }, waitMs);
        return;
      }
      head.grant(this.#take(tokens, atUse));
    }
  }
}
