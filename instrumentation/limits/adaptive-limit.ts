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
}
