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
// Every command has a deadline of its own (redis-window-client.ts) and health comes from a
// periodic probe (redis-health.ts). Redis unreachable (connection lost, command deadline,
// script error): the behaviour is explicit and chosen by the caller (centralOutage):
// - fail-open (the default when `localShareTokensPerMinute` is set): a local share serves
//   (redis-fallback.ts, with the fleet's bound). Counted in
//   llm_limiter_budget_central_unavailable_total{handling="local_share"}.
// - fail-closed: reservations reject with CentralBudgetUnavailable (code
//   BUDGET_UNAVAILABLE); counted with handling="refused". Reconciliations are dropped.
// A Redis that lost its window (restart) while this replica saw the fleet admit within the
// last window counts a full window at once (see the script): nothing is admitted until what
// the provider may still count has left its window.
//
// The parts: the script client (redis-window-client.ts), the fallback and carry
// (redis-fallback.ts), Redis' health (redis-health.ts) and the batched settles
// (redis-settles.ts); this file queues reservations and serves them in batches.
import { type Budget, type BudgetFunding, type BudgetTicket, type CentralOutagePolicy, type CentralSharing, type ReserveOptions, type UsePart, windowLimitWithin } from './budget.ts';
import { type Clock, realClock } from '../clock.ts';
import type { CountedTokens } from '../counted-tokens.ts';
import {
  DEFAULT_COUNTED_TOKENS,
  DEFAULT_REDIS_COMMAND_DEADLINE_MS,
  DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS,
  DEFAULT_REDIS_MAX_POLL_MS,
  DEFAULT_REDIS_RETRY_AFTER_MS,
  DEFAULT_WINDOW_MS,
} from '../defaults.ts';
import { BudgetRequestTooLarge, CentralBudgetConflict, CentralBudgetUnavailable } from '../errors.ts';
import { createLimiterMetrics, type LimiterMetrics } from '../metrics/limiter-metrics.ts';
import { centralOutageOf, type RedisTokenBudgetOptions } from './redis-budget-options.ts';
import { RedisFallback } from './redis-fallback.ts';
import { RedisHealth } from './redis-health.ts';
import { amountOf, RedisWindowClient, type ScriptOp, type ScriptReply } from './redis-window-client.ts';
import { maxBudgetTtlMs } from './redis-window-script.ts';
import { RedisSettles } from './redis-settles.ts';
import { RedisTicket } from './redis-ticket.ts';
import { type Waiter, WaiterQueue } from '../waiter-queue.ts';
import { drawFromHolds, excessNow, partsOf, turnsBehind } from './window-rule.ts';

export type { RedisScriptClient } from './redis-window-client.ts';
export { DEFAULT_REDIS_COMMAND_DEADLINE_MS, DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS } from '../defaults.ts';
export type { RedisTokenBudgetOptions } from './redis-budget-options.ts';
export { ROLLING_WINDOW_SCRIPT } from './redis-window-script.ts';

/** Most queued reservations sent to Redis in one script run. */
const MAX_BATCH = 64;

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

type TakeResult =
  | { readonly kind: 'taken'; readonly granted: number; readonly slot: string; readonly waitMs: number }
  | { readonly kind: 'unavailable'; readonly error: unknown };

const DEFAULT_KEY_PREFIX = 'quotascope:budget:';
// Window sums are floating point (reconciliations); tolerate rounding noise.
const EPSILON = 1e-6;

export class RedisTokenBudget implements Budget, BudgetFunding {
  /** Shared by every replica on the key: whether Redis answers, and whether it would refuse. */
  readonly sharing: CentralSharing;
  readonly tokensPerMinute: number;
  readonly capacity: number;
  readonly countedTokens: CountedTokens;
  readonly windowMs: number;
  readonly key: string;
  readonly centralOutage: CentralOutagePolicy;
  readonly #script: RedisWindowClient;
  readonly #fallback: RedisFallback;
  readonly #health: RedisHealth;
  readonly #clock: Clock;
  readonly #maxPollMs: number;
  readonly #metrics: LimiterMetrics;
  readonly #name: string;
  readonly #waiters: WaiterQueue<Reservation, BudgetTicket>;
  readonly #settles: RedisSettles;
  #limit: number;
  #serving = false;
  #wake: (() => void) | undefined;
  #pausedUntil = Number.NEGATIVE_INFINITY;
  /** When this replica last saw the fleet admit (an admission, or a non-empty window in a reply). */
  #activeAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(options: RedisTokenBudgetOptions) {
    const { tokensPerMinute } = options;
    const centralOutage = centralOutageOf(options);
    this.centralOutage = centralOutage;
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.#limit = tokensPerMinute;
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.#name = options.name;
    this.key = options.key ?? `${DEFAULT_KEY_PREFIX}${options.name}`;
    const clock = options.clock ?? realClock;
    this.#clock = clock;
    const { client } = options;
    this.#script = new RedisWindowClient({
      client,
      key: this.key,
      windowMs: this.windowMs,
      capacity: this.capacity,
      commandDeadlineMs: options.commandDeadlineMs ?? DEFAULT_REDIS_COMMAND_DEADLINE_MS,
      clock,
    });
    this.#fallback = new RedisFallback({
      clock,
      windowMs: this.windowMs,
      countedTokens: this.countedTokens,
      localShareTokensPerMinute: centralOutage === 'fail-open' ? options.localShareTokensPerMinute : undefined,
    });
    this.#health = new RedisHealth({
      clock,
      isReady: () => client.isReady,
      retryAfterMs: options.retryRedisAfterMs ?? DEFAULT_REDIS_RETRY_AFTER_MS,
      intervalMs: options.healthCheckIntervalMs ?? DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS,
      onCentralChange: options.onCentralChange,
    });
    this.#maxPollMs = options.maxPollMs ?? DEFAULT_REDIS_MAX_POLL_MS;
    this.#metrics = createLimiterMetrics(options.registry);
    this.#waiters = new WaiterQueue<Reservation, BudgetTicket>({
      clock,
      what: 'token budget',
      onLeave: (waiter) => waiter.data.left.abort(),
    });
    this.#settles = new RedisSettles({
      run: (args) => this.#run('settle', args),
      onFailed: (error, args) => {
        this.#health.markDown(error);
        // Not known to have reached Redis: the debts and uses are carried in once it answers again.
        for (let i = 1; i < args.length; i += 4) if (Number(args[i]) > 0) this.#fallback.carry(Number(args[i]));
      },
      onDone: () => this.#wakeUp(),
    });
    this.#health.start(() => this.#run('peek', []));
    const health = this.#health;
    this.sharing = {
      kind: 'central',
      get reachable() {
        return health.central;
      },
      refusal: () => this.refusal(),
    };
  }

  /** It funds whole requests: fundableInMs (from the window Redis last sent), chargeWindow, windowRoomInMs. */
  get funding(): BudgetFunding {
    return this;
  }

  /** Whether Redis answers now (false while the fallback policy applies). */
  get central(): boolean {
    return this.#health.central;
  }

  /** Tokens this budget may still admit in the window, as last seen (Redis' window, or the fallback's level while Redis is unreachable). */
  get available(): number {
    const local = this.#fallback.local;
    if (!this.#health.central && local) return local.available;
    return this.#limit - this.#script.lastSum;
  }

  /** The fleet's tokens in the window, as Redis last answered. */
  get windowTokens(): number {
    return this.#script.lastSum;
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
    this.#fallback.local?.pauseFor(ms);
    if (!this.#health.usable()) return;
    const block = this.#run('block', [String(Math.ceil(ms))]).then(
      () => {},
      (error: unknown) => this.#health.markDown(error),
    );
    this.#settles.track(block);
  }

  /** Whether every reservation would be refused now: Redis cannot be used (asked once) and this budget fails closed, or the key holds another configuration. */
  async refusal(): Promise<CentralBudgetUnavailable | undefined> {
    if (this.#health.usable()) {
      try {
        await this.#run('peek', []);
        return undefined;
      } catch (error) {
        this.#health.markDown(error);
      }
    }
    if (this.#fallback.local && !(this.#health.lastError instanceof CentralBudgetConflict)) return undefined;
    this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'refused' });
    return new CentralBudgetUnavailable(this.key, this.#health.lastError);
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
    const local = this.#fallback.local;
    if (own?.local) local?.reconcile(own.local, actual);
    // A hold releases what was never charged; the window corrects what was counted.
    const holds = own ? own.holds : [];
    const counted = own ? own.counted : reserved;
    if (own) own.holds = [];
    if (counted === actual && holds.length === 0) return;
    const delta = Math.max(0, actual) - counted;
    if (own && own.redisSlot === undefined && !own.atUse) {
      // A fallback admission: its correction goes where it is counted until carried.
      this.#fallback.adjust(reserved, actual, own.carriedSlot);
      this.#wakeUp();
      return;
    }
    if (!this.#health.usable()) {
      if (delta > 0) this.#fallback.carry(delta);
      if (!own) local?.reconcile(ticket, actual);
      this.#wakeUp();
      return;
    }
    // A ticket this budget did not issue counts a debt now (slot 0 is never live).
    this.#settles.add(own?.redisSlot ?? '0', delta, holds.map((hold) => ({ hold, taken: hold.tokens })));
  }

  /**
   * A windowAtUse admission's tokens are used now: counted in Redis' window (beyond the hold
   * too), taken out of the hold, in the next settle run. A fallback admission's go to the fallback.
   */
  chargeWindow(ticket: BudgetTicket, tokens: number): void {
    if (!(ticket instanceof RedisTicket) || ticket.issuer !== this || !(tokens > 0)) return;
    if (!ticket.atUse) {
      if (ticket.redisSlot === undefined && ticket.local) this.#fallback.local?.chargeWindow(ticket.local, tokens);
      return;
    }
    const drawn = drawFromHolds(ticket.holds, tokens);
    ticket.counted += tokens;
    if (!this.#health.usable()) {
      this.#fallback.carry(tokens); // counted once Redis answers; its hold there lapses with its slot
      return;
    }
    this.#settles.add('0', tokens, drawn, ticket);
  }

  /**
   * Ms until `tokens` of a windowAtUse admission may be counted (0: now): a call that starts
   * before its part of the hold fell due waits until then, as the window's room is held for it
   * from then on. A fallback admission asks the fallback.
   */
  windowRoomInMs(ticket: BudgetTicket, tokens: number): number {
    if (!(ticket instanceof RedisTicket) || ticket.issuer !== this) return 0;
    if (!ticket.atUse) return ticket.redisSlot === undefined && ticket.local ? (this.#fallback.local?.windowRoomInMs(ticket.local, tokens) ?? 0) : 0;
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
    if (!this.#health.central) return this.#fallback.local?.fundableInMs(tokens, useSchedule);
    const now = this.#clock.now();
    // The reservations queued ahead are admitted first, each in its turn on its own schedule.
    const { ahead, turns } = turnsBehind(this.#waiters, partsOf(tokens, true, useSchedule));
    const pausedMs = Math.min(maxBudgetTtlMs(this.windowMs), Math.max(0, Math.ceil(this.#pausedUntil - now)));
    // As the script decides (the window rule): all of it counted now fits; more than the limit fits an empty window only.
    if (excessNow(this.#script.lastSum, this.#script.lastHeld + ahead, tokens, this.#limit) <= EPSILON) return pausedMs;
    // The window is sent while it and the holds fill half the limit or reservations are queued
    // here: else unknown. A view older than a poll may miss holds other replicas released since:
    // unknown too. The caller then waits and sees.
    const waitMs = this.#script.viewWaitMs(now, turns, this.#limit, this.#maxPollMs);
    if (waitMs === null) return undefined;
    // More than leaves within the window: whole windows (never beyond the longest a key lives).
    return Math.min(maxBudgetTtlMs(this.windowMs), Math.max(pausedMs, waitMs ?? Math.ceil((ahead + tokens) / this.#limit) * this.windowMs));
  }

  /** Resolves when every reconciliation sent so far has reached Redis (or its fallback). */
  settled(): Promise<void> {
    return this.#settles.settled();
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
    this.#health.stop();
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
          const fitsInMs = next?.data.atUse ? this.#script.viewWaitMs(this.#clock.now(), [next.data.parts], this.#limit, this.#maxPollMs) : undefined;
          // A view that says it fits now disagrees with the script's refusal: look again after a slot.
          const waitMs = fitsInMs === 0 ? this.#script.slotMs : Math.min(result.waitMs, fitsInMs ?? result.waitMs);
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
    const local = this.#fallback.charge(tokens);
    // Each part is held in the slot the script put it in: whole slots after the admission's.
    const holds = parts.map((part) => ({
      slot: String(Number(slot) + this.#script.slotsAfter(part.afterMs)),
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
    const local = this.#fallback.local;
    // A key of another configuration is a misconfiguration, not an outage: refused, never served locally.
    if (!local || error instanceof CentralBudgetConflict) {
      this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'refused' });
      head.fail(new CentralBudgetUnavailable(this.key, error));
      return;
    }
    this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'local_share' });
    try {
      const taken = await this.#fallback.reserve(local, tokens, { signal: left.signal, windowAtUse: atUse, useSchedule: head.data.useSchedule });
      this.#activeAt = this.#clock.now();
      const ticket = new RedisTicket(this, tokens, { carriedSlot: taken.carriedSlot }, taken.local);
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
    if (!this.#health.usable()) return { kind: 'unavailable', error: this.#health.lastError };
    try {
      const reply = await this.#run('take', amounts);
      return { kind: 'taken', granted: reply.granted, slot: reply.slot, waitMs: reply.waitMs };
    } catch (error) {
      this.#health.markDown(error);
      return { kind: 'unavailable', error };
    }
  }

  /**
   * One atomic script run (see RedisWindowClient.run), carrying what the fallback admitted
   * since Redis last answered. A run that fails rejects: the caller marks Redis down.
   */
  async #run(op: ScriptOp, args: readonly string[]): Promise<ScriptReply> {
    const now = this.#clock.now();
    const carry = this.#fallback.takeCarried();
    // 1: the fleet admitted within the last window; 2: reservations stay queued here beyond this run, so send what leaves the window when.
    const queued = this.#waiters.size - (op === 'take' ? args.length : 0) > 0;
    const flags = (now - this.#activeAt < this.windowMs ? 1 : 0) + (queued ? 2 : 0);
    let reply: ScriptReply;
    try {
      reply = await this.#script.run(op, { limit: this.#limit, carry, flags }, args);
    } catch (error) {
      // Not known to have reached Redis: carry it again next time (counted now: later, never less).
      if (carry > 0) this.#fallback.carry(carry);
      throw error;
    }
    if (reply.sum > 0) this.#activeAt = Math.max(this.#activeAt, this.#clock.now());
    this.#health.markUp();
    return reply;
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
