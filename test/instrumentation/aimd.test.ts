// AimdLimit on the rate that binds: the permits and a budget's tokens per window, on fake time.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Budget } from '../../instrumentation/budget/budget.ts';
import { AimdLimit, TokenBudget } from '../../instrumentation/index.ts';
import { ManualClock } from '../../instrumentation/testing.ts';

const WINDOW = 60_000;
const ok = { durationMs: 100, rateLimited: false, failed: false, inFlight: 10 };
const limited = { durationMs: 100, rateLimited: true, failed: false, inFlight: 10 };

function setup(options: { capacity?: number; minTokens?: number } = {}) {
  const clock = new ManualClock();
  const budget = new TokenBudget(options.capacity ?? 10_000, { clock, windowMs: WINDOW });
  const aimd = new AimdLimit({ initial: 10, min: 2, max: 20, budget, clock, minTokens: options.minTokens });
  /** Fill the budget's window: the limit binds. */
  const bind = () => budget.charge(Math.max(0, budget.windowLimit - (budget.windowTokens ?? 0)));
  return { clock, budget, aimd, bind };
}

describe('AimdLimit on a budget: tokens per window', () => {
  it('a 429 lowers the tokens per window and the permits once per window; a 429 of a call admitted before that holds back the increase only', async () => {
    const { clock, budget, aimd, bind } = setup();
    aimd.onSample(limited);
    expect(budget.windowLimit).toBe(8_000);
    expect(aimd.limit).toBe(9);
    aimd.onSample(limited); // same window: no second decrease
    expect(budget.windowLimit).toBe(8_000);
    await clock.advance(WINDOW);
    bind();
    // A call admitted 70 s ago (before the decrease) answers 429 now: old news about the old limit.
    aimd.onSample({ ...limited, durationMs: 70_000 });
    expect(budget.windowLimit).toBe(8_000);
    await clock.advance(WINDOW);
    bind();
    aimd.onSample(ok); // closes the window that saw the stale 429: no increase
    expect(budget.windowLimit).toBe(8_000);
    await clock.advance(WINDOW);
    bind();
    aimd.onSample(ok); // a clean window in which the budget bound: back to one step (2 % of the capacity) short of the ceiling
    expect(budget.windowLimit).toBe(9_800);
  });

  it('recovers when the 429s stop: back at once to one step short of the ceiling, no probe above it while it is trusted, then steps that grow per clean window', async () => {
    const { clock, budget, aimd, bind } = setup({ capacity: 20_000 });
    budget.setWindowLimit(10_000);
    aimd.onSample(limited); // no retry delay: 0.8 x the limit in use; ceiling 10,000 for 9 windows
    expect(aimd.tokenCeiling).toBe(10_000);
    const seen: number[] = [];
    for (let w = 0; w < 13; w++) {
      bind();
      aimd.onSample(ok); // a call ends while the budget binds
      await clock.advance(WINDOW);
      aimd.onSample(ok); // the next window's first call closes this one
      seen.push(budget.windowLimit);
    }
    // The window after the decrease confirms it; then 9,600 (10,000 less one step of 400) until
    // the ceiling is 9 windows old; then +400, +6,400 (x16), capped at the capacity.
    expect(seen).toEqual([8_000, 9_600, 9_600, 9_600, 9_600, 9_600, 9_600, 9_600, 9_600, 10_000, 16_400, 20_000, 20_000]);
    expect(aimd.tokenCeiling).toBeUndefined();
  });

  it('a 429 naming its retry delay cuts to just below what this replica put into the provider window that filled; a later 429 near the quota does not extend the trust', async () => {
    const { clock, budget, aimd } = setup();
    // 2,000 tokens before the provider's window began, 3,000 in it; the 429 comes 45 s into a
    // 60 s window (retry in 15 s): this replica's share of the full window is 3,000.
    aimd.onAdmitted(2_000);
    budget.charge(2_000);
    await clock.advance(20_000);
    for (let i = 0; i < 3; i++) {
      aimd.onAdmitted(1_000);
      budget.charge(1_000);
      await clock.advance(10_000);
    }
    await clock.advance(5_000);
    aimd.onRateLimited(15_000);
    expect(aimd.tokenCeiling).toBe(5_000); // never below half the limit in one cut
    expect(budget.windowLimit).toBe(5_000);
    // Next window, a 429 late in the window (retry in 6 s) with 4,500 admitted since it began.
    await clock.advance(WINDOW);
    for (let i = 0; i < 9; i++) {
      aimd.onAdmitted(500);
      await clock.advance(5_000);
    }
    aimd.onRateLimited(6_000);
    expect(aimd.tokenCeiling).toBe(4_500);
    expect(budget.windowLimit).toBe(4_275); // 5 % (shareMargin) below the share
    // Next window, a 429 in the last 5 % of the provider's window while this replica sent
    // little: the fleet was at the quota, which did not drop; the ceiling follows, but its
    // trust still ends 9 windows after the first 429 (at 55 s + 540 s).
    await clock.advance(WINDOW);
    aimd.onAdmitted(1_000);
    await clock.advance(5_000);
    aimd.onRateLimited(3_000);
    expect(budget.windowLimit).toBe(2_137.5); // no lower than half the limit in one cut
    expect(aimd.tokenCeiling).toBe(2_137.5);
    await clock.advance(595_000 - clock.now());
    expect(aimd.tokenCeiling).toBe(2_137.5);
    await clock.advance(1);
    expect(aimd.tokenCeiling).toBeUndefined();
  });

  it('hears a 429 the moment it is answered and cuts from the rate in use; the call ending later is not a second signal', async () => {
    const { clock, budget, aimd } = setup();
    budget.charge(6_000); // this replica used 6,000 of its 10,000 in the window
    expect(aimd.onRateLimited()).toBe(9);
    expect(budget.windowLimit).toBe(4_800); // 0.8 x 6,000
    await clock.advance(WINDOW + 1);
    aimd.onSample({ ...limited, durationMs: 10 }); // the same 429's call ends, retries done
    expect(budget.windowLimit).toBe(4_800);
    expect(aimd.limit).toBe(9);
  });

  it('does not grow while the budget does not bind (an idle limiter learns nothing)', async () => {
    const { clock, budget, aimd } = setup();
    aimd.onSample(limited);
    for (let w = 0; w < 5; w++) {
      await clock.advance(WINDOW);
      aimd.onSample(ok);
    }
    expect(budget.windowLimit).toBe(8_000);
  });

  it('refuses a budget it cannot move, and bad bounds, naming the field', () => {
    const fixed = { capacity: 100, available: 100, waiting: 0 } as unknown as Budget;
    expect(() => new AimdLimit({ initial: 1, max: 2, budget: fixed })).toThrow(/setWindowLimit/);
    const budget = new TokenBudget(1_000);
    expect(() => new AimdLimit({ initial: 1, max: 2, budget, minTokens: 2_000 })).toThrow(/minTokens/);
    expect(() => new AimdLimit({ initial: 1, max: 2, budget, tokenBackoffRatio: 1 })).toThrow(/tokenBackoffRatio/);
    expect(() => new AimdLimit({ initial: 1, max: 2, budget, tokenStep: 0 })).toThrow(/tokenStep/);
    expect(() => new AimdLimit({ initial: 1, max: 2, budget, tokenGrowth: 100 })).toThrow(/tokenGrowth/);
    expect(() => new AimdLimit({ initial: 1, max: 2, budget, shareMargin: 0.5 })).toThrow(/shareMargin/);
  });

  it('property: permits and tokens per window stay within their bounds, each decreases at most once per window, and the window limit never exceeds a trusted ceiling', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 40_000 }),
            rateLimited: fc.boolean(),
            slow: fc.boolean(),
            failed: fc.boolean(),
            inFlight: fc.nat(30),
            durationMs: fc.integer({ min: 0, max: 90_000 }),
            bind: fc.boolean(),
            heardAt429: fc.boolean(),
            retryAfterMs: fc.option(fc.integer({ min: 0, max: 90_000 })),
            admitted: fc.nat(3_000),
          }),
          { maxLength: 80 },
        ),
        async (steps) => {
          const clock = new ManualClock();
          const budget = new TokenBudget(10_000, { clock, windowMs: WINDOW });
          const aimd = new AimdLimit({ initial: 10, min: 2, max: 20, budget, clock, minTokens: 1_500, latencyThresholdMs: 30_000 });
          let tokenDecreasedAt = Number.NEGATIVE_INFINITY;
          let permitDecreasedAt = Number.NEGATIVE_INFINITY;
          for (const step of steps) {
            await clock.advance(step.advanceMs);
            if (step.bind) budget.charge(Math.max(0, budget.windowLimit - (budget.windowTokens ?? 0)));
            aimd.onAdmitted(step.admitted);
            const durationMs = step.slow ? step.durationMs : Math.min(step.durationMs, 30_000);
            const signals: (() => number)[] = [];
            // A 429 heard when it is answered, then its call's end; or only the call's end.
            if (step.rateLimited && step.heardAt429) signals.push(() => aimd.onRateLimited(step.retryAfterMs ?? undefined));
            signals.push(() => aimd.onSample({ durationMs, rateLimited: step.rateLimited, failed: step.failed, inFlight: step.inFlight }));
            for (const signal of signals) {
              const [tokensBefore, permitsBefore] = [budget.windowLimit, aimd.limit];
              const permits = signal();
              const now = clock.now();
              expect(permits).toBeGreaterThanOrEqual(2);
              expect(permits).toBeLessThanOrEqual(20);
              expect(budget.windowLimit).toBeGreaterThanOrEqual(1_500);
              expect(budget.windowLimit).toBeLessThanOrEqual(10_000);
              const ceiling = aimd.tokenCeiling;
              if (ceiling !== undefined) expect(budget.windowLimit).toBeLessThanOrEqual(ceiling + 1e-9);
              if (budget.windowLimit < tokensBefore) {
                expect(now - tokenDecreasedAt).toBeGreaterThanOrEqual(WINDOW);
                tokenDecreasedAt = now;
              }
              if (permits < permitsBefore) {
                expect(now - permitDecreasedAt).toBeGreaterThanOrEqual(WINDOW);
                permitDecreasedAt = now;
              }
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
