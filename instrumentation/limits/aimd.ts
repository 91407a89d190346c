// Additive-increase / multiplicative-decrease concurrency limit (as in Netflix's
// concurrency-limits AIMDLimit): a provider 429, or a call slower than a latency
// threshold, multiplies the limit down; a success while the limit was actually being used
// adds one. Passed to RateLimitedLlm as `adaptiveLimit`, it moves the semaphore's limit.
import type { AdaptiveLimit, CallSample } from './adaptive-limit.ts';

export interface AimdOptions {
  readonly initial: number;
  readonly min?: number;
  readonly max: number;
  /** Factor applied on a congestion signal (default 0.9). */
  readonly backoffRatio?: number;
  /** A call slower than this counts as congestion, ms (default: none). */
  readonly latencyThresholdMs?: number;
}

export class AimdLimit implements AdaptiveLimit {
  #limit: number;
  readonly min: number;
  readonly max: number;
  readonly backoffRatio: number;
  readonly latencyThresholdMs: number;

  constructor(options: AimdOptions) {
    this.min = options.min ?? 1;
    this.max = options.max;
    this.backoffRatio = options.backoffRatio ?? 0.9;
    this.latencyThresholdMs = options.latencyThresholdMs ?? Number.POSITIVE_INFINITY;
    if (!(Number.isInteger(this.min) && this.min >= 1 && this.max >= this.min)) {
      throw new RangeError(`AIMD limit needs integers 1 <= min <= max, got min=${this.min} max=${this.max}`);
    }
    if (!(this.backoffRatio > 0 && this.backoffRatio < 1)) throw new RangeError('backoffRatio must be in (0, 1)');
    this.#limit = clamp(Math.round(options.initial), this.min, this.max);
  }

  get limit(): number {
    return this.#limit;
  }

  onSample(sample: CallSample): number {
    if (sample.rateLimited || sample.durationMs > this.latencyThresholdMs) {
      this.#limit = clamp(Math.floor(this.#limit * this.backoffRatio), this.min, this.max);
    } else if (!sample.failed && sample.inFlight * 2 >= this.#limit) {
      // Grow only when the limit is being used: an idle limiter learns nothing about capacity.
      this.#limit = clamp(this.#limit + 1, this.min, this.max);
    }
    return this.#limit;
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
