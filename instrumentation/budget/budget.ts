// The token-budget contract RateLimitedLlm depends on. Two implementations: TokenBudget (one
// process, in memory) and RedisTokenBudget (one bucket in Redis shared by every replica).
// Both: capacity = tokens per window (a minute unless windowMs is set) in the counted tokens,
// continuous refill, FIFO reservations within the process, a request larger than the
// capacity fails at once, reconcile may go negative.
// Every admission hands back a ticket; reconcile settles that ticket, so a budget that keeps
// per-admission state (TokenBudget's rolling-minute guard) corrects the right entry.
import type { CountedTokens } from '../counted-tokens.ts';

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
  /** Lower waits less in this process's queue (default: arrival order); see WaiterQueue. */
  readonly priority?: number;
  /**
   * Count the tokens in a rolling-window guard when they are used (chargeWindow), not at
   * admission, as the provider counts them: a whole request reserved at the door is counted
   * call by call. Until then they are held against the window as pending, so the window and
   * the pending holds never exceed one window's tokens. A budget without chargeWindow ignores it.
   */
  readonly windowAtUse?: boolean;
  /**
   * windowAtUse: when the tokens are expected to be used, in parts (ms after admission, tokens)
   * that sum to the reservation; unset: all at admission. A part is held against the window
   * from its time on, so until then the window may take tokens that leave it before the part
   * is used (a request's later calls do not idle the window while its first ones run).
   */
  readonly useSchedule?: readonly UsePart[];
}

/** Tokens of a windowAtUse admission expected to be used `afterMs` after it is admitted. */
export interface UsePart {
  readonly afterMs: number;
  readonly tokens: number;
}

/** A budget this process alone counts. */
export interface LocalSharing {
  readonly kind: 'local';
}

/** A budget whose window lives in a store every replica shares (Redis): its health, and whether it would refuse. */
export interface CentralSharing {
  readonly kind: 'central';
  /** Whether the store answers now (false while on a fallback). */
  readonly reachable: boolean;
  /**
   * Why every reservation would be refused now (the store cannot be used and the budget fails
   * closed, or its key holds another configuration), with when to retry when known; undefined
   * when it may admit. Asks the store once.
   */
  refusal(): Promise<(Error & { readonly retryAfterMs?: number }) | undefined>;
}

/** Who counts a budget, said by the budget (never inferred from other members). */
export type BudgetSharing = LocalSharing | CentralSharing;

/** The one LocalSharing: every local budget's `sharing`. */
export const LOCAL_SHARING: LocalSharing = Object.freeze({ kind: 'local' });

/**
 * Funding a whole request at the door: what a budget that can tell when tokens fit and count
 * a request's calls as they are used (windowAtUse) adds. Request admission sheds on it.
 */
export interface BudgetFunding {
  /**
   * Milliseconds until `tokens` could be taken after every reservation queued in this process
   * ahead of it (0: now), as far as this process can tell; undefined when it cannot tell (a
   * shared budget whose level lives elsewhere). Request admission sheds at once on it.
   */
  fundableInMs(tokens: number, useSchedule?: readonly UsePart[]): number | undefined;
  /** A `windowAtUse` admission's tokens are being used now: count them in the rolling window. */
  chargeWindow(ticket: BudgetTicket, tokens: number): void;
  /**
   * Ms until `tokens` of a `windowAtUse` admission can be counted in the rolling window
   * without overrunning it (0: now). A call that starts before its part was expected waits
   * this long; the part's room is held from its expected time on.
   */
  windowRoomInMs(ticket: BudgetTicket, tokens: number): number;
}

/** What every budget does. Sharing is explicit; funding is a capability of its own. */
export interface Budget {
  /** Bucket capacity in tokens (one window of tokensPerMinute). */
  readonly capacity: number;
  /** The tokens this budget counts (its unit); the wrapper reserves and reconciles in it. Unset: DEFAULT_COUNTED_TOKENS. */
  readonly countedTokens?: CountedTokens;
  /** The quota window, ms (a minute unless set). */
  readonly windowMs?: number;
  /** Bucket level in tokens (negative while a debt is repaid). A shared budget reports its last known level. */
  readonly available: number;
  /** Reservations queued in this process. */
  readonly waiting: number;
  /** Tokens counted in the last window by a rolling-window guard; undefined without one. */
  readonly windowTokens?: number;
  /** Who counts it: this process alone, or a shared store (with its health). */
  readonly sharing: BudgetSharing;
  /** Funding whole requests at the door; undefined: the budget cannot tell (request admission waits and sees). */
  readonly funding?: BudgetFunding;
  /** Tokens admitted per window now: the capacity unless an adaptive limit lowered it. */
  readonly windowLimit?: number;
  /**
   * Admit this many tokens per window from now on, at most the capacity (an adaptive limit
   * moves it; the capacity stays the largest reservation accepted).
   */
  setWindowLimit?(tokens: number): void;
  /** The provider answered 429 asking to retry after `ms`: admit nothing before then (a shared budget pauses every replica). */
  pauseFor?(ms: number): void;
  /**
   * Take tokens now if that can be decided synchronously: the admission's ticket, else
   * undefined (the caller then awaits reserve). Throws BudgetRequestTooLarge for more than the capacity.
   */
  tryReserve(tokens: number, options?: Pick<ReserveOptions, 'windowAtUse' | 'useSchedule'>): BudgetTicket | undefined;
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

/** A window limit as setWindowLimit takes it: a positive number, at most the capacity (a RangeError names it otherwise). */
export function windowLimitWithin(tokens: number, capacity: number): number {
  if (!Number.isFinite(tokens) || tokens <= 0) throw new RangeError(`window limit must be a positive number, got ${tokens}`);
  return Math.min(tokens, capacity);
}
