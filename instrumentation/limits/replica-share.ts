// Static split of one provider quota between N replicas of a service, each with its own
// RateLimitedLlm: every replica gets headroom × quota / N, so the fleet together stays
// under the quota without coordination (the worked example: 90 % of 1 M TPM over 3
// replicas = 300 k TPM each).

export interface QuotaShareInput {
  /** The provider's tokens-per-minute quota for the whole fleet. */
  readonly tokensPerMinute: number;
  /** Concurrency the whole fleet may use. */
  readonly maxConcurrent: number;
  readonly replicas: number;
  /** Fraction of the quota to use (default 0.9: keep 10 % for estimate error and bursts). */
  readonly headroom?: number;
}

export interface QuotaShare {
  readonly tokensPerMinute: number;
  readonly maxConcurrent: number;
}

export function replicaShare(input: QuotaShareInput): QuotaShare {
  const headroom = input.headroom ?? 0.9;
  if (!(Number.isInteger(input.replicas) && input.replicas >= 1)) {
    throw new RangeError(`replicas must be an integer >= 1, got ${input.replicas}`);
  }
  if (!(headroom > 0 && headroom <= 1)) throw new RangeError(`headroom must be in (0, 1], got ${headroom}`);
  if (!(input.tokensPerMinute > 0)) throw new RangeError(`tokensPerMinute must be > 0, got ${input.tokensPerMinute}`);
  if (!(input.maxConcurrent >= 1)) throw new RangeError(`maxConcurrent must be >= 1, got ${input.maxConcurrent}`);
  return {
    tokensPerMinute: Math.floor((input.tokensPerMinute * headroom) / input.replicas),
    maxConcurrent: Math.max(1, Math.floor(input.maxConcurrent / input.replicas)),
  };
}
