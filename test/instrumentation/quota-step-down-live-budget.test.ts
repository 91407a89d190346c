// QuotaStepDown live: a RedisTokenBudget cut to the fleet's window on a real redis-server, and
// a real ADK tree through RateLimitedLlm (static TokenBudget) against the mock provider whose
// quota is cut mid-run through its admin API.
import { InMemoryRunner, LlmAgent, LogLevel, ParallelAgent, SequentialAgent, setLogLevel } from '@google/adk';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderGemini } from '../../agent/provider-model.ts';
import { limiterMetrics, QuotaStepDown, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { isRateLimitError } from '../../instrumentation/rate-limit-errors.ts';
import { connectBudgetRedis, RedisTokenBudget } from '../../instrumentation/redis.ts';
import { FakeLlm } from '../../instrumentation/testing.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock } from '../agent/stack.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';
import { metricValue } from './helpers.ts';

setLogLevel(LogLevel.ERROR);

describe('QuotaStepDown on a RedisTokenBudget (real redis-server)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('cuts to just below the fleet\'s window as Redis counted it, on the replica that heard the 429', async () => {
    const key = `step-down:${Date.now()}`;
    const clients = [await connectBudgetRedis(redis.url), await connectBudgetRedis(redis.url)];
    const [a, b] = clients.map((client) => new RedisTokenBudget({ client, name: 'test', key, tokensPerMinute: 10_000, registry: new Registry() }));
    try {
      await a.reserve(3_000);
      await b.reserve(3_000);
      await a.reserve(1_000); // a's last answer from Redis counts the fleet's 7,000
      expect(a.windowTokens).toBe(7_000);
      const step = new QuotaStepDown({ budget: a });
      expect(step.onRateLimited({ quota: 'minute', retryAfterMs: 6_000 })).toBe('cut');
      expect(a.windowLimit).toBeCloseTo(5_985, 6); // 95 % of 7,000 × (1 - 6/60)
      expect(b.windowLimit).toBe(10_000);
      step.close();
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});

describe('static mode through a real ADK tree when the provider cuts its quota', () => {
  const WINDOW_MS = 2_000;
  let mock: MockProvider;
  beforeAll(async () => {
    mock = await startMockProvider(fastMock(40, { quotaWindowMs: WINDOW_MS, quotaWindow: 'fixed', requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000 }), { port: 0 });
  });
  afterAll(async () => {
    await mock?.close();
  });

  function reviewTree(model: RateLimitedLlm) {
    const reviewers = [1, 2, 3, 4].map((i) => new LlmAgent({ name: `reviewer_${i}`, model, instruction: `Review aspect ${i} of the document.`, outputKey: `review_${i}` }));
    return new SequentialAgent({
      name: 'review',
      subAgents: [new ParallelAgent({ name: 'reviewers', subAgents: reviewers }), new LlmAgent({ name: 'synthesizer', model, instruction: 'Combine {review_1?} {review_2?}' })],
    });
  }

  async function runTree(model: RateLimitedLlm, text: string): Promise<void> {
    const runner = new InMemoryRunner({ agent: reviewTree(model), appName: 'test' });
    for await (const _ of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text }] } })) {
      // events are not what this test reads
    }
  }

  async function setQuota(tokensPerMinute: number): Promise<void> {
    const response = await fetch(`${mock.url}/admin/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokensPerMinute }) });
    expect(response.status).toBe(200);
  }

  it('a bounded number of 429s after the cut, then none until the quota comes back; then the limit climbs back', async () => {
    const gemini = new ProviderGemini({ providerUrl: mock.url, apiKey: 'step-key', model: 'gemini-2.5-flash', httpTimeoutMs: 10_000 });
    const rateLimits: number[] = [];
    const delegate = new FakeLlm(async function* (call) {
      try {
        yield* gemini.generateContentAsync({ ...call.request, model: 'gemini-2.5-flash' }, false);
      } catch (error) {
        if (!isRateLimitError(error)) throw error;
        rateLimits.push(performance.now());
        throw error;
      }
    });
    const text = 'document: '.concat('function f(x) { return x + 1; } '.repeat(60));
    // What one tree counts at the provider: a calibration run on a budget that never binds.
    const probeRegistry = new Registry();
    const probe = new RateLimitedLlm({ delegate, name: 'probe', maxConcurrent: 4, budget: new TokenBudget(1e9, { windowMs: WINDOW_MS }), registry: probeRegistry });
    await runTree(probe, text);
    probe.close();
    const perTree = await metricValue(probeRegistry, limiterMetrics.tokensActual.name, {});
    expect(perTree).toBeGreaterThan(0);

    const quota = Math.round(8 * perTree); // 8 trees per window
    await setQuota(quota);
    const registry = new Registry();
    const budget = new TokenBudget(Math.round(0.9 * quota), { windowMs: WINDOW_MS });
    const step = new QuotaStepDown({ budget, holdMs: 6 * WINDOW_MS });
    const model = new RateLimitedLlm({ delegate, name: 'gemini', maxConcurrent: 4, budget, stepDown: step, maxWaitMs: 10_000, registry });
    let stop = false;
    const loops = [0, 1].map(async () => {
      while (!stop) await runTree(model, text).catch(() => undefined);
    });
    const windows = async (n: number) => new Promise((resolve) => setTimeout(resolve, n * WINDOW_MS));
    try {
      await windows(2);
      const beforeCut = rateLimits.length;
      await setQuota(Math.round(0.4 * quota)); // the provider cuts to 40 % (its tokensPerMinute counts per quotaWindowMs)
      const cutAt = performance.now();
      await windows(3);
      const settledAt = performance.now();
      await windows(3);
      const afterCut = rateLimits.filter((at) => at >= cutAt);
      const late = rateLimits.filter((at) => at >= settledAt);
      // Waves at the wall: each at most the calls in flight (4 permits) and their retries.
      expect(afterCut.length, `429s after the cut: ${afterCut.length}`).toBeLessThanOrEqual(24);
      expect(afterCut.length).toBeGreaterThan(0);
      expect(late, `429s once stepped down: ${late.length}`).toEqual([]);
      expect(budget.windowLimit).toBeLessThanOrEqual(0.45 * quota);
      expect(budget.windowLimit).toBeGreaterThanOrEqual(step.floor);
      expect(await metricValue(registry, limiterMetrics.budgetWindowLimit.name, {})).toBe(budget.windowLimit);
      // The quota comes back: no 429s, and the limit climbs to the ceiling after the hold.
      await setQuota(quota);
      const restoredAt = performance.now();
      await windows(7);
      expect(rateLimits.filter((at) => at >= restoredAt)).toEqual([]);
      expect(budget.windowLimit).toBe(budget.capacity);
      expect(beforeCut).toBeLessThanOrEqual(rateLimits.length);
    } finally {
      stop = true;
      await Promise.all(loops);
      model.close();
      step.close();
    }
  }, 90_000);
});
