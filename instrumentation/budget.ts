// The token-budget contract RateLimitedLlm depends on. Two implementations: TokenBudget (one
// process, in memory) and RedisTokenBudget (one bucket in Redis shared by every replica).
// Both: capacity = tokens per minute, continuous refill, FIFO reservations within the
// process, a request larger than the capacity fails at once, reconcile may go negative.
// Every admission hands back a ticket; reconcile settles that ticket, so a budget that keeps
// per-admission state (TokenBudget's rolling-minute guard) corrects the right entry.

/**
 * One admission: the tokens it took. A budget may keep more in its own tickets; a ticket it
 * did not issue settles the tokens alone (the admission's entry is unknown to it).
 */
export interface BudgetTicket {
  readonly tokens: number;
}

/**
 * What a shared budget does while its store (Redis) is unreachable: `fail-open` serves
 * reservations from a local share of the quota (the static replica share), `fail-closed`
 * refuses them (CentralBudgetUnavailable, code BUDGET_UNAVAILABLE).
 */
export const CENTRAL_OUTAGE_POLICIES = ['fail-open', 'fail-closed'] as const;
export type CentralOutagePolicy = (typeof CENTRAL_OUTAGE_POLICIES)[number];

export interface ReserveOptions {
  /** Absolute time on the budget's clock after which the reservation gives up. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
}

export interface Budget {
  /** Bucket capacity in tokens (one minute of tokensPerMinute). */
  readonly capacity: number;
  /** Bucket level in tokens (negative while a debt is repaid). A shared budget reports its last known level. */
  readonly available: number;
  /** Reservations queued in this process. */
  readonly waiting: number;
  /** Tokens counted in the last 60 s by a rolling-minute guard; undefined without one. */
  readonly windowTokens?: number;
  /** A shared budget: whether its store answers now (false while on a fallback); undefined for a local budget. */
  readonly central?: boolean;
  /**
   * Take tokens now if that can be decided synchronously: the admission's ticket, else
   * undefined (the caller then awaits reserve). Throws BudgetRequestTooLarge for more than the capacity.
   */
  tryReserve(tokens: number): BudgetTicket | undefined;
  /**
   * Wait (FIFO in this process) until the tokens are taken; resolves with the admission's
   * ticket. Rejects with DeadlineExceeded, the abort reason, or BudgetRequestTooLarge at once.
   */
  reserve(tokens: number, options?: ReserveOptions): Promise<BudgetTicket>;
  /**
   * Settle an admission against the provider's usage: give back an overestimate, take an
   * underestimate's shortfall.
   */
  reconcile(ticket: BudgetTicket, actual: number): void;
  /** Reject every queued reservation and stop background work; resolves once pending settlements are done. */
  close(): Promise<void>;
}
