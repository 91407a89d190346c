// The models each variant of the quota benchmark gives an ADK tree: what a user would put
// between the agents and the provider. Every variant calls the provider through ADK's Gemini
// model and the real @google/genai client; only what limits the calls differs.
//
// - no limiter (SDK retries): genai's own HttpRetryOptions (5 attempts, exponential backoff),
//   the ADK docs' advice for 429s.
// - p-limit: the same SDK retries, and at most `permits` calls at once per replica.
// - bottleneck: the same SDK retries, `permits` at once, and a reservoir of the replica's token
//   share refreshed every quota window, each call weighing its input tokens.
// - plain bucket: RateLimitedLlm over a TokenBudget counting total tokens without the
//   rolling-window guard (the bucket the design started from), fair permits, reconcile.
// - quotascope default / central / adaptive: RateLimitedLlm as the agent service wires it
//   (input-counted budget with the rolling guard; one Redis bucket for the fleet; AIMD on the
//   permits and the tokens per window). Default and central admit each user request whole
//   (request admission, the service's default), adaptive too: AIMD learns from the 429s of the
//   admitted requests' calls.
// - quotascope per-call: the default's RateLimitedLlm with each call admitted on its own
//   (`--admission call`), the behaviour before request admission.
// - quotascope full quota: the default with a budget of 100 % of the quota, to compare with the
//   unlimited peers at equal quota use.
//
// Delays are compressed with the quota window: the SDK's backoff, the limiter's maxWait and
// backoff are scaled by windowMs / 60 s, as the quota itself is.
import { BaseLlm, type BaseLlmConnection, type LlmRequest, type LlmResponse } from '@google/adk';
import type { HttpOptions } from '@google/genai';
import Bottleneck from 'bottleneck';
import pLimit from 'p-limit';
import { Registry } from 'prom-client';
import { ProviderGemini } from '../../agent/provider-model.ts';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { AimdLimit, type Budget, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { type BudgetRedisClient, connectBudgetRedis, RedisTokenBudget } from '../../instrumentation/redis.ts';
import { RequestAdmission } from '../../instrumentation/admission/request-admission.ts';

export const VARIANTS = [
  'no limiter (SDK retries)',
  'p-limit',
  'bottleneck',
  'plain bucket',
  'quotascope default',
  'quotascope per-call',
  'quotascope full quota',
  'quotascope central',
  'quotascope adaptive',
] as const;
export type VariantName = (typeof VARIANTS)[number];

export interface VariantSettings {
  readonly providerUrl: string;
  readonly apiKey: string;
  /** The quota window, ms (time is compressed by windowMs / 60 s). */
  readonly windowMs: number;
  /** The fleet's budget per window, tokens (a share of the quota). */
  readonly fleetBudgetTokens: number;
  /** The provider quota per window, tokens (the full-quota variant's budget). */
  readonly quotaTokens: number;
  readonly replicas: number;
  /** Permits per replica (from the plan). */
  readonly permits: number;
  /** The limiter's bound on waiting, ms (already compressed). */
  readonly maxWaitMs: number;
  /** A call's time the limiters expect before they measured one, ms (already compressed). */
  readonly expectedCallMs: number;
  /** Counted tokens per call the limiters expect before they measured one. */
  readonly expectedTokensPerCall: number;
  /** The request deadline, ms (already compressed). */
  readonly requestDeadlineMs: number;
  /** redis:// URL for the central variant. */
  readonly redisUrl?: string;
  /** A fresh Redis key per run, so runs never share a bucket. */
  readonly redisKey?: string;
}

/** One replica's model, and how to inspect and stop it. */
export interface ReplicaModel {
  readonly model: BaseLlm;
  /** Request admission around each user request (the agent service's default); absent: calls are admitted one by one. */
  readonly admission?: RequestAdmission;
  /** Current permit limit (moves under AIMD); undefined without permits. */
  permitLimit(): number | undefined;
  /** The budget's tokens per window now (moves under AIMD); undefined without a budget. */
  tokenLimit?(): number | undefined;
  close(): Promise<void>;
}

const compress = (ms: number, windowMs: number) => (ms * windowMs) / 60_000;

/** ADK's Gemini with genai's retry options on, their delays compressed like the window. */
class RetryingGemini extends ProviderGemini {
  readonly #windowMs: number;
  constructor(providerUrl: string, apiKey: string, windowMs: number) {
    super({ providerUrl, apiKey, model: 'gemini-2.5-flash', httpTimeoutMs: 120_000 });
    this.#windowMs = windowMs;
  }
  protected override getHttpOptions(): HttpOptions {
    // genai's defaults: 5 attempts, 1 s initial delay doubling up to 60 s (seconds here).
    const scale = this.#windowMs / 60_000;
    return { ...super.getHttpOptions(), retryOptions: { attempts: 5, initialDelay: 1 * scale, maxDelay: 60 * scale } };
  }
}

/** Runs a whole model call inside `schedule` (a concurrency or rate limiter's slot). */
class ScheduledLlm extends BaseLlm {
  readonly #delegate: BaseLlm;
  readonly #schedule: <T>(request: LlmRequest, run: () => Promise<T>) => Promise<T>;
  constructor(delegate: BaseLlm, schedule: <T>(request: LlmRequest, run: () => Promise<T>) => Promise<T>) {
    super({ model: delegate.model });
    this.#delegate = delegate;
    this.#schedule = schedule;
  }
  override async *generateContentAsync(request: LlmRequest, stream = false, signal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const responses = await this.#schedule(request, async () => {
      const out: LlmResponse[] = [];
      for await (const response of this.#delegate.generateContentAsync(request, stream, signal)) out.push(response);
      return out;
    });
    yield* responses;
  }
  override connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('live connections are not part of the benchmark'));
  }
}

function wrapped(settings: VariantSettings, budget: Budget, extra: { adaptive?: boolean } = {}): RateLimitedLlm {
  const { windowMs, permits } = settings;
  return new RateLimitedLlm({
    delegate: new ProviderGemini({ providerUrl: settings.providerUrl, apiKey: settings.apiKey, model: 'gemini-2.5-flash', httpTimeoutMs: 120_000 }),
    name: 'bench',
    maxConcurrent: permits,
    budget,
    maxWaitMs: settings.maxWaitMs,
    backoff: { baseMs: compress(500, windowMs), capMs: compress(30_000, windowMs) },
    registry: new Registry(),
    expectedCallMs: settings.expectedCallMs,
    expectedTokensPerCall: settings.expectedTokensPerCall,
    adaptiveLimit: extra.adaptive ? new AimdLimit({ initial: permits, max: permits * 2, budget }) : undefined,
  });
}

function limited(llm: RateLimitedLlm, after: () => Promise<void> = async () => {}): ReplicaModel {
  return {
    model: llm,
    permitLimit: () => llm.semaphore.limit,
    tokenLimit: () => llm.budget?.windowLimit,
    async close() {
      llm.close();
      await llm.budget?.close();
      await after();
    },
  };
}

/** Request admission as the agent service builds it, with the compressed deadline. */
const admitting = (settings: VariantSettings) => new RequestAdmission({ requestDeadlineMs: settings.requestDeadlineMs });

/** One model per replica for a variant; the caller closes each. */
export async function createReplicaModels(variant: VariantName, settings: VariantSettings): Promise<ReplicaModel[]> {
  const { providerUrl, apiKey, windowMs, replicas, permits } = settings;
  const share = Math.floor(settings.fleetBudgetTokens / replicas);
  const models: ReplicaModel[] = [];
  for (let i = 0; i < replicas; i++) {
    switch (variant) {
      case 'no limiter (SDK retries)':
        models.push({ model: new RetryingGemini(providerUrl, apiKey, windowMs), permitLimit: () => undefined, close: async () => {} });
        break;
      case 'p-limit': {
        const limit = pLimit(permits);
        const model = new ScheduledLlm(new RetryingGemini(providerUrl, apiKey, windowMs), (_request, run) => limit(run));
        models.push({ model, permitLimit: () => limit.concurrency, close: async () => limit.clearQueue() });
        break;
      }
      case 'bottleneck': {
        // A job's weight counts against maxConcurrent too, so the token reservoir and the
        // permits are two limiters: the reservoir first, then a permit.
        const tokens = new Bottleneck({ reservoir: share, reservoirRefreshAmount: share, reservoirRefreshInterval: windowMs });
        const concurrency = new Bottleneck({ maxConcurrent: permits });
        const model = new ScheduledLlm(new RetryingGemini(providerUrl, apiKey, windowMs), (request, run) =>
          tokens.schedule({ weight: Math.min(share, estimateInputTokens(request)) }, () => concurrency.schedule(run)),
        );
        models.push({
          model,
          permitLimit: () => permits,
          close: async () => {
            await tokens.stop({ dropWaitingJobs: true });
            await concurrency.stop({ dropWaitingJobs: true });
          },
        });
        break;
      }
      case 'plain bucket':
        models.push(limited(wrapped(settings, new TokenBudget(share, { windowMs, rollingWindow: false, countedTokens: 'total' }))));
        break;
      case 'quotascope default':
        models.push({ ...limited(wrapped(settings, new TokenBudget(share, { windowMs }))), admission: admitting(settings) });
        break;
      case 'quotascope per-call':
        models.push(limited(wrapped(settings, new TokenBudget(share, { windowMs }))));
        break;
      case 'quotascope full quota':
        models.push({ ...limited(wrapped(settings, new TokenBudget(Math.floor(settings.quotaTokens / replicas), { windowMs }))), admission: admitting(settings) });
        break;
      case 'quotascope adaptive':
        models.push({ ...limited(wrapped(settings, new TokenBudget(share, { windowMs }), { adaptive: true })), admission: admitting(settings) });
        break;
      case 'quotascope central': {
        if (!settings.redisUrl) throw new Error('quotascope central needs a redis-server (redisUrl)');
        const client: BudgetRedisClient = await connectBudgetRedis(settings.redisUrl);
        const budget = new RedisTokenBudget({
          client,
          name: 'bench',
          key: settings.redisKey,
          tokensPerMinute: settings.fleetBudgetTokens,
          windowMs,
          localShareTokensPerMinute: share,
          // Compressed like every other delay: a waiting head polls at least every 1 s of real time.
          maxPollMs: Math.max(1, Math.round(compress(1_000, windowMs))),
          registry: new Registry(),
        });
        const model = limited(wrapped(settings, budget), async () => {
          await client.close().catch(() => client.destroy());
        });
        models.push({ ...model, admission: admitting(settings) });
        break;
      }
    }
  }
  return models;
}
