// RedisTokenBudget's view of Redis' health: whether it answers now (`central`), the last
// failure, and when to try it again. After a failure the budget uses its fallback for
// retryAfterMs before trying Redis again; any answer makes it usable again at once. Health
// also comes from a periodic probe (an unref'd timer), not only from the last reservation,
// so `central` is fresh on an idle replica too.
import { type Clock, type TimerHandle, unrefTimer } from '../clock.ts';

export interface RedisHealthOptions {
  readonly clock: Clock;
  /** Whether the client is connected now. */
  readonly isReady: () => boolean;
  /** After a failure, do not try Redis for this long, ms. */
  readonly retryAfterMs: number;
  /** Period of the probe, ms. */
  readonly intervalMs: number;
  /** Told when Redis starts or stops answering (for a log line). */
  readonly onCentralChange?: (central: boolean, error?: unknown) => void;
}

export class RedisHealth {
  readonly #options: RedisHealthOptions;
  #central = true;
  #downUntil = Number.NEGATIVE_INFINITY;
  #lastError: unknown = new Error('Redis is not connected');
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(options: RedisHealthOptions) {
    this.#options = options;
  }

  /** Whether Redis answers now (false while the fallback policy applies). */
  get central(): boolean {
    return this.#central;
  }

  /** Why Redis was last found unusable. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** Whether to try Redis now: not within retryAfterMs of a failure, and the client connected. */
  usable(): boolean {
    if (this.#options.clock.now() < this.#downUntil) return false;
    if (this.#options.isReady()) return true;
    this.markDown(new Error('Redis is not connected'));
    return false;
  }

  markDown(error: unknown): void {
    this.#lastError = error;
    this.#downUntil = this.#options.clock.now() + this.#options.retryAfterMs;
    if (this.#central) {
      this.#central = false;
      this.#options.onCentralChange?.(false, error);
    }
  }

  /** Redis answered: use it again at once. */
  markUp(): void {
    this.#downUntil = Number.NEGATIVE_INFINITY;
    if (!this.#central) {
      this.#central = true;
      this.#options.onCentralChange?.(true);
    }
  }

  /** Probe every intervalMs, one probe at a time (a probe that hangs ends at its command deadline). */
  start(probe: () => Promise<unknown>): void {
    if (this.#stopped) return;
    this.#timer = this.#options.clock.setTimeout(() => void this.#check(probe), this.#options.intervalMs);
    unrefTimer(this.#timer);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #check(probe: () => Promise<unknown>): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    if (!this.#options.isReady()) this.markDown(new Error('Redis is not connected'));
    else await probe().catch((error: unknown) => this.markDown(error));
    this.start(probe);
  }
}
