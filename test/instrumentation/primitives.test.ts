// Unit tests of the limiter's building blocks, on fake time.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fullJitterDelayMs } from '../../instrumentation/backoff.ts';
import { BudgetRequestTooLarge, DeadlineExceeded } from '../../instrumentation/errors.ts';
import { estimateInputTokens } from '../../instrumentation/estimator.ts';
import { FairSemaphore, TokenBudget, UsageEstimator } from '../../instrumentation/index.ts';
import { RetryBudget } from '../../instrumentation/retry-budget.ts';
import { fakeRequest as request, ManualClock } from '../../instrumentation/testing.ts';

describe('FairSemaphore', () => {
  it('admits waiters in FIFO order and never beyond the limit', async () => {
    const sem = new FairSemaphore(1);
    const first = await sem.acquire();
    const order: number[] = [];
    const waits = [1, 2, 3].map((i) => sem.acquire().then((p) => { order.push(i); return p; }));
    expect(sem.waiting).toBe(3);
    expect(sem.tryAcquire()).toBeUndefined(); // no barging past waiters
    first.release();
    (await waits[0]).release();
    (await waits[1]).release();
    (await waits[2]).release();
    expect(order).toEqual([1, 2, 3]);
    expect(sem.inUse).toBe(0);
  });

  it('a waiter that times out or aborts leaves the queue without a permit', async () => {
    const clock = new ManualClock();
    const sem = new FairSemaphore(1, { clock });
    const held = await sem.acquire();
    const timedOut = sem.acquire({ deadline: 100 }).catch((e: unknown) => e);
    const controller = new AbortController();
    const aborted = sem.acquire({ signal: controller.signal });
    const patient = sem.acquire();
    controller.abort(new Error('bye'));
    await expect(aborted).rejects.toThrow('bye');
    await clock.advance(100);
    expect(await timedOut).toBeInstanceOf(DeadlineExceeded);
    expect(sem.waiting).toBe(1);
    held.release();
    const p = await patient;
    expect(sem.inUse).toBe(1);
    expect(p.release()).toBe(true);
    expect(p.release()).toBe(false); // idempotent
    expect(sem.inUse).toBe(0);
  });

  it('the limit can change at run time', async () => {
    const sem = new FairSemaphore(1);
    await sem.acquire();
    const second = sem.acquire();
    sem.setLimit(2);
    await second;
    expect(sem.inUse).toBe(2);
    sem.setLimit(1);
    expect(sem.limit).toBe(1);
    expect(sem.tryAcquire()).toBeUndefined();
    expect(() => sem.setLimit(0)).toThrow(/>= 1/);
  });
});

describe('TokenBudget', () => {
  it('refills continuously at exactly tokensPerMinute / 60,000 per ms, capped at capacity', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(60_000, { clock, initialLevel: 0 });
    await clock.advance(250);
    expect(budget.available).toBe(250);
    await clock.advance(120_000);
    expect(budget.available).toBe(60_000);
  });

  it('waits FIFO: a large reservation is not starved by small ones', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(6000, { clock, initialLevel: 0 }); // 0.1 token / ms
    const order: string[] = [];
    const large = budget.reserve(500).then(() => order.push('large'));
    const small = budget.reserve(10).then(() => order.push('small'));
    await clock.advance(4_999);
    expect(order).toEqual([]);
    await clock.advance(1);
    await large;
    expect(order).toEqual(['large']);
    await clock.advance(100);
    await small;
    expect(order).toEqual(['large', 'small']);
  });

  it('reconcile repays an underestimate (negative level) and never exceeds capacity', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(1000, { clock });
    budget.tryReserve(1000);
    budget.reconcile({ tokens: 1000 }, 1600);
    expect(budget.available).toBe(-600);
    expect(budget.tryReserve(1)).toBeUndefined();
    budget.reconcile({ tokens: 5000 }, 0);
    expect(budget.available).toBe(1000);
  });

  it('a request larger than the capacity fails at once', async () => {
    const budget = new TokenBudget(1000);
    await expect(budget.reserve(1001, { deadline: Number.POSITIVE_INFINITY })).rejects.toBeInstanceOf(BudgetRequestTooLarge);
  });

  it('a reservation gives up at its deadline and the next waiter is served', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(600, { clock, initialLevel: 0 }); // 0.01 / ms
    const big = budget.reserve(500, { deadline: 1000 }).catch((e: unknown) => e);
    const small = budget.reserve(5);
    await clock.advance(1000);
    expect(await big).toBeInstanceOf(DeadlineExceeded);
    await small;
    expect(budget.waiting).toBe(0);
  });

  // The pure bucket (rollingWindow: false): the 2x burst bound. The rolling-minute
  // guard's tighter bound is in token-budget-window.test.ts.
  it('property (rollingWindow: false): over any 60 s window, admitted tokens <= capacity + refill + tokens given back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            gapMs: fc.integer({ min: 0, max: 5_000 }),
            tokens: fc.integer({ min: 1, max: 1_000 }),
            holdMs: fc.integer({ min: 0, max: 20_000 }),
            actualFactor: fc.double({ min: 0, max: 2, noNaN: true }),
            maxWaitMs: fc.option(fc.integer({ min: 0, max: 30_000 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (ops) => {
          const clock = new ManualClock();
          const tpm = 3_000;
          const budget = new TokenBudget(tpm, { clock, rollingWindow: false });
          const admitted: { at: number; tokens: number }[] = [];
          const givenBack: { at: number; tokens: number }[] = [];
          const pending: Promise<void>[] = [];
          for (const op of ops) {
            await clock.advance(op.gapMs);
            const deadline = op.maxWaitMs === undefined ? undefined : clock.now() + op.maxWaitMs;
            pending.push(
              budget.reserve(op.tokens, { deadline }).then(
                () => {
                  admitted.push({ at: clock.now(), tokens: op.tokens });
                  const actual = Math.round(op.tokens * op.actualFactor);
                  clock.setTimeout(() => {
                    givenBack.push({ at: clock.now(), tokens: Math.max(0, op.tokens - actual) });
                    budget.reconcile({ tokens: op.tokens }, actual);
                  }, op.holdMs);
                },
                () => {},
              ),
            );
          }
          while (clock.pendingTimers > 0) await clock.advance(60_000);
          await Promise.all(pending);
          for (const start of admitted.map((a) => a.at)) {
            const end = start + 60_000;
            const inWindow = admitted.filter((a) => a.at >= start && a.at < end).reduce((s, a) => s + a.tokens, 0);
            const back = givenBack.filter((g) => g.at >= start && g.at < end).reduce((s, g) => s + g.tokens, 0);
            expect(inWindow).toBeLessThanOrEqual(tpm + tpm + back + 1e-6);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('backoff and retry budget', () => {
  it('full jitter draws from [0, min(cap, base * 2^attempt))', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const d = fullJitterDelayMs(attempt, { baseMs: 100, capMs: 5_000 }, () => r);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThan(Math.min(5_000, 100 * 2 ** attempt));
      }),
    );
  });

  it('allows at most max(minRetries, ratio * calls) retries per window, then recovers', async () => {
    const clock = new ManualClock();
    const budget = new RetryBudget({ ratio: 0.1, minRetries: 1, windowMs: 10_000, clock });
    for (let i = 0; i < 50; i++) budget.recordCall();
    let granted = 0;
    while (budget.tryRetry()) granted++;
    expect(granted).toBe(5);
    await clock.advance(10_000);
    expect(budget.tryRetry()).toBe(true); // window slid: the floor applies again
    expect(budget.tryRetry()).toBe(false);
  });
});

describe('options checked with zod, each problem naming its field', () => {
  it('RetryBudget and UsageEstimator refuse out-of-range numbers with a RangeError naming the field, and take their named defaults', () => {
    expect(() => new RetryBudget({ ratio: -0.1 })).toThrow(/^RetryBudget options: ratio: /);
    expect(() => new RetryBudget({ windowMs: 0 })).toThrow(/windowMs/);
    expect(() => new RetryBudget({ minRetries: Number.NaN })).toThrow(RangeError);
    expect(new RetryBudget()).toMatchObject({ ratio: 0.1, windowMs: 60_000, minRetries: 10 });
    expect(() => new UsageEstimator({ quantile: 0 })).toThrow(/^UsageEstimator options: quantile: /);
    expect(() => new UsageEstimator({ window: 0.5 })).toThrow(/window/);
    expect(() => new UsageEstimator({ countedTokens: 'total', initialOutputTokens: -1 })).toThrow(/initialOutputTokens/);
    expect(new UsageEstimator({ countedTokens: 'total' })).toMatchObject({ initialOutputTokens: 1000, quantile: 0.95, window: 100 });
  });
});

describe('estimator', () => {
  it('counts ceil(characters of text parts incl. systemInstruction / 4)', () => {
    const req = request('a', 'abcde'); // 5 chars
    req.config = { ...req.config, systemInstruction: { role: 'user', parts: [{ text: 'xyz' }, { text: 'q' }] } }; // 4 chars
    req.contents.push({ role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }, { text: 'abc' }] }); // 3 chars
    expect(estimateInputTokens(req)).toBe(Math.ceil(12 / 4));
    expect(estimateInputTokens({ contents: [], config: { systemInstruction: 'seven77' } })).toBe(2);
    expect(estimateInputTokens({ contents: [] })).toBe(0);
  });

  it('counting total tokens: learns a high quantile of output per agent, starting from the configured value, capped', () => {
    const est = new UsageEstimator({ countedTokens: 'total', initialOutputTokens: 800, quantile: 0.9, window: 10, maxTokens: 2_000 });
    const req = request('a', 'x'.repeat(400)); // 100 input tokens
    expect(est.estimate(req, 'a')).toBe(900);
    for (let i = 1; i <= 10; i++) est.observe(req, 'a', 100 + i * 10); // outputs 10..100
    expect(est.outputEstimate('a')).toBe(90);
    expect(est.estimate(req, 'a')).toBe(190);
    expect(est.estimate(req, 'b')).toBe(900); // per agent
    for (let i = 0; i < 10; i++) est.observe(req, 'a', 10_000);
    expect(est.estimate(req, 'a')).toBe(2_000); // bounded by the budget's capacity
  });
});

describe('metric definitions', () => {
  it('acquire-time buckets resolve both a 2 ms and a 20 s wait', async () => {
    const { ACQUIRE_SECONDS_BUCKETS } = await import('../../instrumentation/metrics/definitions.ts');
    const upperBoundFor = (v: number) => ACQUIRE_SECONDS_BUCKETS.find((b) => b >= v) ?? Number.POSITIVE_INFINITY;
    const lowerBoundFor = (v: number) => [...ACQUIRE_SECONDS_BUCKETS].reverse().find((b) => b < v) ?? 0;
    // Each wait falls in a bucket no wider than ~2.5x around it.
    expect(upperBoundFor(0.002) / Math.max(lowerBoundFor(0.002), 1e-9)).toBeLessThanOrEqual(2.5);
    expect(upperBoundFor(20) / lowerBoundFor(20)).toBeLessThanOrEqual(1.5);
  });
});
