// The token-budget contract RateLimitedLlm depends on. Two implementations: TokenBudget (one
// process, in memory) and RedisTokenBudget (one bucket in Redis shared by every replica).
// Both: capacity = tokens per minute, continuous refill, FIFO reservations within the
// process, a request larger than the capacity fails at once, reconcile may go negative.
// TokenBudget also keeps a rolling-minute guard (never more than tokensPerMinute admitted in
// any 60 s window) and hands out admission tickets so reconcile can correct the right entry;
// RedisTokenBudget's guard is the bucket only and has no tickets.

/** Which admission a reconcile settles (TokenBudget: the rolling-window slot it was counted in). */
export type AdmissionTicket = number;

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
  /** Ticket of the admission the last `tryReserve` that returned true made (read right after it). */
  readonly lastAdmission?: AdmissionTicket;
  /**
   * Take tokens now if that can be decided synchronously, else false (the caller then
   * awaits reserve). Throws BudgetRequestTooLarge for more than the capacity.
   */
  tryReserve(tokens: number): boolean;
  /**
   * Wait (FIFO in this process) until the tokens are taken; rejects with DeadlineExceeded, the
   * abort reason, or BudgetRequestTooLarge at once. Resolves with the admission's ticket (a number) when
   * the budget issues them.
   */
  reserve(tokens: number, options?: ReserveOptions): Promise<unknown>;
  /**
   * Settle a reservation against the provider's usage: give back an overestimate, take an
   * underestimate's shortfall. `admission`: the ticket of that reservation, when there was one.
   */
  reconcile(reserved: number, actual: number, admission?: AdmissionTicket): void;
}
