// A provider 429 storm against 3 replicas sharing one Redis window: the provider's quota is a
// tenth of what the fleet's budget was set for, so the budget alone would send everything.
// Each replica is a RateLimitedLlm over ADK's Gemini model (the real genai client) calling a
// real mock provider; the budgets are RedisTokenBudgets on one key of a real redis-server.
// The first 429 names a retry delay (RetryInfo): that replica sets the shared blocked time,
// and no replica admits a call before it ends. Retries of calls admitted before the 429 are
// the only provider calls in the meantime.
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderGemini } from '../../agent/provider-model.ts';
import { type CallReport, RateLimitedLlm } from '../../instrumentation/index.ts';
import { type BudgetRedisClient, connectBudgetRedis, RedisTokenBudget } from '../../instrumentation/redis.ts';
import { serverRetryDelayMs } from '../../instrumentation/rate-limit-errors.ts';
import { FakeLlm, fakeRequest as request } from '../../instrumentation/testing.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock } from '../agent/stack.ts';
import { consume } from '../instrumentation/helpers.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';

const WINDOW_MS = 3_000;
const CALL_TOKENS = 400;

let redis: RedisServer;
let mock: MockProvider;
const clients: BudgetRedisClient[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  // 6 calls' worth of input tokens per 3 s window; the fleet's budget is 10x that.
  mock = await startMockProvider(fastMock(100, { quotaWindowMs: WINDOW_MS, tokensPerMinute: 6 * CALL_TOKENS + 100, requestsPerMinute: 10_000 }), { port: 0 });
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await redis?.close();
  await mock?.close();
});

describe('chaos: a 429 storm on 3 replicas sharing one Redis window', () => {
  it('the first 429 pauses every replica until its RetryInfo delay ends: no admission in between', async () => {
    const key = `chaos:blocked:${Date.now()}`;
    /** Every 429 a replica's provider call got: when, and the delay it named. */
    const rateLimits: { at: number; delayMs: number; replica: number }[] = [];
    /** Every admission: when (from the call's report) and on which replica. */
    const admissions: { at: number; replica: number }[] = [];
    const replicas = await Promise.all(
      [0, 1, 2].map(async (replica) => {
        const client = await connectBudgetRedis(redis.url);
        clients.push(client);
        const registry = new Registry();
        const budget = new RedisTokenBudget({ client, name: 'storm', key, tokensPerMinute: 60 * CALL_TOKENS, windowMs: WINDOW_MS, registry, maxPollMs: 50 });
        const gemini = new ProviderGemini({ providerUrl: mock.url, apiKey: 'storm-key', model: 'gemini-2.5-flash', httpTimeoutMs: 10_000 });
        // The provider's answers as the wrapper sees them: a 429's time and RetryInfo.
        const observed = new FakeLlm(async function* (call) {
          try {
            yield* gemini.generateContentAsync(call.request, false);
          } catch (error) {
            const delayMs = serverRetryDelayMs(error);
            if (delayMs !== undefined) rateLimits.push({ at: performance.now(), delayMs, replica });
            throw error;
          }
        });
        return new RateLimitedLlm({
          delegate: observed,
          name: 'storm',
          maxConcurrent: 4,
          budget,
          estimatedTokens: CALL_TOKENS,
          maxWaitMs: 10_000,
          maxAttempts: 3,
          registry,
          onCallEnd: (report: CallReport) => {
            if (report.attempts > 0) admissions.push({ at: performance.now() - report.durationMs + report.waitMs, replica });
          },
        });
      }),
    );
    // 36 calls at once, 12 per replica: 6 fit the provider's window.
    const document = 'x'.repeat(CALL_TOKENS * 4 - 200);
    const results = await Promise.all(Array.from({ length: 36 }, (_, i) => consume(replicas[i % 3].generateContentAsync(request(undefined, document)))));
    for (const r of replicas) {
      r.close();
      await r.budget?.close();
    }

    expect(rateLimits.length).toBeGreaterThan(0);
    expect(results.filter((r) => !r.error).length).toBeGreaterThan(6);
    // The first 429 that named a real wait (one near the end of the provider's window names only
    // a few ms): the shared block reaches Redis one round trip after it; allow that, and timer slack at the end.
    const blocking = rateLimits.filter((r) => r.delayMs > 500);
    expect(blocking.length).toBeGreaterThan(0);
    const first = blocking.reduce((a, b) => (b.at < a.at ? b : a));
    const from = first.at + 100;
    const until = first.at + first.delayMs - 100;
    expect(until).toBeGreaterThan(from);
    const inBlock = admissions.filter((a) => a.at > from && a.at < until);
    expect(inBlock).toEqual([]);
    // Each replica was held: every replica admitted calls after the block.
    for (const replica of [0, 1, 2]) expect(admissions.some((a) => a.replica === replica && a.at >= until)).toBe(true);
    // Few 429s: in each provider window, at most the calls already in flight when it filled (the
    // 3 replicas' permits), not calls retrying into the same wall. A 429 names its window's end
    // (its time + delay); windows end WINDOW_MS apart, so ends over 1 s apart are other windows.
    const callsAtOnce = 3 * 4;
    const ends = rateLimits.map((r) => r.at + r.delayMs).sort((a, b) => a - b);
    const perWindow: number[] = [];
    ends.forEach((end, i) => {
      if (i === 0 || end - ends[i - 1] > 1_000) perWindow.push(0);
      perWindow[perWindow.length - 1] += 1;
    });
    expect(Math.max(...perWindow), `429s per provider window: ${perWindow.join(', ')}`).toBeLessThanOrEqual(callsAtOnce);
  }, 60_000);
});
