// TokenBudget's rolling-minute guard, on fake time: never more than tokensPerMinute admitted
// in any 60 s window (plus reconciled debt), where the pure bucket admits up to 2x while a
// full bucket drains. Includes the worked example's shape that overran a per-minute quota.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { BudgetRequestTooLarge, DeadlineExceeded } from '../../instrumentation/errors.ts';
import { type BudgetTicket, limiterMetrics, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';

/** The ticket of a tryReserve that must have admitted. */
function admittedNow(ticket: BudgetTicket | undefined): BudgetTicket {
  expect(ticket).toBeDefined();
  return ticket as BudgetTicket;
}

interface Admission {
  readonly at: number;
  readonly reserved: number;
  /** What the call used; the reservation until reconciled. */
  actual: number;
}

/** The largest sum of `value` over admissions in any window [t, t + 60 s) starting at an admission. */
function maxPerMinute(admissions: readonly Admission[], value: (a: Admission) => number): number {
  const sorted = [...admissions].sort((a, b) => a.at - b.at);
  let max = 0;
  let sum = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end].at < sorted[start].at + 60_000) sum += value(sorted[end++]);
    max = Math.max(max, sum);
    sum -= value(sorted[start]);
  }
  return max;
}

describe('TokenBudget rolling-minute guard', () => {
  it('is on by default and refuses the second minute of a full bucket that the pure bucket admits', async () => {
    const clock = new ManualClock();
    const guarded = new TokenBudget(1_000, { clock });
    const bucket = new TokenBudget(1_000, { clock, rollingWindow: false });
    expect(guarded.rollingWindow).toBe(true);
    expect(bucket.rollingWindow).toBe(false);
    expect(guarded.tryReserve(1_000)).toBeDefined();
    expect(bucket.tryReserve(1_000)).toBeDefined();
    await clock.advance(30_000); // both buckets refilled 500
    expect(bucket.tryReserve(500)).toBeDefined(); // 1,500 in one minute: the 2x burst
    expect(guarded.tryReserve(500)).toBeUndefined();
    expect(guarded.available).toBe(500);
    expect(guarded.windowTokens).toBe(1_000);
    expect(bucket.windowTokens).toBeUndefined();
  });

  it('a blocked head waits for max(bucket refill, the old admissions leaving the window)', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock }); // 1/60 token per ms
    expect(budget.tryReserve(1_000)).toBeDefined(); // slot [0, 100 ms): counted until 60.1 s
    await clock.advance(30_000);
    let admittedAt: number | undefined;
    const ticket = budget.reserve(600).then((t) => {
      admittedAt = clock.now();
      return t;
    });
    await clock.advance(6_000); // the bucket has 600 at 36 s: the window still holds 1,000
    expect(admittedAt).toBeUndefined();
    await clock.advance(60_099 - 36_000);
    expect(admittedAt).toBeUndefined();
    await clock.advance(1);
    expect(admittedAt).toBe(60_100);
    expect((await ticket).tokens).toBe(600);
    expect(budget.windowTokens).toBe(600);
  });

  it('reconcile with the ticket counts the actual usage in place of the estimate, debt included', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock });
    const first = admittedNow(budget.tryReserve(1_000));
    budget.reconcile(first, 400);
    expect(budget.windowTokens).toBe(400);
    await clock.advance(36_000); // bucket back at capacity
    const ticket = admittedNow(budget.tryReserve(600));
    expect(budget.tryReserve(1)).toBeUndefined(); // window full: 400 + 600
    budget.reconcile(ticket, 900); // underestimate: the debt is counted too
    expect(budget.windowTokens).toBe(1_300);
    await clock.advance(24_100); // the first admission (slot [0, 100)) leaves
    expect(budget.windowTokens).toBe(900);
    await clock.advance(36_000);
    expect(budget.windowTokens).toBe(0);
  });

  it('a give-back settled late is taken off its own entry, not counted as negative usage now', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(3_000, { clock }); // 0.05 token per ms
    const ticket = admittedNow(budget.tryReserve(1_700));
    await clock.advance(59_000);
    budget.reconcile(ticket, 0); // a long call that used nothing
    await clock.advance(1_100); // its entry left the window
    expect(budget.windowTokens).toBe(0);
    expect(budget.tryReserve(3_000)).toBeDefined();
    await clock.advance(58_900); // the bucket has 2,945 again; the window holds 3,000
    // Crediting the give-back at 59 s would leave -1,700 in the window until 119.1 s and let
    // this through: 4,700 in one minute.
    expect(budget.tryReserve(1_700)).toBeUndefined();
  });

  it('without a ticket a debt is still counted (now) and a give-back is not (its entry is unknown)', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock });
    const old = admittedNow(budget.tryReserve(500));
    budget.reconcile({ tokens: 500 }, 700);
    expect(budget.windowTokens).toBe(700);
    budget.reconcile({ tokens: 500 }, 0);
    expect(budget.windowTokens).toBe(700);
    // A ticket whose slot left the window: only the debt, counted now.
    await clock.advance(61_000);
    budget.reconcile(old, 550);
    budget.reconcile(old, 0);
    expect(budget.windowTokens).toBe(50);
  });

  it('keeps FIFO while the window blocks, and a request above tokensPerMinute fails at once', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock });
    expect(budget.tryReserve(900)).toBeDefined();
    await clock.advance(59_000); // bucket full again, window still holds 900
    const order: string[] = [];
    const large = budget.reserve(800).then(() => order.push('large'));
    const small = budget.reserve(50).then(() => order.push('small')); // would fit the window now
    await clock.advance(0);
    expect(order).toEqual([]);
    expect(budget.tryReserve(10)).toBeUndefined(); // nobody jumps the queue
    await clock.advance(1_100);
    await Promise.all([large, small]);
    expect(order).toEqual(['large', 'small']);
    await expect(budget.reserve(1_001)).rejects.toBeInstanceOf(BudgetRequestTooLarge);
    expect(() => budget.tryReserve(1_001)).toThrow(BudgetRequestTooLarge);
  });

  it('a waiter blocked by the window gives up at its deadline and the next one is served', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1_000, { clock });
    expect(budget.tryReserve(1_000)).toBeDefined();
    await clock.advance(59_000);
    const big = budget.reserve(700, { deadline: 60_000 }).catch((e: unknown) => e);
    const small = budget.reserve(10);
    await clock.advance(1_000);
    expect(await big).toBeInstanceOf(DeadlineExceeded);
    await clock.advance(100);
    await small;
    expect(budget.waiting).toBe(0);
  });

  it('memory stays bounded: hours of admissions leave an exact, empty window', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(6_000_000, { clock });
    for (let i = 0; i < 20_000; i++) {
      await clock.advance(7);
      if (!budget.tryReserve(1 + (i % 13))) throw new Error(`refused at ${clock.now()}`);
    }
    expect(budget.windowTokens).toBeGreaterThan(0);
    await clock.advance(60_100);
    expect(budget.windowTokens).toBe(0);
  });

  it('property: over any 60 s window, tokens used by the calls admitted <= tokensPerMinute + their debt', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            // Mostly dense (the window binds), sometimes a pause (calls settle after their slot left).
            gapMs: fc.oneof(fc.integer({ min: 0, max: 2_500 }), fc.integer({ min: 0, max: 40_000 })),
            tokens: fc.constantFrom(100, 250, 400, 1_000, 1_700),
            holdMs: fc.integer({ min: 0, max: 90_000 }), // some settle after their slot left
            actualFactor: fc.double({ min: 0, max: 2, noNaN: true }),
            withTicket: fc.boolean(),
            maxWaitMs: fc.option(fc.integer({ min: 0, max: 30_000 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 60 },
        ),
        async (ops) => {
          const clock = new ManualClock();
          const tpm = 3_000;
          const budget = new TokenBudget(tpm, { clock });
          const admitted: Admission[] = [];
          const pending: Promise<unknown>[] = [];
          for (const op of ops) {
            await clock.advance(op.gapMs);
            const deadline = op.maxWaitMs === undefined ? undefined : clock.now() + op.maxWaitMs;
            pending.push(
              budget.reserve(op.tokens, { deadline }).then(
                (ticket) => {
                  const admission: Admission = { at: clock.now(), reserved: op.tokens, actual: op.tokens };
                  admitted.push(admission);
                  const actual = Math.round(op.tokens * op.actualFactor);
                  clock.setTimeout(() => {
                    admission.actual = actual;
                    budget.reconcile(op.withTicket ? ticket : { tokens: op.tokens }, actual);
                  }, op.holdMs);
                },
                () => {},
              ),
            );
          }
          while (clock.pendingTimers > 0) await clock.advance(60_000);
          await Promise.all(pending);
          for (const start of admitted.map((a) => a.at)) {
            const inWindow = admitted.filter((a) => a.at >= start && a.at < start + 60_000);
            const used = inWindow.reduce((s, a) => s + a.actual, 0);
            const debt = inWindow.reduce((s, a) => s + Math.max(0, a.actual - a.reserved), 0);
            expect(used).toBeLessThanOrEqual(tpm + debt + 1e-6);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  /**
   * The worked example's shape: demand 1.16 M tokens/min (2,900-token calls every 150 ms),
   * the fleet's 900 k budget, calls of 8 s, waits bounded at 20 s, for 5 minutes. The pure
   * bucket starts full and admits about 1.16 M in the first minutes: a provider quota of
   * 1 M per minute window answers 429s although the budget is 90 % of it.
   */
  async function workedExample(rollingWindow: boolean): Promise<{ maxMinute: number; admitted: number; timedOut: number }> {
    const clock = new ManualClock();
    const budget = new TokenBudget(900_000, { clock, rollingWindow });
    const admitted: Admission[] = [];
    let timedOut = 0;
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 2_000; i++) {
      await clock.advance(150);
      calls.push(
        budget.reserve(2_900, { deadline: clock.now() + 20_000 }).then(
          (ticket) => {
            admitted.push({ at: clock.now(), reserved: 2_900, actual: 2_900 });
            clock.setTimeout(() => budget.reconcile(ticket, 2_900), 8_000);
          },
          () => {
            timedOut++;
          },
        ),
      );
    }
    await clock.advance(30_000);
    await Promise.all(calls);
    return { maxMinute: maxPerMinute(admitted, (a) => a.reserved), admitted: admitted.length, timedOut };
  }

  it('worked example: <= 900 k admitted in every rolling minute (the pure bucket admitted > 1 M)', async () => {
    const guarded = await workedExample(true);
    expect(guarded.maxMinute).toBeLessThanOrEqual(900_000);
    expect(guarded.maxMinute).toBeGreaterThan(0.95 * 900_000); // the budget is used, not wasted
    expect(guarded.timedOut).toBeGreaterThan(0); // demand above the budget queues, then times out
    const bucket = await workedExample(false);
    expect(bucket.maxMinute).toBeGreaterThan(1_000_000); // the overrun seen in the real run
    expect(bucket.admitted).toBeGreaterThan(guarded.admitted);
  });
});

describe('RateLimitedLlm with the rolling-minute guard', () => {
  const wrappers: RateLimitedLlm[] = [];
  afterEach(() => {
    for (const w of wrappers.splice(0)) w.close();
  });

  it('settles each call in its own window entry and reports llm_limiter_budget_window_tokens', async () => {
    const registry = new Registry();
    const budget = new TokenBudget(60_000, { countedTokens: 'total' });
    const delegate = new FakeLlm(async function* () {
      yield textResponse('done', 40);
    });
    const llm = new RateLimitedLlm({ delegate, name: 'test', maxConcurrent: 2, budget, estimatedTokens: 100, registry });
    wrappers.push(llm);
    await consume(llm.generateContentAsync(request('a')));
    await consume(llm.generateContentAsync(request('b')));
    // Estimates of 100 each, settled at 40 each: the window counts 80, not 200 nor 140.
    expect(budget.windowTokens).toBe(80);
    expect(await metricValue(registry, limiterMetrics.budgetWindow.name, { limiter: 'test' })).toBe(80);
  });

  it('a call that waited for the window gets its ticket too', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const budget = new TokenBudget(1_000, { clock, countedTokens: 'total' });
    const delegate = new FakeLlm(async function* () {
      yield textResponse('done', 100);
    });
    const llm = new RateLimitedLlm({ delegate, name: 'test', maxConcurrent: 1, budget, estimatedTokens: 600, maxWaitMs: 120_000, registry, clock });
    wrappers.push(llm);
    expect(budget.tryReserve(900)).toBeDefined(); // window 900 until 60.1 s
    let done = false;
    const call = consume(llm.generateContentAsync(request('a'))).then(() => {
      done = true;
    });
    await clock.advance(60_099);
    expect(done).toBe(false);
    await clock.advance(1);
    await call;
    // Admitted at 60.1 s for 600, settled at 100 through its ticket (without it: 600).
    expect(budget.windowTokens).toBe(100);
    expect(await metricValue(registry, limiterMetrics.budgetWindow.name, { limiter: 'test' })).toBe(100);
  });
});
