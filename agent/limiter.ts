// The one RateLimitedLlm a replica's trees share: permits, the token budget, the bounded
// wait, and the per-call report hook that feeds each request's accounting. The token budget
// and the permit limit depend on how the replicas share the provider quota:
//
// - static:   a local TokenBudget of this replica's share (tokensPerMinute × replicaShare),
//             a fixed permit limit. No coordination; the fleet stays under the quota by
//             construction, at the price of capacity idle on quiet replicas.
// - central:  one RedisTokenBudget of the whole fleet's tokensPerMinute, shared by every
//             replica with the same limiter name (key quotascope:budget:<limiterName>).
//             Redis unreachable mid-run (refused, reset, or a command past its deadline):
//             centralOutage decides: fail-open to the static share (counted in
//             llm_limiter_budget_central_unavailable_total{handling="local_share"}) or
//             fail-closed (calls refused with BUDGET_UNAVAILABLE, handling="refused"); one
//             log line per change. Redis unreachable at start: the replica does not start
//             (a wrong URL must not run silently on the fallback).
// - adaptive: the static token share, and an AIMD limit moving the permit limit: down on
//             429s (and calls slower than adaptiveLatencyMs), up by one on busy successes.
//
// Static and central budgets step down on a provider 429 of this replica's own usage
// (QuotaStepDown, one per budget, shared by the limiters of a shared budget): the tokens per
// window go to just below what the window counted, bounded, and climb back to the configured
// ceiling; a 429 from shared capacity leaves them alone. Adaptive mode's AIMD does its own.
//
// The local TokenBudget (static and adaptive, and central's fallback share) has the
// rolling-minute guard unless budgetWindow is 'bucket': provider quotas count per minute
// window, and a full bucket draining admits up to 2× its rate in one. The Redis bucket of
// central mode is the bucket alone.
//
// Quota scope: each model has its own quota (Gemini's scope) and each model's limiter its own
// budget; when every model of the key shares one quota, the limiters share one budget
// (createSharedBudget), built once and closed by its owner.
//
// Traffic-class lanes: every model call runs in its request's lane (the body's trafficClass,
// read from the run context), and the `batch` lane may hold at most batchLanePermits(config)
// permits, so a batch backfill never takes every permit from interactive users.
import type { BaseLlm } from '@google/adk';
import type { Registry } from 'prom-client';
import {
  AimdLimit,
  type Budget,
  type CallReport,
  FairSemaphore,
  type LimiterSnapshot,
  RateLimitedLlm,
  TokenBudget,
  UsageEstimator,
} from '../instrumentation/index.ts';
import { type Clock, realClock } from '../instrumentation/clock.ts';
import { QuotaStepDown } from '../instrumentation/limits/quota-step-down.ts';
import { type BudgetRedisClient, connectBudgetRedis, redactUrl, RedisTokenBudget } from '../instrumentation/redis.ts';
import { CentralBudgetConflict, centralProblemText } from '../instrumentation/errors.ts';
import { RequestAdmission } from '../instrumentation/admission/request-admission.ts';
import { type BudgetWindow, batchLanePermits, type LimiterOptions, type ModelLimiterOptions, type QuotaSharing } from './config.ts';

/** The lane whose permits are capped (the request body's trafficClass value). */
export const BATCH_LANE = 'batch';

/** The request admission of a service (`admission: request`), or undefined when model calls are admitted one by one. */
export function createRequestAdmission(config: Pick<LimiterOptions, 'admission' | 'requestDeadlineMs'>, clock: Clock = realClock): RequestAdmission | undefined {
  return config.admission === 'request' ? new RequestAdmission({ requestDeadlineMs: config.requestDeadlineMs, shedFirstLanes: [BATCH_LANE], clock }) : undefined;
}

export interface Limiter {
  /** Give this to every LlmAgent of every tree. */
  readonly model: RateLimitedLlm;
  readonly quotaSharing: QuotaSharing;
  readonly budgetWindow: BudgetWindow;
  readonly budget: Budget;
  /** Most permits the batch lane may hold; undefined when lanes are off. */
  readonly batchMaxPermits: number | undefined;
  snapshot(): LimiterSnapshot;
  close(): Promise<void>;
}

/** A token budget with what its owner closes. */
export interface OwnedBudget {
  readonly budget: Budget;
  /** The static share (tokensPerMinute × replicaShare): the local bucket's size, central's fallback. */
  readonly staticShare: number;
  /** Steps the budget down on a provider 429 (static and central); undefined in adaptive mode. */
  readonly stepDown: QuotaStepDown | undefined;
  close(): Promise<void>;
}

/** The token budget of one limiter (or of every model's, when they share one quota). */
/** `clock`: what the budget waits on (a forward run's manual clock; the real one otherwise). */
export async function createBudget(config: ModelLimiterOptions, registry: Registry, log: (line: string) => void = console.error, clock: Clock = realClock): Promise<OwnedBudget> {
  const staticShare = Math.max(1, Math.floor(config.tokensPerMinute * config.replicaShare));
  let redis: BudgetRedisClient | undefined;
  let budget: Budget;
  if (config.quotaSharing === 'central') {
    const url = config.redisUrl as string; // required by the schema for central
    try {
      redis = await connectBudgetRedis(url);
    } catch (error) {
      throw new Error(`quotaSharing "central": ${(error as Error).message}`, { cause: error });
    }
    const shared: RedisTokenBudget = new RedisTokenBudget({
      client: redis,
      name: config.limiterName,
      tokensPerMinute: config.tokensPerMinute,
      centralOutage: config.centralOutage,
      countedTokens: config.countedTokens,
      windowMs: config.quotaWindowMs,
      localShareTokensPerMinute: staticShare,
      registry,
      onCentralChange: (central, error) =>
        log(
          central
            ? `agent: limiter "${config.limiterName}": central token budget at ${redactUrl(url)} reachable again`
            : `agent: limiter "${config.limiterName}": ${centralProblemText(shared.key, error)} at ${redactUrl(url)}; ${
                error instanceof CentralBudgetConflict
                  ? 'refusing requests until the key is free'
                  : config.centralOutage === 'fail-open'
                    ? `using the local share of ${staticShare} tokens/min`
                    : 'refusing model calls (fail-closed)'
              }`,
        ),
    });
    budget = shared;
  } else {
    budget = new TokenBudget(staticShare, {
      rollingWindow: config.budgetWindow === 'rolling',
      countedTokens: config.countedTokens,
      windowMs: config.quotaWindowMs,
      clock,
    });
  }
  const stepDown = config.quotaSharing === 'adaptive' ? undefined : new QuotaStepDown({ budget, clock });
  return {
    budget,
    staticShare,
    stepDown,
    async close() {
      stepDown?.close();
      await budget.close(); // a shared budget's pending settlements are bounded by its command deadline
      await redis?.close(); // bounded too: a hung Redis gets its socket destroyed
    },
  };
}

/**
 * One model's limiter. `shared`: a budget the limiters of several models share (quota scope
 * key); its owner closes it, not the limiter.
 */
export async function createLimiter(
  config: ModelLimiterOptions,
  delegate: BaseLlm,
  registry: Registry,
  onCallEnd: (report: CallReport) => void,
  trafficClassOf: () => string | undefined = () => undefined,
  log: (line: string) => void = console.error,
  shared?: OwnedBudget,
  clock: Clock = realClock,
): Promise<Limiter> {
  const owned = shared ?? (await createBudget(config, registry, log, clock));
  const { budget, staticShare, stepDown } = owned;
  const adaptiveLimit =
    config.quotaSharing === 'adaptive'
      ? new AimdLimit({
          initial: config.permits,
          max: config.adaptiveMaxPermits ?? config.permits * 2,
          latencyThresholdMs: config.adaptiveLatencyMs,
          budget, // the tokens per window move too: they bind before the permits do
          clock,
        })
      : undefined;
  const batchMaxPermits = batchLanePermits(config);
  const semaphore = new FairSemaphore(config.permits, {
    laneLimits: batchMaxPermits === undefined ? {} : { [BATCH_LANE]: batchMaxPermits },
    clock,
  });
  const model = new RateLimitedLlm({
    delegate,
    name: config.limiterName,
    semaphore,
    // Lanes off: no lane at all, so the call path is exactly the unlaned one.
    laneOf: batchMaxPermits === undefined ? undefined : trafficClassOf,
    budget,
    // Capped by the static share: in central mode a call must also fit the fallback bucket.
    estimatedTokens:
      config.estimatedTokensPerCall ??
      new UsageEstimator({
        countedTokens: config.countedTokens,
        initialOutputTokens: config.initialOutputTokens,
        maxTokens: Math.min(budget.capacity, staticShare),
      }),
    maxWaitMs: config.maxWaitMs,
    maxWaiting: config.maxWaiting,
    expectedCallMs: config.expectedCallMs,
    expectedTokensPerCall: config.expectedTokensPerCall,
    registry,
    onCallEnd,
    adaptiveLimit,
    stepDown,
    clock,
  });
  return {
    model,
    quotaSharing: config.quotaSharing,
    budgetWindow: config.budgetWindow,
    budget,
    batchMaxPermits,
    snapshot: () => model.snapshot(),
    async close() {
      model.close();
      if (!shared) await owned.close();
    },
  };
}
