// Input-counted budgets (Gemini's TPM counts input tokens): the reservation is the request's
// input, the call is reconciled to the provider's promptTokenCount, and output tokens never
// consume the budget. Also the quota window (windowMs) of both the bucket and its guard.
import type { LlmResponse } from '@google/adk';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../instrumentation/counted-tokens.ts';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { limiterMetrics, RateLimitedLlm, TokenBudget, UsageEstimator } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest, ManualClock } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';

function usageResponse(prompt: number, output: number): LlmResponse {
  return {
    content: { role: 'model', parts: [{ text: 'ok' }] },
    usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: output, totalTokenCount: prompt + output },
  };
}

const wrappers: RateLimitedLlm[] = [];
afterEach(() => {
  for (const w of wrappers.splice(0)) w.close();
});

describe('counted tokens', () => {
  it('counts input, total or a function of the usage; unreported input is unknown', () => {
    const usage = { total: 130, input: 100, output: 30 };
    expect(countTokens('input', usage)).toBe(100);
    expect(countTokens('total', usage)).toBe(130);
    expect(countTokens((u) => u.total + (u.output ?? 0), usage)).toBe(160);
    expect(countTokens('input', { total: 130 })).toBeUndefined();
    expect(countTokens('total', undefined)).toBeUndefined();
    expect(() => countTokens(() => Number.NaN, usage)).toThrow(RangeError);
  });

  it('budgets count input by default and check countedTokens and windowMs', () => {
    expect(new TokenBudget(1000).countedTokens).toBe('input');
    expect(new TokenBudget(1000).windowMs).toBe(60_000);
    expect(() => new TokenBudget(1000, { windowMs: 999 })).toThrow(/windowMs/);
    expect(() => new TokenBudget(1000, { windowMs: 3_600_001 })).toThrow(/windowMs/);
    expect(() => new TokenBudget(1000, { windowMs: 1500.5 })).toThrow(/windowMs/);
    expect(() => new TokenBudget(1000, { countedTokens: 'output' as 'input' })).toThrow(/countedTokens/);
  });

  it('the wrapper refuses a countedTokens that differs from its budget', () => {
    const delegate = new FakeLlm(async function* () {});
    const budget = new TokenBudget(1000, { countedTokens: 'total' });
    expect(
      () => new RateLimitedLlm({ delegate, name: 't', maxConcurrent: 1, budget, countedTokens: 'input', registry: new Registry() }),
    ).toThrow(/countedTokens/);
  });

  it('input-counted: reserves the input alone, reconciles to promptTokenCount, output is never charged', async () => {
    const registry = new Registry();
    const clock = new ManualClock();
    const budget = new TokenBudget(100_000, { clock });
    const delegate = new FakeLlm(async function* () {
      yield usageResponse(1_300, 900);
    });
    const llm = new RateLimitedLlm({ delegate, name: 't', maxConcurrent: 1, budget, registry, clock });
    wrappers.push(llm);
    const request = fakeRequest('reviewer', 'x'.repeat(4_800)); // 1,200 tokens by the counting rule
    expect(estimateInputTokens(request)).toBe(1_200);
    await consume(llm.generateContentAsync(request));
    const labels = { limiter: 't', agent: 'reviewer' };
    expect(await metricValue(registry, limiterMetrics.tokensReserved.name, labels)).toBe(1_200);
    expect(await metricValue(registry, limiterMetrics.tokensActual.name, labels)).toBe(1_300);
    expect(budget.available).toBe(100_000 - 1_300);
    expect(budget.windowTokens).toBe(1_300);
    // The estimator learned the provider's count beyond the rule: the next reservation is the prompt count.
    await consume(llm.generateContentAsync(request));
    expect(await metricValue(registry, limiterMetrics.tokensReserved.name, labels)).toBe(1_200 + 1_300);
    expect(budget.available).toBe(100_000 - 2_600);
  });

  it('input-counted estimator: no output before or after usage is seen', () => {
    const estimator = new UsageEstimator({ initialOutputTokens: 800 });
    const request = fakeRequest('a', 'x'.repeat(400));
    expect(estimator.estimate(request, 'a')).toBe(100);
    estimator.observe(request, 'a', 100); // promptTokenCount equal to the rule
    expect(estimator.estimate(request, 'a')).toBe(100);
    expect(new UsageEstimator({ countedTokens: 'total', initialOutputTokens: 800 }).estimate(request, 'a')).toBe(900);
  });

  it('property: input-counted, the budget is charged exactly the prompt tokens, never the output', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ chars: fc.integer({ min: 0, max: 2_000 }), extra: fc.integer({ min: 0, max: 50 }), output: fc.integer({ min: 0, max: 5_000 }) }), {
          minLength: 1,
          maxLength: 20,
        }),
        async (calls) => {
          const clock = new ManualClock(); // frozen: no refill, so the level shows every charge
          const registry = new Registry();
          const budget = new TokenBudget(1_000_000, { clock });
          const delegate = new FakeLlm(async function* (call) {
            const spec = calls[call.index];
            yield usageResponse(estimateInputTokens(call.request) + spec.extra, spec.output);
          });
          const llm = new RateLimitedLlm({ delegate, name: 'p', maxConcurrent: 4, budget, registry, clock });
          try {
            let prompts = 0;
            for (const spec of calls) {
              const request = fakeRequest('agent', 'y'.repeat(spec.chars));
              prompts += estimateInputTokens(request) + spec.extra;
              const { error } = await consume(llm.generateContentAsync(request));
              expect(error).toBeUndefined();
            }
            expect(budget.available).toBeCloseTo(1_000_000 - prompts, 6);
            expect(budget.windowTokens).toBeCloseTo(prompts, 6);
            expect(await metricValue(registry, limiterMetrics.tokensActual.name, { limiter: 'p', agent: 'agent' })).toBe(prompts);
          } finally {
            llm.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('windowMs: the bucket refills and the guard forgets one window at a time', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock, windowMs: 6_000 });
    expect(budget.tryReserve(1_000)).toBeDefined();
    await clock.advance(3_000); // half a window: half the bucket back, but the window is full
    expect(budget.available).toBeCloseTo(500, 6);
    expect(budget.tryReserve(400)).toBeUndefined();
    await clock.advance(3_010); // the first admission's slot has left the 6 s window
    expect(budget.windowTokens).toBe(0);
    expect(budget.tryReserve(1_000)).toBeDefined();
  });

  it('property: with any windowMs, no window of that length admits more than the budget', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000, max: 120_000 }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 5_000 }), tokens: fc.integer({ min: 1, max: 400 }) }), { minLength: 1, maxLength: 60 }),
        async (windowMs, steps) => {
          const clock = new ManualClock();
          const budget = new TokenBudget(1_000, { clock, windowMs });
          const admitted: { at: number; tokens: number }[] = [];
          for (const step of steps) {
            await clock.advance(step.gap);
            if (budget.tryReserve(step.tokens)) admitted.push({ at: clock.now(), tokens: step.tokens });
          }
          for (const first of admitted) {
            const inWindow = admitted.filter((a) => a.at >= first.at && a.at < first.at + windowMs).reduce((s, a) => s + a.tokens, 0);
            expect(inWindow).toBeLessThanOrEqual(1_000 + 1e-6);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
