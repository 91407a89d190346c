// QuotaStepDown on a static TokenBudget on fake time: which 429s are the caller's own,
// examples, and a fast-check property over sequences of 429s. The live half (Redis, a real
// ADK tree against the mock provider) is quota-step-down-live-budget.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuotaStepDown, TokenBudget } from '../../instrumentation/index.ts';
import { quotaNamedBy } from '../../instrumentation/rate-limit-errors.ts';
import { ManualClock } from '../../instrumentation/testing.ts';

const WINDOW = 60_000;
const CEILING = 100_000;

function setup() {
  const clock = new ManualClock();
  const budget = new TokenBudget(CEILING, { clock, windowMs: WINDOW });
  const step = new QuotaStepDown({ budget, clock });
  /** Put the window at `tokens` (adds what is missing). */
  const fill = (tokens: number) => budget.charge(Math.max(0, tokens - (budget.windowTokens ?? 0)));
  return { clock, budget, step, fill };
}

function googleError(details: object[]): Error {
  return Object.assign(new Error(JSON.stringify({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'x', details } })), { status: 429 });
}

describe('quotaNamedBy: whose 429 it is', () => {
  it('a per-minute token or request quota is the caller\'s own; a daily or concurrent one is another kind; none named is shared capacity', () => {
    const violation = (quotaId: string) => googleError([{ '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaId, quotaMetric: 'm' }] }]);
    expect(quotaNamedBy(violation('GenerateContentPaidTierInputTokensPerModelPerMinute'))).toBe('minute');
    expect(quotaNamedBy(violation('GenerateRequestsPerMinutePerProjectPerModel'))).toBe('minute');
    expect(quotaNamedBy(violation('GenerateRequestsPerDayPerProjectPerModel'))).toBe('other');
    expect(quotaNamedBy(violation('ConcurrentGenerateRequestsPerProjectPerModel'))).toBe('other');
    expect(quotaNamedBy(googleError([]))).toBe('unnamed');
    expect(quotaNamedBy(new Error('Resource exhausted. Please try again later.'))).toBe('unnamed');
    const openai = (message: string) => Object.assign(new Error(message), { status: 429, headers: {} });
    expect(quotaNamedBy(openai('Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000'))).toBe('minute');
    expect(quotaNamedBy(openai('Rate limit reached on requests per day (RPD)'))).toBe('other');
  });
});

describe('QuotaStepDown on a static TokenBudget (fake time)', () => {
  it('a 429 of its own cuts to just below what the provider counted (the window scaled to the part its retry delay says had passed), at most to half; holds; climbs back to the ceiling', async () => {
    const { clock, budget, step, fill } = setup();
    fill(80_000);
    expect(step.onRateLimited({ quota: 'minute', retryAfterMs: 15_000 })).toBe('cut');
    expect(budget.windowLimit).toBe(57_000); // 95 % of 80,000 × (1 - 15/60)
    // In flight when the wall came: same 429, no second cut before the retry delay.
    expect(step.onRateLimited({ quota: 'minute', retryAfterMs: 14_000 })).toBe('held');
    expect(budget.windowLimit).toBe(57_000);
    await clock.advance(WINDOW + 1_000);
    fill(20_000); // a window far under the limit: the quota itself moved, a cut halves at most
    expect(step.onRateLimited({ quota: 'minute', retryAfterMs: 5_000 })).toBe('cut');
    expect(budget.windowLimit).toBe(28_500);
    await clock.advance(2 * WINDOW - 1);
    expect(budget.windowLimit).toBe(28_500); // held two windows after the last 429
    await clock.advance(1);
    expect(budget.windowLimit).toBe(33_500); // then 5 % of the ceiling per tenth of a window
    await clock.advance(WINDOW * 2);
    expect(budget.windowLimit).toBe(CEILING);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a 429 naming no retry delay, or one of a window or more, cuts to the whole window counted', () => {
    const { budget, step, fill } = setup();
    fill(80_000);
    expect(step.onRateLimited({ quota: 'minute', retryAfterMs: 90_000 })).toBe('cut');
    expect(budget.windowLimit).toBe(76_000);
  });

  it('shared capacity: a 429 naming no quota with the window well under the limit, or another kind of quota, leaves the limit alone', () => {
    const { budget, step, fill } = setup();
    fill(50_000);
    expect(step.onRateLimited({ quota: 'unnamed' })).toBe('shared');
    expect(step.onRateLimited({ quota: 'other', retryAfterMs: 1_000 })).toBe('shared');
    expect(budget.windowLimit).toBe(CEILING);
    fill(95_000); // no quota named, but the window is at the limit: its own
    expect(step.onRateLimited({ quota: 'unnamed' })).toBe('cut');
    expect(budget.windowLimit).toBe(90_250);
  });

  it('never below the floor, whatever the 429s', async () => {
    const { clock, budget, step } = setup();
    for (let i = 0; i < 10; i++) {
      step.onRateLimited({ quota: 'minute', retryAfterMs: 0 });
      await clock.advance(WINDOW);
    }
    expect(budget.windowLimit).toBe(CEILING * 0.25);
    expect(() => new QuotaStepDown({ budget, maxCut: 0 })).toThrow(/maxCut/);
    expect(() => new QuotaStepDown({ budget, stepMs: 0 })).toThrow(/stepMs/);
  });

  it('property: for any sequence of 429s the limit stays within its bounds, each cut keeps half, shared capacity never cuts, and it recovers to the ceiling', async () => {
    const event = fc.record({
      gapMs: fc.integer({ min: 0, max: 90_000 }),
      fill: fc.double({ min: 0, max: 1.2, noNaN: true }),
      quota: fc.constantFrom('minute', 'unnamed', 'other') as fc.Arbitrary<'minute' | 'unnamed' | 'other'>,
      retryAfterMs: fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 40 }), async (events) => {
        const { clock, budget, step, fill } = setup();
        for (const e of events) {
          await clock.advance(e.gapMs);
          expect(budget.windowLimit).toBe(step.limitAt(clock.now())); // the timer applied it
          const before = budget.windowLimit;
          fill(e.fill * before);
          const counted = budget.windowTokens ?? 0;
          const verdict = step.onRateLimited({ quota: e.quota, retryAfterMs: e.retryAfterMs });
          const after = budget.windowLimit;
          expect(after).toBeGreaterThanOrEqual(step.floor);
          expect(after).toBeLessThanOrEqual(before);
          expect(after).toBeGreaterThanOrEqual(before * step.maxCut - 1e-9);
          const shared = e.quota === 'other' || (e.quota === 'unnamed' && counted < step.nearFraction * before);
          if (shared) expect(verdict).toBe('shared');
          if (verdict !== 'cut') expect(after).toBe(before);
        }
        // The 429s stop: back to the ceiling after the hold and the climb, and nothing left to do.
        await clock.advance(step.holdMs + Math.ceil(1 / step.step) * step.stepMs + 1);
        expect(budget.windowLimit).toBe(CEILING);
        expect(clock.pendingTimers).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});

