// RedisTokenBudget's fallback and carry. While Redis is unreachable and the budget fails open,
// reservations go to a local TokenBudget of the static replica share, with its rolling guard.
// Every admission the replica got from Redis is also charged to that local budget, so the
// fallback never starts from a full bucket: in any window a replica admits from its fallback
// at most its share minus what it already admitted (from Redis or locally) in that window.
// Bound: in any window the fleet admits at most the central limit plus, per replica,
// max(0, share − its own admissions in that window); the sum of the shares in the worst case.
// What the fallback admitted (and debts and uses
// that could not reach Redis) is carried: counted in a local window and handed to the next
// script run, which counts it in Redis' window once Redis answers again.
import type { BudgetTicket, ReserveOptions } from './budget.ts';
import type { Clock } from '../clock.ts';
import type { CountedTokens } from '../counted-tokens.ts';
import { RollingWindow } from './rolling-window.ts';
import { TokenBudget } from './token-budget.ts';

export interface RedisFallbackOptions {
  readonly clock: Clock;
  readonly windowMs: number;
  readonly countedTokens: CountedTokens;
  /** The local share's tokens per window; undefined: no local share (fail-closed). */
  readonly localShareTokensPerMinute: number | undefined;
}

export class RedisFallback {
  /** The local share fail-open serves from; undefined when failing closed. */
  readonly local: TokenBudget | undefined;
  readonly #clock: Clock;
  readonly #windowMs: number;
  /** What was admitted or used without Redis since it last answered, to be carried into its window. */
  #carried: RollingWindow;

  constructor(options: RedisFallbackOptions) {
    this.#clock = options.clock;
    this.#windowMs = options.windowMs;
    this.#carried = new RollingWindow(Number.POSITIVE_INFINITY, options.windowMs);
    this.local =
      options.localShareTokensPerMinute === undefined
        ? undefined
        : new TokenBudget(options.localShareTokensPerMinute, { clock: options.clock, countedTokens: options.countedTokens, windowMs: options.windowMs });
  }

  /** An admission from Redis: the local share counts it at once (never from a full bucket); its ticket. */
  charge(tokens: number): BudgetTicket | undefined {
    return this.local?.charge(tokens);
  }

  /** A reservation Redis could not serve, from the local share: its ticket there and its slot in the carry. */
  async reserve(local: TokenBudget, tokens: number, options: ReserveOptions): Promise<{ local: BudgetTicket; carriedSlot: number }> {
    const ticket = await local.reserve(tokens, options);
    return { local: ticket, carriedSlot: this.#carried.add(this.#clock.now(), tokens) };
  }

  /** Tokens to be counted in Redis' window once it answers (counted now: later, never less). */
  carry(tokens: number): void {
    this.#carried.add(this.#clock.now(), tokens);
  }

  /** Settle a fallback admission where it is counted until carried. */
  adjust(reserved: number, actual: number, carriedSlot: number | undefined): void {
    this.#carried.adjust(this.#clock.now(), reserved, actual, carriedSlot);
  }

  /** Take out what is to be carried into the next script run (put it back with carry() if the run fails). */
  takeCarried(): number {
    const carried = this.#carried.used(this.#clock.now());
    if (carried > 0) this.#carried = new RollingWindow(Number.POSITIVE_INFINITY, this.#windowMs);
    return carried;
  }
}
