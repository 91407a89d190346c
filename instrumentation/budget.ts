// The token-budget contract RateLimitedLlm depends on. Two implementations: TokenBudget (one
// process, in memory) and RedisTokenBudget (one bucket in Redis shared by every replica).
// Both: capacity = tokens per minute, continuous refill, FIFO reservations within the
// process, a request larger than the capacity fails at once, reconcile may go negative.

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
  /**
   * Take tokens now if that can be decided synchronously, else false (the caller then
   * awaits reserve). Throws BudgetRequestTooLarge for more than the capacity.
   */
  tryReserve(tokens: number): boolean;
  /** Wait (FIFO in this process) until the tokens are taken; rejects with DeadlineExceeded, the abort reason, or BudgetRequestTooLarge at once. */
  reserve(tokens: number, options?: ReserveOptions): Promise<void>;
  /** Settle a reservation against the provider's usage: give back an overestimate, take an underestimate's shortfall. */
  reconcile(reserved: number, actual: number): void;
}
