// Full-jitter exponential backoff: a delay drawn uniformly from
// [0, min(cap, base * 2^attempt)). Spreading the retries of many clients is what keeps a
// 429 storm from re-synchronising.
import { DEFAULT_BACKOFF } from './defaults.ts';

export interface BackoffOptions {
  /** Base delay in ms for the first retry (attempt 0). */
  readonly baseMs: number;
  /** Upper bound of the exponential window in ms. */
  readonly capMs: number;
}

/** Delay before retry number `attempt` (0-based). `random` returns [0, 1). */
export function fullJitterDelayMs(
  attempt: number,
  options: BackoffOptions = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const window = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, attempt));
  return random() * window;
}
