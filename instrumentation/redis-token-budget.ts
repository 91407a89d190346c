// A token budget whose window lives in Redis, so N replicas share ONE tokens-per-window
// quota (quota-sharing mode "central"). Same contract as TokenBudget (see budget.ts): FIFO
// reservations within the process, reconcile may add a debt, a request above capacity fails
// at once.
//
// Redis holds what the provider counts: the counted tokens every replica admitted in the
// rolling window (redis-window-script.ts). A reservation is admitted only if the window plus
// it stays within the limit, checked and counted in one atomic script, so the fleet never
// admits more than the limit in any window (a bucket that starts full would admit up to twice
// that while it drains). The reservations queued in this process go to Redis together: one
// script run (EVALSHA, EVAL when Redis does not have it cached) admits the longest FIFO prefix
// that fits; reconciliations are sent together in the next run. A reservation that does not
// fit is told how long until it would; the head polls again after that (capped by maxPollMs
// so tokens given back by other replicas are noticed), bounded by its deadline, abortable.
//
// pauseFor(ms) (a provider 429 naming a retry delay) sets a shared `blocked` time in Redis:
// every replica admits nothing before it, so the fleet pauses once instead of each replica
// retrying into the wall.
//
// Every command has a deadline of its own (commandDeadlineMs, far below any maxWait):
// node-redis stops timing a command once it is written to the socket, so a hung Redis
// (SIGSTOP, a partition without a reset) would otherwise hold every reservation until its
// caller's maxWait. Past the deadline Redis counts as unreachable and the client is told to
// drop its connection and connect again. Health comes from a periodic probe (an unref'd
// timer), not from the last reservation, so `central` is fresh on an idle replica too.
//
// Redis unreachable (connection lost, command deadline, script error): the behaviour is
// explicit and chosen by the caller (centralOutage).
// - fail-open (the default when `localShareTokensPerMinute` is set): reservations and
//   reconciliations go to a local TokenBudget of that size (the static replica share), with
//   its rolling guard. Every admission this replica got from Redis is also charged to that
//   local budget, so the fallback never starts from a full bucket: in any window a replica
//   admits from its fallback at most its share minus what it already admitted (from Redis
//   or locally) in that window. Bound: in any window the fleet admits at most the central
//   limit plus, per replica, max(0, share − its own admissions in that window); the sum of
//   the shares in the worst case. What the fallback admitted is carried into Redis' window
//   by the first script run once Redis answers again. Counted in
//   llm_limiter_budget_central_unavailable_total{handling="local_share"}.
// - fail-closed: reservations reject with CentralBudgetUnavailable (code
//   BUDGET_UNAVAILABLE); counted with handling="refused". Reconciliations are dropped.
// A Redis that lost its window (restart) while this replica saw the fleet admit within the
// last window counts a full window at once (see the script): nothing is admitted until what
// the provider may still count has left its window.
import { optionProblems } from './limiter-options.ts';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { type Budget, type BudgetTicket, CENTRAL_OUTAGE_POLICIES, type CentralOutagePolicy, type ReserveOptions, type UsePart, windowLimitWithin } from './budget.ts';
import { type Clock, realClock, type TimerHandle, unrefTimer, withDeadline } from './clock.ts';
import type { CountedTokens } from './counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_WINDOW_MS } from './defaults.ts';
import { BudgetRequestTooLarge, CentralBudgetConflict, CentralBudgetUnavailable } from './errors.ts';
import { type AnyRegistry, createLimiterMetrics, type LimiterMetrics } from './metrics/limiter-metrics.ts';
import { BUDGET_CONFLICT_REPLY, maxBudgetTtlMs, REDIS_SLOTS_PER_WINDOW, ROLLING_WINDOW_SCRIPT } from './redis-window-script.ts';
import { RollingWindow } from './rolling-window.ts';
import { checkBudgetOptions, TokenBudget } from './token-budget.ts';
import { type Waiter, WaiterQueue } from './waiter-queue.ts';
import { drawFromHolds, type Hold, partsOf, WindowOutlook } from './window-outlook.ts';

export { ROLLING_WINDOW_SCRIPT } from './redis-window-script.ts';

const SCRIPT_SHA1 = createHash('sha1').update(ROLLING_WINDOW_SCRIPT).digest('hex');

/** What the budget needs from a Redis client (node-redis 6's client fits; connectBudgetRedis's adds reconnect). */
export interface RedisScriptClient {
  readonly isReady: boolean;
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** A command passed its deadline: drop the connection (it may be hung) and connect again in the background. */
  reconnect?(): void;
}

/** A Redis command that has not answered after this long counts as Redis unreachable, ms. */
export const DEFAULT_REDIS_COMMAND_DEADLINE_MS = 500;
/** How often the health probe asks Redis, ms. */
export const DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS = 1_000;
/** Most queued reservations sent to Redis in one script run. */
const MAX_BATCH = 64;

export interface RedisTokenBudgetOptions {
  /** A connected client (see connectBudgetRedis); the caller owns and closes it. */
  readonly client: RedisScriptClient;
  /** The SHARED limit: the fleet's tokens per window (per minute unless windowMs is set). */
  readonly tokensPerMinute: number;
  /** Which tokens the budget counts (default 'input', as Gemini's TPM); see TokenBudgetOptions. */
  readonly countedTokens?: CountedTokens;
  /** The quota window, ms (default 60,000). Replicas sharing a key must use the same window. */
  readonly windowMs?: number;
  /** The limiter name: the `limiter` metric label and the default key suffix. */
  readonly name: string;
  /** Redis key of the window (default `quotascope:budget:<name>`). Replicas sharing a quota use the same key. */
  readonly key?: string;
  /** The local budget fail-open serves from while Redis is unreachable (the static replica share), tokens per window. */
  readonly localShareTokensPerMinute?: number;
  /** While Redis is unreachable: fail-open (needs localShareTokensPerMinute) or fail-closed. Default: fail-open when a local share is given, else fail-closed. */
  readonly centralOutage?: CentralOutagePolicy;
  /** A command unanswered after this long counts as Redis unreachable (default DEFAULT_REDIS_COMMAND_DEADLINE_MS). */
  readonly commandDeadlineMs?: number;
  /** Period of the health probe (default DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS). */
  readonly healthCheckIntervalMs?: number;
  /** After a Redis failure, use the fallback for this long before trying Redis again (default 1,000 ms). */
  readonly retryRedisAfterMs?: number;
  /** Longest a waiting reservation sleeps between two tries (default 1,000 ms). */
  readonly maxPollMs?: number;
  readonly clock?: Clock;
  /** Where llm_limiter_budget_central_unavailable_total goes (default: prom-client's global registry). */
  readonly registry?: AnyRegistry;
  /** Told when the budget switches between Redis and its fallback (for a log line). */
  readonly onCentralChange?: (central: boolean, error?: unknown) => void;
}

/** Part of a hold in Redis: its tokens not charged yet, in the hold field of its due slot. */
interface RedisHold extends Hold {
  readonly slot: string;
}

/**
 * An admission: from Redis (its slot there) or from the local fallback (its slot in the
 * carried window); `local` is the fallback's ticket. A windowAtUse admission from Redis is a
 * hold (`holds`, earliest due first): its tokens are counted when charged (redisSlot is then
 * the last charge's slot), and what was never charged is released when it is settled.
 */
class RedisTicket implements BudgetTicket {
  readonly tokens: number;
  readonly issuer: RedisTokenBudget;
  redisSlot: string | undefined;
  readonly carriedSlot: number | undefined;
  readonly local: BudgetTicket | undefined;
  /** Admitted as a hold (windowAtUse, from Redis). */
  readonly atUse: boolean;
  /** The hold's parts not charged yet. */
  holds: RedisHold[];
  /** Tokens counted in the window for this admission. */
  counted: number;

  constructor(
    issuer: RedisTokenBudget,
    tokens: number,
    at: { redisSlot?: string; carriedSlot?: number; holds?: RedisHold[] },
    local: BudgetTicket | undefined,
  ) {
    this.issuer = issuer;
    this.tokens = tokens;
    this.redisSlot = at.redisSlot;
    this.carriedSlot = at.carriedSlot;
    this.local = local;
    this.atUse = at.holds !== undefined;
    this.holds = at.holds ?? [];
    this.counted = this.atUse ? 0 : tokens;
  }

}

interface Reservation {
  readonly tokens: number;
  /** Held against the window and counted when used (windowAtUse). */
  readonly atUse: boolean;
  /** When the tokens are used, after admission (windowAtUse; else all at once). */
  readonly parts: readonly UsePart[];
  readonly useSchedule: readonly UsePart[] | undefined;
  /** Aborted when the waiter leaves the queue (granted, deadline, caller abort, close). */
  readonly left: AbortController;
}

type ReservationWaiter = Waiter<Reservation, BudgetTicket>;

interface ScriptReply {
  readonly granted: number;
  readonly sum: number;
  readonly waitMs: number;
  readonly slot: string;
}

/** The window as Redis last sent it: what leaves it when, the holds by due time, and when its slot began (this budget's clock). */
interface WindowView {
  readonly leaving: readonly (readonly [number, number])[];
  readonly holds: readonly Hold[];
  readonly slotStartAt: number;
}

type TakeResult =
  | { readonly kind: 'taken'; readonly granted: number; readonly slot: string; readonly waitMs: number }
  | { readonly kind: 'unavailable'; readonly error: unknown };

type Op = 'take' | 'settle' | 'block' | 'peek';

const DEFAULT_KEY_PREFIX = 'quotascope:budget:';
// Window sums are floating point (reconciliations); tolerate rounding noise.
const EPSILON = 1e-6;

// Timer values are bounded: Node turns anything above 2^31-1 ms into 1 ms.
const optionsSchema = z.looseObject({
  localShareTokensPerMinute: z.number().finite().positive().optional(),
  centralOutage: z.enum(CENTRAL_OUTAGE_POLICIES).optional(),
  retryRedisAfterMs: z.int().min(1).max(600_000).optional(),
  maxPollMs: z.int().min(1).max(600_000).optional(),
  commandDeadlineMs: z.int().min(1).max(60_000).optional(),
  healthCheckIntervalMs: z.int().min(10).max(600_000).optional(),
});

export class RedisTokenBudget implements Budget {
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly countedTokens: CountedTokens;
  readonly windowMs: number;
  readonly key: string;
  readonly centralOutage: CentralOutagePolicy;
  readonly #client: RedisScriptClient;
  readonly #clock: Clock;
  readonly #local: TokenBudget | undefined;
  readonly #retryRedisAfterMs: number;
  readonly #maxPollMs: number;
  readonly #metrics: LimiterMetrics;
  readonly #name: string;
  readonly #commandDeadlineMs: number;
  readonly #healthCheckIntervalMs: number;
  #healthTimer: TimerHandle | undefined;
  readonly #onCentralChange: ((central: boolean, error?: unknown) => void) | undefined;
  readonly #waiters: WaiterQueue<Reservation, BudgetTicket>;
  readonly #pendingSettles = new Set<Promise<void>>();
  /** Reconciliations and charges waiting for the next settle run: (slot, delta, hold slot, release) quadruples. */
  #settleArgs: string[] = [];
  /** Tickets charged in the next settle run: their uses are counted in the slot it answers. */
  #charged: RedisTicket[] = [];
  #settleScheduled = false;
  /** What the fallback admitted since Redis last answered, to be carried into Redis' window. */
  #carried: RollingWindow;
  #limit: number;
  #serving = false;
  #wake: (() => void) | undefined;
  #central = true;
  #redisDownUntil = Number.NEGATIVE_INFINITY;
  #pausedUntil = Number.NEGATIVE_INFINITY;
  /** When this replica last saw the fleet admit (an admission, or a non-empty window in a reply). */
  #activeAt = Number.NEGATIVE_INFINITY;
  #lastSum = 0;
  /** The fleet's holds (windowAtUse admissions not used yet), as Redis last answered. */
  #lastHeld = 0;
  /** What leaves the window when and the holds, as Redis last sent them (when the window was at least half full). */
  #view: WindowView | undefined;
  /** When Redis last answered (this budget's clock). */
  #answeredAt = Number.NEGATIVE_INFINITY;
  #closed = false;
  #lastError: unknown = new Error('Redis is not connected');

  constructor(options: RedisTokenBudgetOptions) {
    const { tokensPerMinute } = options;
    checkBudgetOptions(tokensPerMinute, options);
    if (!options.name) throw new TypeError('RedisTokenBudget options: name: required (the limiter name)');
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new TypeError(`RedisTokenBudget options: ${optionProblems(parsed.error)}`);
    }
    const centralOutage = options.centralOutage ?? (options.localShareTokensPerMinute === undefined ? 'fail-closed' : 'fail-open');
    if (centralOutage === 'fail-open' && options.localShareTokensPerMinute === undefined) {
      throw new TypeError('RedisTokenBudget options: localShareTokensPerMinute: required for centralOutage "fail-open" (the share to serve from)');
    }
    this.centralOutage = centralOutage;
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.#limit = tokensPerMinute;
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.#carried = new RollingWindow(Number.POSITIVE_INFINITY, this.windowMs);
    this.#client = options.client;
    this.#name = options.name;
    this.key = options.key ?? `${DEFAULT_KEY_PREFIX}${options.name}`;
    this.#clock = options.clock ?? realClock;
    this.#local =
      centralOutage === 'fail-open' && options.localShareTokensPerMinute !== undefined
        ? new TokenBudget(options.localShareTokensPerMinute, { clock: this.#clock, countedTokens: this.countedTokens, windowMs: this.windowMs })
        : undefined;
    this.#retryRedisAfterMs = options.retryRedisAfterMs ?? 1_000;
    this.#maxPollMs = options.maxPollMs ?? 1_000;
    this.#commandDeadlineMs = options.commandDeadlineMs ?? DEFAULT_REDIS_COMMAND_DEADLINE_MS;
    this.#healthCheckIntervalMs = options.healthCheckIntervalMs ?? DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS;
    this.#metrics = createLimiterMetrics(options.registry);
    this.#onCentralChange = options.onCentralChange;
    this.#waiters = new WaiterQueue<Reservation, BudgetTicket>({
      clock: this.#clock,
      what: 'token budget',
      onLeave: (waiter) => waiter.data.left.abort(),
    });
    this.#scheduleHealthCheck();
  }

  /** Whether Redis answers now (false while the fallback policy applies). */
  get central(): boolean {
    return this.#central;
  }

  /** Tokens this budget may still admit in the window, as last seen (Redis' window, or the fallback's level while Redis is unreachable). */
  get available(): number {
    if (!this.#central && this.#local) return this.#local.available;
    return this.#limit - this.#lastSum;
  }

  /** The fleet's tokens in the window, as Redis last answered. */
  get windowTokens(): number {
    return this.#lastSum;
  }

  /** Reservations queued in this replica. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** The limit this replica asks Redis to admit against: the capacity unless an adaptive limit lowered it. */
  get windowLimit(): number {
    return this.#limit;
  }

  /**
   * Ask Redis to admit `tokens` per window from now on (sent with every script run; replicas
   * that move their limits independently each admit against their own). The fallback keeps its share.
   */
  setWindowLimit(tokens: number): void {
    this.#limit = windowLimitWithin(tokens, this.capacity);
    this.#wakeUp();
  }

  /**
   * No admission for `ms` on any replica: a shared `blocked` time in Redis (the fleet pauses
   * once), and locally at once. Without Redis, this replica and its fallback pause.
   */
  pauseFor(ms: number): void {
    if (!Number.isFinite(ms) || ms <= 0 || this.#closed) return;
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#clock.now() + ms);
    this.#local?.pauseFor(ms);
    if (!this.#redisUsable()) return;
    const block = this.#run('block', [String(Math.ceil(ms))]).then(
      () => {},
      (error: unknown) => this.#markDown(error),
    );
    this.#track(block);
  }

  /** Whether every reservation would be refused now: Redis cannot be used (asked once) and this budget fails closed, or the key holds another configuration. */
  async refusal(): Promise<CentralBudgetUnavailable | undefined> {
    if (this.#redisUsable()) {
      try {
        await this.#run('peek', []);
        return undefined;
      } catch (error) {
        this.#markDown(error);
      }
    }
    if (this.#local && !(this.#lastError instanceof CentralBudgetConflict)) return undefined;
    this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'refused' });
    return new CentralBudgetUnavailable(this.key, this.#lastError);
  }

  /** Never decided synchronously (Redis is a round trip away): checks the size, then answers undefined. */
  tryReserve(tokens: number): BudgetTicket | undefined {
    this.#check(tokens);
    return undefined;
  }

  reserve(tokens: number, options: ReserveOptions = {}): Promise<BudgetTicket> {
    try {
      this.#check(tokens);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.reject(new Error(`RedisTokenBudget "${this.key}" is closed`));
    const atUse = options.windowAtUse === true;
    const { useSchedule } = options;
    const waited = this.#waiters.wait({ tokens, atUse, parts: partsOf(tokens, atUse, useSchedule), useSchedule, left: new AbortController() }, options);
    void this.#serve();
    return waited;
  }

  reconcile(ticket: BudgetTicket, actual: number): void {
    const reserved = ticket.tokens;
    if (!Number.isFinite(reserved) || !Number.isFinite(actual)) {
      throw new RangeError(`reconcile needs finite numbers, got reserved=${reserved} actual=${actual}`);
    }
    const own = ticket instanceof RedisTicket && ticket.issuer === this ? ticket : undefined;
    if (own?.local) this.#local?.reconcile(own.local, actual);
    // A hold releases what was never charged; the window corrects what was counted.
    const holds = own ? own.holds : [];
    const counted = own ? own.counted : reserved;
    if (own) own.holds = [];
    if (counted === actual && holds.length === 0) return;
    const delta = Math.max(0, actual) - counted;
    if (own && own.redisSlot === undefined && !own.atUse) {
      // A fallback admission: its correction goes where it is counted until carried.
      this.#carried.adjust(this.#clock.now(), reserved, actual, own.carriedSlot);
      this.#wakeUp();
      return;
    }
    if (!this.#redisUsable()) {
      if (delta > 0) this.#carried.add(this.#clock.now(), delta);
      if (!own) this.#local?.reconcile(ticket, actual);
      this.#wakeUp();
      return;
    }
    // A ticket this budget did not issue counts a debt now (slot 0 is never live).
    this.#settle(own?.redisSlot ?? '0', delta, holds.map((hold) => ({ hold, taken: hold.tokens })));
  }

  /**
   * A windowAtUse admission's tokens are used now: counted in Redis' window (beyond the hold
   * too), taken out of the hold, in the next settle run. A fallback admission's go to the fallback.
   */
  chargeWindow(ticket: BudgetTicket, tokens: number): void {
    if (!(ticket instanceof RedisTicket) || ticket.issuer !== this || !(tokens > 0)) return;
    if (!ticket.atUse) {
      if (ticket.redisSlot === undefined && ticket.local) this.#local?.chargeWindow(ticket.local, tokens);
      return;
    }
    const drawn = drawFromHolds(ticket.holds, tokens);
    ticket.counted += tokens;
    if (!this.#redisUsable()) {
      this.#carried.add(this.#clock.now(), tokens); // counted once Redis answers; its hold there lapses with its slot
      return;
    }
    this.#charged.push(ticket);
    this.#settle('0', tokens, drawn);
  }

  /**
   * Queue one settle for the next script run: `delta` counted in `slot` (slot 0: now), and what
   * is released from each hold part, as (slot, delta, hold slot, release) quadruples.
   */
  #settle(slot: string, delta: number, released: readonly { hold: RedisHold; taken: number }[]): void {
    const [first, ...rest] = released;
    this.#settleArgs.push(slot, String(delta), first?.hold.slot ?? '0', String(first?.taken ?? 0));
    for (const { hold, taken } of rest) this.#settleArgs.push('0', '0', hold.slot, String(taken));
    this.#scheduleSettle();
  }

  /** Whole slots after its admission's that the script holds a part in: it rounds the part's ms, then floors. */
  #slotsAfter(afterMs: number): number {
    const slotMs = this.windowMs / REDIS_SLOTS_PER_WINDOW;
    return Math.floor(Math.round(afterMs) / slotMs);
  }

  /**
   * Ms until `tokens` of a windowAtUse admission may be counted (0: now): a call that starts
   * before its part of the hold fell due waits until then, as the window's room is held for it
   * from then on. A fallback admission asks the fallback.
   */
  windowRoomInMs(ticket: BudgetTicket, tokens: number): number {
    if (!(ticket instanceof RedisTicket) || ticket.issuer !== this) return 0;
    if (!ticket.atUse) return ticket.redisSlot === undefined && ticket.local ? (this.#local?.windowRoomInMs(ticket.local, tokens) ?? 0) : 0;
    let left = tokens;
    for (const hold of ticket.holds) {
      left -= hold.tokens;
      if (left <= EPSILON) return Math.max(0, Math.ceil(hold.dueAt - this.#clock.now()));
    }
    return 0;
  }

  /**
   * Milliseconds until `tokens` could be taken behind the reservations queued in this process
   * (0: now), from the window, the holds and what leaves the window when, as Redis last
   * answered; undefined when that is not known (Redis sends it for a window at least half full
   * or a queue here) or older than maxPollMs, and while Redis is unreachable the fallback's
   * answer (none when failing closed).
   */
  fundableInMs(tokens: number, useSchedule?: readonly UsePart[]): number | undefined {
    this.#check(tokens);
    if (!this.#central) return this.#local?.fundableInMs(tokens, useSchedule);
    const now = this.#clock.now();
    let ahead = 0;
    // The reservations queued ahead are taken to be admitted with this one, each on its own schedule.
    const parts = partsOf(tokens, true, useSchedule);
    for (const waiter of this.#waiters) {
      ahead += waiter.data.tokens;
      parts.push(...waiter.data.parts);
    }
    const pausedMs = Math.min(maxBudgetTtlMs(this.windowMs), Math.max(0, Math.ceil(this.#pausedUntil - now)));
    // As the script decides: all of it counted now fits; more than the limit fits an empty window only.
    let excess = this.#lastSum + this.#lastHeld + ahead;
    if (tokens <= this.#limit) excess += tokens - this.#limit;
    if (excess <= EPSILON) return pausedMs;
    // The window is sent while it and the holds fill half the limit or reservations are queued
    // here: else unknown. A view older than a poll may miss holds other replicas released since:
    // unknown too. The caller then waits and sees.
    const waitMs = this.#viewWaitMs(now, parts);
    if (waitMs === null) return undefined;
    // More than leaves within the window: whole windows (never beyond the longest a key lives).
    return Math.min(maxBudgetTtlMs(this.windowMs), Math.max(pausedMs, waitMs ?? Math.ceil((ahead + tokens) / this.#limit) * this.windowMs));
  }

  /**
   * From the window Redis last sent: ms until `parts` admitted together fit (0: now), undefined
   * when nothing leaving makes room, null when that view is missing or older than a poll.
   */
  #viewWaitMs(now: number, parts: readonly UsePart[]): number | undefined | null {
    const view = this.#view;
    if (!view || now - this.#answeredAt > this.#maxPollMs) return null;
    // As the script sees it: admitted in a slot, each part due whole slots after that slot began.
    const slotMs = this.windowMs / REDIS_SLOTS_PER_WINDOW;
    const slotStartAt = view.slotStartAt + Math.floor((now - view.slotStartAt) / slotMs) * slotMs;
    const due = parts.map((part) => ({ afterMs: this.#slotsAfter(part.afterMs) * slotMs, tokens: part.tokens }));
    const fitsInMs = new WindowOutlook(view.leaving, view.holds).fitsInMs(slotStartAt, due, this.#limit);
    return fitsInMs === undefined || fitsInMs === 0 ? fitsInMs : Math.max(1, Math.ceil(slotStartAt + fitsInMs - now));
  }

  /** Resolves when every reconciliation sent so far has reached Redis (or its fallback). */
  async settled(): Promise<void> {
    while (this.#pendingSettles.size > 0 || this.#settleScheduled) {
      if (this.#pendingSettles.size === 0) await Promise.resolve();
      else await Promise.all([...this.#pendingSettles]);
    }
  }

  /** Read the shared window from Redis: the tokens the fleet may still admit in it (negative under a debt). */
  async peek(): Promise<number> {
    const reply = await this.#run('peek', []);
    return this.#limit - reply.sum;
  }

  /**
   * Reject every queued reservation, stop polling and probing, and resolve once the
   * reconciliations sent so far are settled (each bounded by commandDeadlineMs). Does not
   * close the client (the caller owns it).
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#healthTimer !== undefined) this.#clock.clearTimeout(this.#healthTimer);
    this.#healthTimer = undefined;
    this.#waiters.failAll(new Error(`RedisTokenBudget "${this.key}" closed`));
    await this.settled();
  }

  #check(tokens: number): void {
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`token reservation must be a finite number >= 0, got ${tokens}`);
    }
    if (tokens > this.capacity) throw new BudgetRequestTooLarge(tokens, this.capacity);
  }

  /** Serve the queue in FIFO batches (one script run each); one loop at a time. */
  async #serve(): Promise<void> {
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#waiters.size > 0) {
        const pausedMs = this.#pausedUntil - this.#clock.now();
        const head = this.#waiters.head() as ReservationWaiter;
        if (pausedMs > 0) {
          await this.#sleep(Math.min(pausedMs, this.#maxPollMs), head);
          continue;
        }
        const batch: ReservationWaiter[] = [];
        for (const waiter of this.#waiters) {
          batch.push(waiter as ReservationWaiter);
          if (batch.length === MAX_BATCH) break;
        }
        const result = await this.#take(batch.map((w) => amountOf(w.data)));
        if (result.kind === 'unavailable') {
          await this.#serveWithoutRedis(head, result.error);
          continue;
        }
        for (let i = 0; i < result.granted; i++) this.#grantFromRedis(batch[i], result.slot);
        if (result.granted < batch.length) {
          const next = this.#waiters.head() as ReservationWaiter | undefined;
          // The script's wait counts all of it now; the window it sent tells when its parts fit.
          const fitsInMs = next?.data.atUse ? this.#viewWaitMs(this.#clock.now(), next.data.parts) : undefined;
          // A view that says it fits now disagrees with the script's refusal: look again after a slot.
          const waitMs = fitsInMs === 0 ? this.windowMs / REDIS_SLOTS_PER_WINDOW : Math.min(result.waitMs, fitsInMs ?? result.waitMs);
          if (next && !next.data.left.signal.aborted) await this.#sleep(Math.min(Math.max(1, waitMs), this.#maxPollMs), next);
        } else {
          // Let the callers just granted queue their next reservations: they join the next batch.
          for (let hop = 0; hop < 4; hop++) await Promise.resolve();
        }
      }
    } finally {
      this.#serving = false;
    }
  }

  #grantFromRedis(waiter: ReservationWaiter, slot: string): void {
    const { tokens, atUse, parts } = waiter.data;
    const now = this.#clock.now();
    this.#activeAt = now;
    // The fallback counts it at once, held or not: it never starts from a full bucket.
    const local = this.#local?.charge(tokens);
    // Each part is held in the slot the script put it in: whole slots after the admission's.
    const holds = parts.map((part) => ({
      slot: String(Number(slot) + this.#slotsAfter(part.afterMs)),
      tokens: part.tokens,
      dueAt: now + part.afterMs,
    }));
    const ticket = new RedisTicket(this, tokens, atUse ? { holds } : { redisSlot: slot }, local);
    if (waiter.data.left.signal.aborted) this.reconcile(ticket, 0); // gave up meanwhile: give the tokens back
    else waiter.grant(ticket);
  }

  /** The head's reservation while Redis is unreachable: the local share, or a refusal. */
  async #serveWithoutRedis(head: ReservationWaiter, error: unknown): Promise<void> {
    const { tokens, atUse, left } = head.data;
    if (left.signal.aborted) return;
    // A key of another configuration is a misconfiguration, not an outage: refused, never served locally.
    if (!this.#local || error instanceof CentralBudgetConflict) {
      this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'refused' });
      head.fail(new CentralBudgetUnavailable(this.key, error));
      return;
    }
    this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'local_share' });
    try {
      const local = await this.#local.reserve(tokens, { signal: left.signal, windowAtUse: atUse, useSchedule: head.data.useSchedule });
      const now = this.#clock.now();
      this.#activeAt = now;
      const ticket = new RedisTicket(this, tokens, { carriedSlot: this.#carried.add(now, tokens) }, local);
      if (left.signal.aborted) this.reconcile(ticket, 0);
      else head.grant(ticket);
    } catch (localError) {
      // Either the head left (deadline, abort, close: already answered) or the local share
      // refused it (more than its capacity): answer it with that.
      if (!left.signal.aborted) head.fail(localError);
    }
  }

  /** Amounts in FIFO order, a hold's prefixed with "p" (see the script). */
  async #take(amounts: readonly string[]): Promise<TakeResult> {
    if (!this.#redisUsable()) return { kind: 'unavailable', error: this.#lastError };
    try {
      const reply = await this.#run('take', amounts);
      return { kind: 'taken', granted: reply.granted, slot: reply.slot, waitMs: reply.waitMs };
    } catch (error) {
      this.#markDown(error);
      return { kind: 'unavailable', error };
    }
  }

  /** Send the reconciliations gathered in this turn of the event loop in one script run. */
  #scheduleSettle(): void {
    if (this.#settleScheduled) return;
    this.#settleScheduled = true;
    queueMicrotask(() => {
      this.#settleScheduled = false;
      const args = this.#settleArgs;
      const charged = this.#charged;
      this.#settleArgs = [];
      this.#charged = [];
      if (args.length === 0) return;
      const settle = this.#run('settle', args).then(
        (reply) => {
          for (const ticket of charged) ticket.redisSlot = reply.slot;
        },
        (error: unknown) => {
          this.#markDown(error);
          // Not known to have reached Redis: the debts and uses are carried in once it answers again.
          for (let i = 1; i < args.length; i += 4) if (Number(args[i]) > 0) this.#carried.add(this.#clock.now(), Number(args[i]));
        },
      );
      this.#track(settle);
    });
  }

  #track(pending: Promise<void>): void {
    const tracked = pending.finally(() => {
      this.#pendingSettles.delete(tracked);
      this.#wakeUp(); // tokens given back may let the head in before its poll
    });
    this.#pendingSettles.add(tracked);
  }

  /** The next health probe, one at a time: a probe that hangs ends at its command deadline. */
  #scheduleHealthCheck(): void {
    if (this.#closed) return;
    this.#healthTimer = this.#clock.setTimeout(() => void this.#checkHealth(), this.#healthCheckIntervalMs);
    unrefTimer(this.#healthTimer);
  }

  async #checkHealth(): Promise<void> {
    this.#healthTimer = undefined;
    if (this.#closed) return;
    if (!this.#client.isReady) this.#markDown(new Error('Redis is not connected'));
    else await this.#run('peek', []).catch((error: unknown) => this.#markDown(error));
    this.#scheduleHealthCheck();
  }

  /** Whether to try Redis now: not within retryRedisAfterMs of a failure, and the client connected. */
  #redisUsable(): boolean {
    if (this.#clock.now() < this.#redisDownUntil) return false;
    if (this.#client.isReady) return true;
    this.#markDown(new Error('Redis is not connected'));
    return false;
  }

  #markDown(error: unknown): void {
    this.#lastError = error;
    this.#redisDownUntil = this.#clock.now() + this.#retryRedisAfterMs;
    if (this.#central) {
      this.#central = false;
      this.#onCentralChange?.(false, error);
    }
  }

  /**
   * One atomic script run within commandDeadlineMs, carrying what the fallback admitted since
   * Redis last answered. Past the deadline the client is told to reconnect (the socket may be
   * hung) and the run rejects: the caller marks Redis down.
   */
  async #run(op: Op, args: readonly string[]): Promise<ScriptReply> {
    const now = this.#clock.now();
    const carried = this.#carried.used(now);
    if (carried > 0) this.#carried = new RollingWindow(Number.POSITIVE_INFINITY, this.windowMs);
    // 1: the fleet admitted within the last window; 2: reservations stay queued here beyond this run, so send what leaves the window when.
    const queued = this.#waiters.size - (op === 'take' ? args.length : 0) > 0;
    const flags = String((now - this.#activeAt < this.windowMs ? 1 : 0) + (queued ? 2 : 0));
    let reply: unknown;
    try {
      reply = await withDeadline(this.#script([String(this.#limit), String(this.windowMs), op, String(carried), flags, String(this.capacity), ...args]), this.#commandDeadlineMs, this.#clock, () => {
        this.#client.reconnect?.();
        return new Error(`Redis did not answer within ${this.#commandDeadlineMs} ms (commandDeadlineMs)`);
      });
    } catch (error) {
      // Not known to have reached Redis: carry it again next time (counted now: later, never less).
      if (carried > 0) this.#carried.add(this.#clock.now(), carried);
      throw error;
    }
    if (!Array.isArray(reply) || reply.length < 8 || reply.length % 2 !== 0) throw new Error(`rolling window script: unexpected reply ${JSON.stringify(reply)}`);
    const sum = Number(String(reply[1]));
    this.#lastSum = sum;
    this.#lastHeld = Number(String(reply[5]));
    this.#answeredAt = this.#clock.now();
    // None: the window and holds are under half the limit (the window is not sent then).
    this.#view = reply.length > 8 ? viewOf(reply.slice(8), Number(reply[6]), this.#answeredAt, Number(String(reply[7]))) : undefined;
    if (sum > 0) this.#activeAt = Math.max(this.#activeAt, this.#clock.now());
    this.#redisDownUntil = Number.NEGATIVE_INFINITY; // it answers: use it again at once
    if (!this.#central) {
      this.#central = true;
      this.#onCentralChange?.(true);
    }
    return { granted: Number(reply[0]), sum, waitMs: Number(reply[2]), slot: String(reply[3]) };
  }

  /** EVALSHA, then EVAL when Redis does not know the script (restart, SCRIPT FLUSH). */
  async #script(args: string[]): Promise<unknown> {
    const options = { keys: [this.key], arguments: args };
    try {
      try {
        return await this.#client.evalSha(SCRIPT_SHA1, options);
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        return await this.#client.eval(ROLLING_WINDOW_SCRIPT, options);
      }
    } catch (error) {
      throw this.#conflictOf(error) ?? error;
    }
  }

  /** The script's refusal of a key holding another window or limit, as a CentralBudgetConflict. */
  #conflictOf(error: unknown): CentralBudgetConflict | undefined {
    const words = error instanceof Error ? error.message.split(' ') : [];
    if (words[0] !== BUDGET_CONFLICT_REPLY || words.length < 4) return undefined;
    const [windowMs, tokensPerWindow, ttlMs] = words.slice(1, 4).map(Number);
    const own = { windowMs: this.windowMs, tokensPerWindow: this.capacity };
    return new CentralBudgetConflict(this.key, { windowMs, tokensPerWindow }, own, Math.min(ttlMs, maxBudgetTtlMs(this.windowMs)));
  }

  /** Sleep until the next try, woken early when tokens come back or the head leaves. */
  #sleep(ms: number, head: ReservationWaiter): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer);
        head.data.left.signal.removeEventListener('abort', done);
        if (this.#wake === done) this.#wake = undefined;
        resolve();
      };
      const timer = this.#clock.setTimeout(done, ms);
      head.data.left.signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }

  #wakeUp(): void {
    this.#wake?.();
  }
}

/** A reservation as the script's take reads it: its tokens, a hold's as "p" and its parts `tokens@afterMs`. */
function amountOf({ tokens, atUse, parts }: Reservation): string {
  return atUse ? `p${parts.map((part) => `${part.tokens}@${Math.round(part.afterMs)}`).join(',')}` : String(tokens);
}

/** The script's (ms from now, tokens) pairs, the first `holds` of them the holds by due time, as times on this budget's clock. */
function viewOf(pairs: readonly unknown[], holds: number, now: number, intoSlotMs: number): WindowView {
  const at = (i: number): readonly [number, number] => [now + Number(pairs[i]), Number(String(pairs[i + 1]))];
  const view = { leaving: [] as (readonly [number, number])[], holds: [] as Hold[], slotStartAt: now - intoSlotMs };
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const [time, tokens] = at(i);
    if (i < 2 * holds) view.holds.push({ dueAt: time, tokens });
    else view.leaving.push([time, tokens]);
  }
  return view;
}
