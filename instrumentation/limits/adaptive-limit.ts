// The contract between the limiter and a concurrency-limit algorithm (Netflix
// concurrency-limits style): the limiter reports every finished call, the algorithm
// answers with the limit to use next. Algorithms live apart from the limiter.

export interface CallSample {
  /** Model call time after admission, in ms. */
  readonly durationMs: number;
  /** The provider answered 429 at least once during the call. */
  readonly rateLimited: boolean;
  /** The call failed for another reason (not counted as a congestion signal). */
  readonly failed: boolean;
  /** Permits in use when the call ended (including this one). */
  readonly inFlight: number;
}

export interface AdaptiveLimit {
  /** Current limit (integer >= 1). */
  readonly limit: number;
  /** Report a finished call; returns the new limit. */
  onSample(sample: CallSample): number;
  /**
   * A call was admitted just now with these tokens (its reservation, or its part of a request
   * admitted whole): what the provider will count for it. A limit that has this can tell what
   * its replica put into the provider's window.
   */
  onAdmitted?(tokens: number): void;
  /**
   * The provider answered 429 just now (before the call's retries and its end), naming when it
   * takes calls again (`retryAfterMs`, its RetryInfo or Retry-After) if it did: returns the
   * new limit. A limit that has this hears of a 429 at once and reads a finished call's
   * `rateLimited` as the same news, not a second signal.
   */
  onRateLimited?(retryAfterMs?: number): number;
}
