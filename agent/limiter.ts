// The one RateLimitedLlm a replica's trees share: permits, this replica's share of the
// token budget, the bounded wait, and the per-call report hook that feeds each request's
// accounting.
import type { BaseLlm } from '@google/adk';
import type { Registry } from 'prom-client';
import { type CallReport, type LimiterSnapshot, RateLimitedLlm, TokenBudget, UsageEstimator } from '../instrumentation/index.ts';
import type { AgentServiceOptions } from './config.ts';

export interface Limiter {
  /** Give this to every LlmAgent of every tree. */
  readonly model: RateLimitedLlm;
  snapshot(): LimiterSnapshot;
  close(): void;
}

export function createLimiter(
  config: AgentServiceOptions,
  delegate: BaseLlm,
  registry: Registry,
  onCallEnd: (report: CallReport) => void,
): Limiter {
  const budget = new TokenBudget(Math.max(1, Math.floor(config.tokensPerMinute * config.replicaShare)));
  const model = new RateLimitedLlm({
    delegate,
    name: config.limiterName,
    maxConcurrent: config.permits,
    budget,
    estimatedTokens:
      config.estimatedTokensPerCall ?? new UsageEstimator({ initialOutputTokens: config.initialOutputTokens, maxTokens: budget.capacity }),
    maxWaitMs: config.maxWaitMs,
    registry,
    onCallEnd,
  });
  return { model, snapshot: () => model.snapshot(), close: () => model.close() };
}
