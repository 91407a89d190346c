// Static split of one provider quota between N replicas of a service, each with its own
// RateLimitedLlm: every replica gets headroom × quota / N, so the fleet together stays
// under the quota without coordination (the worked example: 90 % of 1 M TPM over 3
// replicas = 300 k TPM each).
import { z } from 'zod';
import { DEFAULT_REPLICA_HEADROOM } from '../defaults.ts';
import { parseOptions } from '../limiter-options.ts';

export interface QuotaShareInput {
  /** The provider's tokens-per-minute quota for the whole fleet. */
  readonly tokensPerMinute: number;
  /** Concurrency the whole fleet may use. */
  readonly maxConcurrent: number;
  readonly replicas: number;
  /** Fraction of the quota to use (default DEFAULT_REPLICA_HEADROOM, 0.9: keep 10 % for estimate error and bursts). */
  readonly headroom?: number;
}

export interface QuotaShare {
  readonly tokensPerMinute: number;
  readonly maxConcurrent: number;
}

const quotaShareInputSchema = z.object({
  tokensPerMinute: z.number().gt(0),
  maxConcurrent: z.number().min(1),
  replicas: z.int().min(1),
  headroom: z.number().gt(0).max(1).default(DEFAULT_REPLICA_HEADROOM),
});

export function replicaShare(input: QuotaShareInput): QuotaShare {
  const { tokensPerMinute, maxConcurrent, replicas, headroom } = parseOptions('replicaShare', quotaShareInputSchema, input);
  return {
    tokensPerMinute: Math.floor((tokensPerMinute * headroom) / replicas),
    maxConcurrent: Math.max(1, Math.floor(maxConcurrent / replicas)),
  };
}
