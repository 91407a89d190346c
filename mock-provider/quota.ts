// Provider quotas per API key: requests/min and tokens/min over a fixed window, a sliding
// window or a continuously refilling bucket; requests/day over a fixed UTC day; and
// concurrent requests. The limit is passed on every call so a config change (PUT, timeline)
// takes effect at once without losing the usage already recorded. State is kept for at most
// MAX_QUOTA_KEYS keys: a key whose every quota is back to zero is forgotten (exactly as if it
// had never been seen), and past the bound the least recently used key not in flight is.
import type { MockConfig } from './config.ts';

/** Milliseconds; injectable so quota tests run on a fake clock. */
export interface Clock {
  now(): number;
}

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

/** One rate quota: `cost` units per `periodMs`. */
export interface RateWindow {
  /** 0 when `cost` fits now, else ms until it fits (Infinity when cost > limit: it never fits). */
  waitMs(now: number, cost: number, limit: number): number;
  add(now: number, cost: number): void;
  /** Usage counted against the limit right now. */
  used(now: number, limit: number): number;
  /** Ms until the usage is back to zero (OpenAI's x-ratelimit-reset-*). */
  resetMs(now: number, limit: number): number;
}

/** Windows aligned to multiples of the period on the clock (like a per-minute counter). */
export class FixedWindow implements RateWindow {
  readonly #periodMs: number;
  #start = Number.NEGATIVE_INFINITY;
  #used = 0;
  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }
  #roll(now: number): void {
    const start = Math.floor(now / this.#periodMs) * this.#periodMs;
    if (start !== this.#start) {
      this.#start = start;
      this.#used = 0;
    }
  }
  waitMs(now: number, cost: number, limit: number): number {
    if (cost > limit) return Number.POSITIVE_INFINITY;
    this.#roll(now);
    return this.#used + cost <= limit ? 0 : this.#start + this.#periodMs - now;
  }
  add(now: number, cost: number): void {
    this.#roll(now);
    this.#used += cost;
  }
  used(now: number): number {
    this.#roll(now);
    return this.#used;
  }
  resetMs(now: number): number {
    this.#roll(now);
    return this.#used === 0 ? 0 : this.#start + this.#periodMs - now;
  }
}

/** Counts what was admitted in the last period; each entry frees exactly one period after it. */
export class SlidingWindow implements RateWindow {
  readonly #periodMs: number;
  #times: number[] = [];
  #costs: number[] = [];
  #head = 0;
  #sum = 0;
  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }
  #prune(now: number): void {
    const cutoff = now - this.#periodMs;
    while (this.#head < this.#times.length && this.#times[this.#head] <= cutoff) {
      this.#sum -= this.#costs[this.#head];
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#head);
      this.#costs = this.#costs.slice(this.#head);
      this.#head = 0;
    }
  }
  waitMs(now: number, cost: number, limit: number): number {
    if (cost > limit) return Number.POSITIVE_INFINITY;
    this.#prune(now);
    let remaining = this.#sum;
    if (remaining + cost <= limit) return 0;
    for (let i = this.#head; i < this.#times.length; i++) {
      remaining -= this.#costs[i];
      if (remaining + cost <= limit) return this.#times[i] + this.#periodMs - now;
    }
    return this.#periodMs; // unreachable while cost <= limit
  }
  add(now: number, cost: number): void {
    this.#prune(now);
    this.#times.push(now);
    this.#costs.push(cost);
    this.#sum += cost;
  }
  used(now: number): number {
    this.#prune(now);
    return this.#sum;
  }
  resetMs(now: number): number {
    this.#prune(now);
    return this.#times.length > this.#head ? this.#times[this.#times.length - 1] + this.#periodMs - now : 0;
  }
}

/** Token bucket holding up to `limit`, refilling limit/period continuously; starts full. */
export class RefillingBucket implements RateWindow {
  readonly #periodMs: number;
  #level: number | undefined;
  #last = 0;
  constructor(periodMs: number) {
    this.#periodMs = periodMs;
  }
  #refill(now: number, limit: number): number {
    if (this.#level === undefined) this.#level = limit;
    else this.#level = Math.min(limit, this.#level + ((now - this.#last) * limit) / this.#periodMs);
    this.#last = now;
    return this.#level;
  }
  waitMs(now: number, cost: number, limit: number): number {
    if (cost > limit) return Number.POSITIVE_INFINITY;
    const level = this.#refill(now, limit);
    return level >= cost ? 0 : ((cost - level) * this.#periodMs) / limit;
  }
  add(_now: number, cost: number): void {
    // The level at #last is still exact (refill is linear), so subtract without refilling.
    this.#level = (this.#level ?? 0) - cost;
  }
  used(now: number, limit: number): number {
    return limit - this.#refill(now, limit);
  }
  resetMs(now: number, limit: number): number {
    return ((limit - this.#refill(now, limit)) * this.#periodMs) / limit;
  }
}

export function createWindow(kind: MockConfig['quotaWindow'], periodMs: number): RateWindow {
  if (kind === 'sliding') return new SlidingWindow(periodMs);
  if (kind === 'bucket') return new RefillingBucket(periodMs);
  return new FixedWindow(periodMs);
}

export type QuotaName = 'requests_per_minute' | 'tokens_per_minute' | 'requests_per_day' | 'concurrent';

export interface QuotaRejection {
  readonly ok: false;
  readonly quota: QuotaName;
  readonly limit: number;
  /** Ms until the violated quota lets this request through (Infinity: never, it is larger than the limit). */
  readonly retryMs: number;
}

/** An admitted request; `finish` must be called exactly once when its response ends. */
export interface QuotaLease {
  readonly ok: true;
  finish(outputTokens: number): void;
}

interface KeyState {
  readonly requests: RateWindow;
  readonly tokens: RateWindow;
  readonly day: FixedWindow;
  inFlight: number;
}

/** API keys whose quota state is kept; more distinct keys forget the least recently used one. */
export const MAX_QUOTA_KEYS = 10_000;

/** Figures for OpenAI's x-ratelimit-* headers. */
export interface RateStatus {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

/** How long a request refused for concurrency is told to wait (no real provider documents one). */
export const CONCURRENT_RETRY_MS = 1000;

/** One closed or current quota window: what it counted (the API key that counted most). */
export interface WindowCount {
  /** Window start, ms on the mock's clock (a multiple of the window length). */
  readonly start: number;
  readonly tokens: number;
  readonly requests: number;
  /** Requests refused with 429 for a quota in this window. */
  readonly rateLimited: number;
}

/** Windows remembered per key for GET /admin/quota/windows. */
const WINDOWS_KEPT = 1_000;

/**
 * Tokens and requests counted per clock-aligned window, per key: the oracle's record of what
 * each window of the quota held (for `fixed` windows, exactly what the quota counted).
 */
class WindowLog {
  readonly #byKey = new Map<string, Map<number, { tokens: number; requests: number; rateLimited: number }>>();

  record(key: string, now: number, windowMs: number, tokens: number, requests: number, rateLimited = 0): void {
    let windows = this.#byKey.get(key);
    if (!windows) {
      windows = new Map();
      this.#byKey.set(key, windows);
    }
    const start = Math.floor(now / windowMs) * windowMs;
    const entry = windows.get(start);
    if (entry) {
      entry.tokens += tokens;
      entry.requests += requests;
      entry.rateLimited += rateLimited;
    } else {
      windows.set(start, { tokens, requests, rateLimited });
      if (windows.size > WINDOWS_KEPT) windows.delete(windows.keys().next().value as number);
    }
  }

  /** Windows of forgotten keys: per window start, the count of the one that counted most. */
  readonly #retired = new Map<number, { tokens: number; requests: number; rateLimited: number }>();

  /** Stops keeping `key`'s windows apart, keeping what windows() reports. */
  retire(key: string): void {
    const windows = this.#byKey.get(key);
    this.#byKey.delete(key);
    for (const [start, count] of windows ?? []) {
      const best = this.#retired.get(start);
      if (!best || count.tokens > best.tokens) this.#retired.set(start, count);
    }
    while (this.#retired.size > WINDOWS_KEPT) this.#retired.delete(Math.min(...this.#retired.keys()));
  }

  /** Per window start (oldest first), the count of the key that counted the most tokens. */
  windows(): WindowCount[] {
    const peak = new Map<number, WindowCount>();
    for (const windows of [this.#retired, ...this.#byKey.values()]) {
      for (const [start, count] of windows) {
        const best = peak.get(start);
        if (!best || count.tokens > best.tokens) peak.set(start, { start, ...count });
      }
    }
    return [...peak.values()].sort((a, b) => a.start - b.start);
  }
}

export class QuotaBook {
  readonly #clock: Clock;
  #keys = new Map<string, KeyState>();
  #kind: MockConfig['quotaWindow'] = 'fixed';
  #windowMs = MINUTE_MS;
  #log = new WindowLog();
  #lastSweep = Number.NEGATIVE_INFINITY;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Forgets all usage (POST /admin/reset, or a change of window kind or length). */
  reset(kind: MockConfig['quotaWindow'], windowMs = MINUTE_MS): void {
    this.#keys = new Map();
    this.#log = new WindowLog();
    this.#kind = kind;
    this.#windowMs = windowMs;
  }

  /** The window length in force, ms. */
  get windowMs(): number {
    return this.#windowMs;
  }

  /** What each clock-aligned window counted, oldest first (the last ones are kept). */
  windows(): WindowCount[] {
    return this.#log.windows();
  }

  /** API keys whose state is kept now. */
  get keyCount(): number {
    return this.#keys.size;
  }

  /** Keys forgotten so far: idle (usage back to zero, exact) or capacity (over MAX_QUOTA_KEYS). */
  readonly forgotten = { idle: 0, capacity: 0 };

  /** Forgets every key whose usage of the quotas in force is back to zero and that has nothing in flight: a new state would answer the same. */
  forgetIdle(config: MockConfig): void {
    const now = this.#clock.now();
    for (const [key, state] of this.#keys) {
      const idle =
        state.inFlight === 0 &&
        state.requests.used(now, config.requestsPerMinute) === 0 &&
        state.tokens.used(now, config.tokensPerMinute) === 0 &&
        (config.requestsPerDay === null || state.day.used(now) === 0);
      if (idle) this.#forget(key, 'idle');
    }
  }

  #forget(key: string, reason: keyof QuotaBook['forgotten']): void {
    this.#keys.delete(key);
    this.#log.retire(key);
    this.forgotten[reason]++;
  }

  #state(key: string, config: MockConfig): KeyState {
    if (config.quotaWindow !== this.#kind || config.quotaWindowMs !== this.#windowMs) this.reset(config.quotaWindow, config.quotaWindowMs);
    let state = this.#keys.get(key);
    if (state) {
      // Least recently used first.
      this.#keys.delete(key);
      this.#keys.set(key, state);
    } else {
      // Idle keys are looked for once a window, and at the bound at most once a second.
      const now = this.#clock.now();
      const sinceSweep = now - this.#lastSweep;
      if (sinceSweep >= this.#windowMs || (this.#keys.size >= MAX_QUOTA_KEYS && sinceSweep >= 1_000)) {
        this.#lastSweep = now;
        this.forgetIdle(config);
      }
      if (this.#keys.size >= MAX_QUOTA_KEYS) {
        for (const [oldest, s] of this.#keys) {
          if (s.inFlight > 0) continue;
          this.#forget(oldest, 'capacity');
          break;
        }
      }
      state = {
        requests: createWindow(this.#kind, this.#windowMs),
        tokens: createWindow(this.#kind, this.#windowMs),
        day: new FixedWindow(DAY_MS),
        inFlight: 0,
      };
      this.#keys.set(key, state);
    }
    return state;
  }

  /** Checks every quota and charges them only if all pass (a refused request costs nothing). */
  admit(key: string, inputTokens: number, config: MockConfig): QuotaLease | QuotaRejection {
    const now = this.#clock.now();
    const state = this.#state(key, config);
    const answer = this.#admit(now, key, state, inputTokens, config);
    if (!answer.ok) this.#log.record(key, now, this.#windowMs, 0, 0, 1);
    return answer;
  }

  #admit(now: number, key: string, state: KeyState, inputTokens: number, config: MockConfig): QuotaLease | QuotaRejection {
    if (config.maxConcurrent !== null && state.inFlight >= config.maxConcurrent) {
      return { ok: false, quota: 'concurrent', limit: config.maxConcurrent, retryMs: CONCURRENT_RETRY_MS };
    }
    if (config.requestsPerDay !== null) {
      const wait = state.day.waitMs(now, 1, config.requestsPerDay);
      if (wait > 0) return { ok: false, quota: 'requests_per_day', limit: config.requestsPerDay, retryMs: wait };
    }
    const requestWait = state.requests.waitMs(now, 1, config.requestsPerMinute);
    if (requestWait > 0) {
      return { ok: false, quota: 'requests_per_minute', limit: config.requestsPerMinute, retryMs: requestWait };
    }
    const tokenWait = state.tokens.waitMs(now, inputTokens, config.tokensPerMinute);
    if (tokenWait > 0) {
      return { ok: false, quota: 'tokens_per_minute', limit: config.tokensPerMinute, retryMs: tokenWait };
    }
    state.day.add(now, 1);
    state.requests.add(now, 1);
    state.tokens.add(now, inputTokens);
    const log = this.#log;
    const windowMs = this.#windowMs;
    log.record(key, now, windowMs, inputTokens, 1);
    state.inFlight++;
    let finished = false;
    return {
      ok: true,
      finish: (outputTokens: number) => {
        if (finished) return;
        finished = true;
        state.inFlight--;
        if (config.countedTokens === 'input+output' && outputTokens > 0) {
          const end = this.#clock.now();
          state.tokens.add(end, outputTokens);
          log.record(key, end, windowMs, outputTokens, 0);
        }
      },
    };
  }

  /** Requests and tokens per minute for one key, as OpenAI reports them in headers. */
  status(key: string, config: MockConfig): { requests: RateStatus; tokens: RateStatus } {
    const now = this.#clock.now();
    const state = this.#state(key, config);
    const figures = (window: RateWindow, limit: number): RateStatus => ({
      limit,
      remaining: Math.max(0, Math.floor(limit - window.used(now, limit))),
      resetMs: Math.max(0, window.resetMs(now, limit)),
    });
    return {
      requests: figures(state.requests, config.requestsPerMinute),
      tokens: figures(state.tokens, config.tokensPerMinute),
    };
  }

  /** The highest current usage of each quota over all keys (the key closest to its limit). */
  peakUsage(config: MockConfig): Record<QuotaName, number> {
    const now = this.#clock.now();
    const peak: Record<QuotaName, number> = {
      requests_per_minute: 0,
      tokens_per_minute: 0,
      requests_per_day: 0,
      concurrent: 0,
    };
    if (config.quotaWindow !== this.#kind || config.quotaWindowMs !== this.#windowMs) return peak;
    for (const state of this.#keys.values()) {
      peak.requests_per_minute = Math.max(peak.requests_per_minute, state.requests.used(now, config.requestsPerMinute));
      peak.tokens_per_minute = Math.max(peak.tokens_per_minute, state.tokens.used(now, config.tokensPerMinute));
      peak.requests_per_day = Math.max(peak.requests_per_day, state.day.used(now));
      peak.concurrent = Math.max(peak.concurrent, state.inFlight);
    }
    return peak;
  }
}
