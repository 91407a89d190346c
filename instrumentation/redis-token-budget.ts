// A token budget whose bucket lives in Redis, so N replicas share ONE tokens-per-minute
// quota (quota-sharing mode "central"). Same contract as TokenBudget (see budget.ts):
// continuous refill up to one minute's worth, FIFO reservations within the process,
// reconcile may drive the level negative, a request above capacity fails at once.
//
// Every change to the level is one Lua script run atomically by Redis (EVALSHA, falling
// back to EVAL when Redis does not have the script cached). The script reads the time from
// Redis `TIME`, so replicas with skewed clocks still agree on the refill. A reservation
// that does not fit is told how long until it would; the head of the local queue polls
// again after that delay (capped by maxPollMs so tokens given back by other replicas are
// noticed), bounded by its deadline and abortable.
//
// Every command has a deadline of its own (commandDeadlineMs, far below any maxWait):
// node-redis stops timing a command once it is written to the socket, so a hung Redis
// (SIGSTOP, a partition without a reset) would otherwise hold every reservation until its
// caller's maxWait. Past the deadline Redis counts as unreachable and the client is told
// to drop its connection and connect again. Health comes from a periodic probe (a
// read-only script run every healthCheckIntervalMs on an unref'd timer), not from the last
// reservation, so `central` is fresh on an idle replica too.
//
// Redis unreachable (connection lost, command deadline, script error): the behaviour is
// explicit and chosen by the caller (centralOutage).
// - fail-open (the default when `localShareTokensPerMinute` is set; what the agent service
//   does by default): reservations and reconciliations go to a local TokenBudget of that
//   size (the static replica share), so the fleet still stays under the quota while every
//   replica is cut off; Redis is tried again after retryRedisAfterMs. Counted in
//   llm_limiter_budget_central_unavailable_total{handling="local_share"}.
// - fail-closed: reservations reject with CentralBudgetUnavailable (code
//   BUDGET_UNAVAILABLE); counted with handling="refused". Reconciliations are dropped.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { type Budget, type BudgetTicket, CENTRAL_OUTAGE_POLICIES, type CentralOutagePolicy, type ReserveOptions } from './budget.ts';
import { type Clock, realClock, type TimerHandle, unrefTimer, withDeadline } from './clock.ts';
import { BudgetRequestTooLarge, CentralBudgetUnavailable } from './errors.ts';
import type { CountedTokens } from './counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS, DEFAULT_WINDOW_MS } from './defaults.ts';
import { type AnyRegistry, createLimiterMetrics, type LimiterMetrics } from './metrics/limiter-metrics.ts';
import { checkBudgetOptions, TokenBudget } from './token-budget.ts';
import { type Waiter, WaiterQueue } from './waiter-queue.ts';

/** KEYS[1] = the bucket (a hash: level, at). ARGV = capacity, tokens per ms, op, amount.
 *  op "take": take `amount` if it fits, else answer the ms until it would; op "settle": add
 *  `amount` (reserved − actual, may be negative); op "peek": read only.
 *  Returns { granted (0|1), level (string: Lua numbers would be truncated to integers), waitMs }. */
export const TOKEN_BUCKET_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local op = ARGV[3]
local amount = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'level', 'at')
local level = tonumber(state[1])
local at = tonumber(state[2])
if level == nil or at == nil then
  level = capacity
  at = now
end
if level > capacity then level = capacity end
if now > at then
  level = math.min(capacity, level + (now - at) * per_ms)
  at = now
end
local granted = 0
local wait_ms = 0
if op == 'take' then
  if level + 1e-6 >= amount then
    level = level - amount
    granted = 1
  else
    wait_ms = math.ceil((amount - level) / per_ms)
  end
elseif op == 'settle' then
  level = math.min(capacity, level + amount)
  granted = 1
end
if op ~= 'peek' then
  redis.call('HSET', KEYS[1], 'level', string.format('%.17g', level), 'at', string.format('%.17g', at))
  -- A missing key reads as a full bucket: let it go once it would have refilled anyway.
  redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - level) / per_ms) + 1000)
end
return { granted, string.format('%.17g', level), wait_ms }
`;

const SCRIPT_SHA1 = createHash('sha1').update(TOKEN_BUCKET_SCRIPT).digest('hex');

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

export interface RedisTokenBudgetOptions {
  /** A connected client (see connectBudgetRedis); the caller owns and closes it. */
  readonly client: RedisScriptClient;
  /** Capacity of the SHARED bucket: the fleet's tokens per window (per minute unless windowMs is set). */
  readonly tokensPerMinute: number;
  /** Which tokens the bucket counts (default 'input', as Gemini's TPM); see TokenBudgetOptions. */
  readonly countedTokens?: CountedTokens;
  /** The quota window, ms (default 60,000): capacity and refill per window. */
  readonly windowMs?: number;
  /** The limiter name: the `limiter` metric label and the default key suffix. */
  readonly name: string;
  /** Redis key of the bucket (default `quotascope:budget:<name>`). Replicas sharing a quota use the same key. */
  readonly key?: string;
  /** The local budget fail-open serves from while Redis is unreachable (the static replica share), tokens per minute. */
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

interface Reservation {
  readonly tokens: number;
  /** Aborted when the waiter leaves the queue (granted, deadline, caller abort, close). */
  readonly left: AbortController;
}

type ReservationWaiter = Waiter<Reservation, BudgetTicket>;

type TakeResult =
  | { readonly kind: 'granted' }
  | { readonly kind: 'wait'; readonly ms: number }
  | { readonly kind: 'unavailable'; readonly error: unknown };

const DEFAULT_KEY_PREFIX = 'quotascope:budget:';

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
  readonly #perMs: number;
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
  #serving = false;
  #wake: (() => void) | undefined;
  #central = true;
  #redisDownUntil = Number.NEGATIVE_INFINITY;
  #lastLevel: number;
  #lastLevelAt: number;
  #closed = false;
  #lastError: unknown = new Error('Redis is not connected');

  constructor(options: RedisTokenBudgetOptions) {
    const { tokensPerMinute } = options;
    checkBudgetOptions(tokensPerMinute, options);
    if (!options.name) throw new TypeError('RedisTokenBudget options: name: required (the limiter name)');
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(options)'}: ${issue.message}`);
      throw new TypeError(`RedisTokenBudget options: ${problems.join('; ')}`);
    }
    const centralOutage = options.centralOutage ?? (options.localShareTokensPerMinute === undefined ? 'fail-closed' : 'fail-open');
    if (centralOutage === 'fail-open' && options.localShareTokensPerMinute === undefined) {
      throw new TypeError('RedisTokenBudget options: localShareTokensPerMinute: required for centralOutage "fail-open" (the share to serve from)');
    }
    this.centralOutage = centralOutage;
    this.tokensPerMinute = tokensPerMinute;
    this.capacity = tokensPerMinute;
    this.countedTokens = options.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.#perMs = tokensPerMinute / this.windowMs;
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
    this.#lastLevel = this.capacity;
    this.#lastLevelAt = this.#clock.now();
    this.#waiters = new WaiterQueue<Reservation, BudgetTicket>({
      clock: this.#clock,
      what: 'token budget',
      onLeave: (waiter) => waiter.data.left.abort(),
      onGiveUp: () => this.#wakeUp(), // the head may have left: the next one tries now
    });
    this.#scheduleHealthCheck();
  }

  /** True while Redis answers (the last command or health probe did); false while the budget fails open or closed. */
  get central(): boolean {
    return this.#central;
  }

  /** The last level Redis reported, refilled locally since (the local share's level while Redis is down). */
  get available(): number {
    if (!this.#central && this.#local) return this.#local.available;
    const elapsed = Math.max(0, this.#clock.now() - this.#lastLevelAt);
    return Math.min(this.capacity, this.#lastLevel + elapsed * this.#perMs);
  }

  get waiting(): number {
    return this.#waiters.size;
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
    const waited = this.#waiters.wait({ tokens, left: new AbortController() }, options);
    void this.#serve();
    return waited;
  }

  reconcile(ticket: BudgetTicket, actual: number): void {
    const reserved = ticket.tokens;
    if (!Number.isFinite(reserved) || !Number.isFinite(actual)) {
      throw new RangeError(`reconcile needs finite numbers, got reserved=${reserved} actual=${actual}`);
    }
    if (reserved === actual) return;
    if (!this.#redisUsable()) {
      this.#local?.reconcile(ticket, actual);
      this.#wakeUp();
      return;
    }
    const settle = this.#run('settle', reserved - actual)
      .then(
        () => {},
        (error: unknown) => {
          this.#markDown(error);
          this.#local?.reconcile(ticket, actual);
        },
      )
      .finally(() => {
        this.#pendingSettles.delete(settle);
        this.#wakeUp(); // tokens given back may let the head in before its poll
      });
    this.#pendingSettles.add(settle);
  }

  /** Resolves when every reconciliation sent so far has reached Redis (or its fallback). */
  async settled(): Promise<void> {
    while (this.#pendingSettles.size > 0) await Promise.all([...this.#pendingSettles]);
  }

  /** Read the shared level from Redis (refilled to Redis' now) without changing it. */
  async peek(): Promise<number> {
    const reply = await this.#run('peek', 0);
    return reply.level;
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

  /** Serve the queue head by head (FIFO within this process); one loop at a time. */
  async #serve(): Promise<void> {
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#waiters.size > 0) {
        const head = this.#waiters.head() as ReservationWaiter;
        const result = await this.#take(head.data.tokens);
        if (result.kind === 'unavailable') {
          await this.#serveWithoutRedis(head, result.error);
        } else if (result.kind === 'granted') {
          const ticket = { tokens: head.data.tokens };
          if (head.data.left.signal.aborted) this.reconcile(ticket, 0); // gave up meanwhile: give the tokens back
          else head.grant(ticket);
        } else if (!head.data.left.signal.aborted) {
          await this.#sleep(Math.min(result.ms, this.#maxPollMs), head);
        }
      }
    } finally {
      this.#serving = false;
    }
  }

  /** The head's reservation while Redis is unreachable: the local share, or a refusal. */
  async #serveWithoutRedis(head: ReservationWaiter, error: unknown): Promise<void> {
    const { tokens, left } = head.data;
    if (left.signal.aborted) return;
    if (!this.#local) {
      this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'refused' });
      head.fail(new CentralBudgetUnavailable(this.key, error));
      return;
    }
    this.#metrics.budgetCentralUnavailable.inc({ limiter: this.#name, handling: 'local_share' });
    try {
      await this.#local.reserve(tokens, { signal: left.signal });
      const ticket = { tokens };
      if (left.signal.aborted) this.#local.reconcile(ticket, 0);
      else head.grant(ticket);
    } catch (localError) {
      // Either the head left (deadline, abort, close: already answered) or the local share
      // refused it (more than its capacity): answer it with that.
      if (!left.signal.aborted) head.fail(localError);
    }
  }

  async #take(tokens: number): Promise<TakeResult> {
    if (!this.#redisUsable()) return { kind: 'unavailable', error: this.#lastError };
    try {
      const reply = await this.#run('take', tokens);
      return reply.granted ? { kind: 'granted' } : { kind: 'wait', ms: Math.max(1, reply.waitMs) };
    } catch (error) {
      this.#markDown(error);
      return { kind: 'unavailable', error };
    }
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
    else await this.#run('peek', 0).catch((error: unknown) => this.#markDown(error));
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
   * One atomic script run within commandDeadlineMs. Past the deadline the client is told to
   * reconnect (the socket may be hung) and the run rejects: the caller marks Redis down.
   */
  async #run(op: 'take' | 'settle' | 'peek', amount: number): Promise<{ granted: boolean; level: number; waitMs: number }> {
    const reply = await withDeadline(this.#script(op, amount), this.#commandDeadlineMs, this.#clock, () => {
      this.#client.reconnect?.();
      return new Error(`Redis did not answer within ${this.#commandDeadlineMs} ms (commandDeadlineMs)`);
    });
    if (!Array.isArray(reply) || reply.length !== 3) throw new Error(`token bucket script: unexpected reply ${JSON.stringify(reply)}`);
    const level = Number(String(reply[1]));
    this.#lastLevel = level;
    this.#lastLevelAt = this.#clock.now();
    this.#redisDownUntil = Number.NEGATIVE_INFINITY; // it answers: use it again at once
    if (!this.#central) {
      this.#central = true;
      this.#onCentralChange?.(true);
    }
    return { granted: Number(reply[0]) === 1, level, waitMs: Number(reply[2]) };
  }

  /** EVALSHA, then EVAL when Redis does not know the script (restart, SCRIPT FLUSH). */
  async #script(op: 'take' | 'settle' | 'peek', amount: number): Promise<unknown> {
    const args = { keys: [this.key], arguments: [String(this.capacity), String(this.#perMs), op, String(amount)] };
    try {
      return await this.#client.evalSha(SCRIPT_SHA1, args);
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return await this.#client.eval(TOKEN_BUCKET_SCRIPT, args);
    }
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
