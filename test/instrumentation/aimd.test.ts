// AimdLimit on the rate that binds: the permits and a budget's tokens per window, on fake time.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Budget } from '../../instrumentation/budget.ts';
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
    aimd.onSample(ok); // a clean window in which the budget bound: one step up (1 % of the capacity)
    expect(budget.windowLimit).toBe(8_100);
  });

  it('recovers additively when the 429s stop: steps grow per clean window, stop one step short of the last ceiling, hold, then probe above it', async () => {
    const { clock, budget, aimd, bind } = setup();
    aimd.onSample(limited); // ceiling 10,000, now 8,000
    const seen: number[] = [];
    for (let w = 0; w < 7; w++) {
      bind();
      aimd.onSample(ok); // a call ends while the budget binds
      await clock.advance(WINDOW);
      aimd.onSample(ok); // the next window's first call closes this one
      seen.push(budget.windowLimit);
    }
    // The window after the decrease confirms it; then +100, +600, then 9,900 (one step short of
    // 10,000), held a window, then +100 (the probe), +600 ... capped at the capacity.
    expect(seen).toEqual([8_000, 8_100, 8_700, 9_900, 9_900, 10_000, 10_000]);
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
  });

  it('property: permits and tokens per window stay within their bounds, and each decreases at most once per window', async () => {
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
            const durationMs = step.slow ? step.durationMs : Math.min(step.durationMs, 30_000);
            const signals: (() => number)[] = [];
            // A 429 heard when it is answered, then its call's end; or only the call's end.
            if (step.rateLimited && step.heardAt429) signals.push(() => aimd.onRateLimited());
            signals.push(() => aimd.onSample({ durationMs, rateLimited: step.rateLimited, failed: step.failed, inFlight: step.inFlight }));
            for (const signal of signals) {
              const [tokensBefore, permitsBefore] = [budget.windowLimit, aimd.limit];
              const permits = signal();
              const now = clock.now();
              expect(permits).toBeGreaterThanOrEqual(2);
              expect(permits).toBeLessThanOrEqual(20);
              expect(budget.windowLimit).toBeGreaterThanOrEqual(1_500);
              expect(budget.windowLimit).toBeLessThanOrEqual(10_000);
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
