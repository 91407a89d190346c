// Provider quotas per API key and model (quotaScope model, Gemini's scope) or per API key
// (quotaScope key): requests/min and tokens/min over a fixed window, a sliding window or a
// continuously refilling bucket; requests/day over a fixed UTC day; and concurrent requests.
// The limit is passed on every call so a config change (PUT, timeline) takes effect at once
// without losing the usage already recorded. State is kept for at most MAX_QUOTA_KEYS quotas:
// one whose every quota is back to zero is forgotten (exactly as if it had never been seen),
// and past the bound the least recently used one not in flight is.
import { type MockConfig, modelLimits } from './config.ts';

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
  /** The model whose quota this is (quotaScope model); undefined when the key's models share one. */
  readonly model: string | undefined;
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
  /** The model whose quota counted it (quotaScope model). */
  readonly model?: string;
  /** That quota's limits per window. */
  readonly tokensLimit: number;
  readonly requestsLimit: number;
}

/** Windows remembered per key for GET /admin/quota/windows. */
const WINDOWS_KEPT = 1_000;

/**
 * Tokens and requests counted per clock-aligned window, per key: the oracle's record of what
 * each window of the quota held (for `fixed` windows, exactly what the quota counted).
 */
class WindowLog {
  readonly #byKey = new Map<string, Map<number, { tokens: number; requests: number; rateLimited: number }>>();
  readonly #modelOf = new Map<string, string | undefined>();

  record(key: string, model: string | undefined, now: number, windowMs: number, tokens: number, requests: number, rateLimited = 0): void {
    let windows = this.#byKey.get(key);
    if (!windows) {
      windows = new Map();
      this.#byKey.set(key, windows);
      this.#modelOf.set(key, model);
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

  /** Windows of forgotten quotas: per window start, the count of the one that came closest to its token limit. */
  readonly #retired = new Map<number, { count: { tokens: number; requests: number; rateLimited: number }; model: string | undefined }>();

  /** Stops keeping `key`'s windows apart, keeping what windows() reports. */
  retire(key: string, config: MockConfig): void {
    const windows = this.#byKey.get(key);
    const model = this.#modelOf.get(key);
    this.#byKey.delete(key);
    this.#modelOf.delete(key);
    const ratio = (tokens: number, of: string | undefined) => tokens / modelLimits(config, of ?? '').tokensPerMinute;
    for (const [start, count] of windows ?? []) {
      const best = this.#retired.get(start);
      if (!best || ratio(count.tokens, model) > ratio(best.count.tokens, best.model)) this.#retired.set(start, { count, model });
    }
    while (this.#retired.size > WINDOWS_KEPT) this.#retired.delete(Math.min(...this.#retired.keys()));
  }

  /** Per window start (oldest first), the count of the quota that came closest to its token limit. */
  windows(config: MockConfig): WindowCount[] {
    const peak = new Map<number, WindowCount>();
    const retired = [...this.#retired].map(([start, { count, model }]) => ({ model, windows: new Map([[start, count]]) }));
    const live = [...this.#byKey].map(([key, windows]) => ({ model: this.#modelOf.get(key), windows }));
    for (const { model, windows } of [...retired, ...live]) {
      const limits = modelLimits(config, model ?? '');
      for (const [start, count] of windows) {
        const best = peak.get(start);
        if (!best || count.tokens / limits.tokensPerMinute > best.tokens / best.tokensLimit) {
          peak.set(start, { start, ...count, ...(model === undefined ? {} : { model }), tokensLimit: limits.tokensPerMinute, requestsLimit: limits.requestsPerMinute });
        }
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
  windows(config: MockConfig): WindowCount[] {
    return this.#log.windows(config);
  }

  /** Quotas (API keys, or key and model) whose state is kept now. */
  get keyCount(): number {
    return this.#keys.size;
  }

  /** Quotas forgotten so far: idle (usage back to zero, exact) or capacity (over MAX_QUOTA_KEYS). */
  readonly forgotten = { idle: 0, capacity: 0 };

  /** Forgets every quota whose usage is back to zero and that has nothing in flight: a new state would answer the same. */
  forgetIdle(config: MockConfig): void {
    const now = this.#clock.now();
    for (const [key, state] of this.#keys) {
      const { requestsPerMinute, tokensPerMinute } = modelLimits(config, state.model ?? '');
      const idle =
        state.inFlight === 0 &&
        state.requests.used(now, requestsPerMinute) === 0 &&
        state.tokens.used(now, tokensPerMinute) === 0 &&
        (config.requestsPerDay === null || state.day.used(now) === 0);
      if (idle) this.#forget(key, 'idle', config);
    }
  }

  #forget(key: string, reason: keyof QuotaBook['forgotten'], config: MockConfig): void {
    this.#keys.delete(key);
    this.#log.retire(key, config);
    this.forgotten[reason]++;
  }

  /** The quota a call of `model` by `key` draws from: the key's own per model, or the key's. */
  #state(key: string, model: string, config: MockConfig): { scope: string; state: KeyState } {
    if (config.quotaWindow !== this.#kind || config.quotaWindowMs !== this.#windowMs) this.reset(config.quotaWindow, config.quotaWindowMs);
    const perModel = config.quotaScope === 'model';
    const scope = perModel ? `${key}\u0000${model}` : key;
    let state = this.#keys.get(scope);
    if (state) {
      // Least recently used first.
      this.#keys.delete(scope);
      this.#keys.set(scope, state);
    } else {
      // Idle quotas are looked for once a window, and at the bound at most once a second.
      const now = this.#clock.now();
      const sinceSweep = now - this.#lastSweep;
      if (sinceSweep >= this.#windowMs || (this.#keys.size >= MAX_QUOTA_KEYS && sinceSweep >= 1_000)) {
        this.#lastSweep = now;
        this.forgetIdle(config);
      }
      if (this.#keys.size >= MAX_QUOTA_KEYS) {
        for (const [oldest, s] of this.#keys) {
          if (s.inFlight > 0) continue;
          this.#forget(oldest, 'capacity', config);
          break;
        }
      }
      state = {
        model: perModel ? model : undefined,
        requests: createWindow(this.#kind, this.#windowMs),
        tokens: createWindow(this.#kind, this.#windowMs),
        day: new FixedWindow(DAY_MS),
        inFlight: 0,
      };
      this.#keys.set(scope, state);
    }
    return { scope, state };
  }

  /** Checks every quota of `model` for `key` and charges them only if all pass (a refused request costs nothing). */
  admit(key: string, model: string, inputTokens: number, config: MockConfig): QuotaLease | QuotaRejection {
    const now = this.#clock.now();
    const { scope, state } = this.#state(key, model, config);
    const answer = this.#admit(now, scope, state, inputTokens, config);
    if (!answer.ok) this.#log.record(scope, state.model, now, this.#windowMs, 0, 0, 1);
    return answer;
  }

  #admit(now: number, key: string, state: KeyState, inputTokens: number, config: MockConfig): QuotaLease | QuotaRejection {
    const { requestsPerMinute, tokensPerMinute } = modelLimits(config, state.model ?? '');
    if (config.maxConcurrent !== null && state.inFlight >= config.maxConcurrent) {
      return { ok: false, quota: 'concurrent', limit: config.maxConcurrent, retryMs: CONCURRENT_RETRY_MS };
    }
    if (config.requestsPerDay !== null) {
      const wait = state.day.waitMs(now, 1, config.requestsPerDay);
      if (wait > 0) return { ok: false, quota: 'requests_per_day', limit: config.requestsPerDay, retryMs: wait };
    }
    const requestWait = state.requests.waitMs(now, 1, requestsPerMinute);
    if (requestWait > 0) {
      return { ok: false, quota: 'requests_per_minute', limit: requestsPerMinute, retryMs: requestWait };
    }
    const tokenWait = state.tokens.waitMs(now, inputTokens, tokensPerMinute);
    if (tokenWait > 0) {
      return { ok: false, quota: 'tokens_per_minute', limit: tokensPerMinute, retryMs: tokenWait };
    }
    state.day.add(now, 1);
    state.requests.add(now, 1);
    state.tokens.add(now, inputTokens);
    const log = this.#log;
    const windowMs = this.#windowMs;
    log.record(key, state.model, now, windowMs, inputTokens, 1);
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
          log.record(key, state.model, end, windowMs, outputTokens, 0);
        }
      },
    };
  }

  /** Requests and tokens per minute of the quota a call of `model` by `key` draws from, as OpenAI reports them in headers. */
  status(key: string, model: string, config: MockConfig): { requests: RateStatus; tokens: RateStatus } {
    const now = this.#clock.now();
    const { state } = this.#state(key, model, config);
    const limits = modelLimits(config, state.model ?? '');
    const figures = (window: RateWindow, limit: number): RateStatus => ({
      limit,
      remaining: Math.max(0, Math.floor(limit - window.used(now, limit))),
      resetMs: Math.max(0, window.resetMs(now, limit)),
    });
    return {
      requests: figures(state.requests, limits.requestsPerMinute),
      tokens: figures(state.tokens, limits.tokensPerMinute),
    };
  }

  /**
   * The current usage of each quota closest to its limit, over every key (and model), with
   * that quota's per-minute limits (the default model's limits when nothing was counted yet).
   */
  peakUsage(config: MockConfig): { used: Record<QuotaName, number>; requestsPerMinute: number; tokensPerMinute: number } {
    const now = this.#clock.now();
    const used: Record<QuotaName, number> = {
      requests_per_minute: 0,
      tokens_per_minute: 0,
      requests_per_day: 0,
      concurrent: 0,
    };
    let { requestsPerMinute, tokensPerMinute } = modelLimits(config, '');
    if (config.quotaWindow !== this.#kind || config.quotaWindowMs !== this.#windowMs) return { used, requestsPerMinute, tokensPerMinute };
    let requestShare = -1;
    let tokenShare = -1;
    for (const state of this.#keys.values()) {
      const limits = modelLimits(config, state.model ?? '');
      const requests = state.requests.used(now, limits.requestsPerMinute);
      const tokens = state.tokens.used(now, limits.tokensPerMinute);
      if (requests / limits.requestsPerMinute > requestShare) {
        requestShare = requests / limits.requestsPerMinute;
        used.requests_per_minute = requests;
        requestsPerMinute = limits.requestsPerMinute;
      }
      if (tokens / limits.tokensPerMinute > tokenShare) {
        tokenShare = tokens / limits.tokensPerMinute;
        used.tokens_per_minute = tokens;
        tokensPerMinute = limits.tokensPerMinute;
      }
      used.requests_per_day = Math.max(used.requests_per_day, state.day.used(now));
      used.concurrent = Math.max(used.concurrent, state.inFlight);
    }
    return { used, requestsPerMinute, tokensPerMinute };
  }
}
