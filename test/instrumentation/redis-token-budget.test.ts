// RedisTokenBudget against a real redis-server: two budget instances on two clients stand
// for two replicas sharing one bucket. Scaled down: 6,000 tokens/min (100 tokens/s) for
// the shared-quota property, 60,000/min (1,000/s) where a test waits for a refill.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Clock, realClock } from '../../instrumentation/clock.ts';
import { BudgetRequestTooLarge, DeadlineExceeded } from '../../instrumentation/errors.ts';
import { ERROR_CODES, limiterMetrics, RateLimitedLlm } from '../../instrumentation/index.ts';
import {
  type BudgetRedisClient,
  CentralBudgetUnavailable,
  connectBudgetRedis,
  RedisTokenBudget,
  type RedisTokenBudgetOptions,
} from '../../instrumentation/redis.ts';
import { FakeLlm, fakeRequest as request, textResponse } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';
import { type RedisServer, startRedisServer } from '../support/redis-server.ts';

let redis: RedisServer;
const clients: BudgetRedisClient[] = [];
let keyCounter = 0;

async function client(): Promise<BudgetRedisClient> {
  const c = await connectBudgetRedis(redis.url);
  clients.push(c);
  return c;
}

/** Two "replicas": two clients, two budgets, one key. */
async function replicas(options: Partial<RedisTokenBudgetOptions> & { tokensPerMinute: number }) {
  const key = `test:budget:${++keyCounter}`;
  const make = async () => new RedisTokenBudget({ client: await client(), name: 'test', key, registry: new Registry(), ...options });
  return { key, a: await make(), b: await make() };
}

beforeAll(async () => {
  redis = await startRedisServer();
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
});

afterAll(async () => {
  await redis?.close();
});

describe('RedisTokenBudget: one bucket shared by two replicas', () => {
  it('property: over any window, the two replicas together admit at most capacity + refill', async () => {
    const capacity = 6_000; // 100 tokens/s
    const perMs = capacity / 60_000;
    const maxSize = 1_500;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tokens: fc.integer({ min: 1, max: maxSize }), replica: fc.constantFrom(0, 1), gapMs: fc.integer({ min: 0, max: 40 }), abortAfterMs: fc.option(fc.integer({ min: 0, max: 300 }), { freq: 4 }) }), {
          minLength: 4,
          maxLength: 16,
        }),
        async (plan) => {
          const { a, b } = await replicas({ tokensPerMinute: capacity, maxPollMs: 50 });
          const t0 = performance.now();
          const admitted: { at: number; tokens: number }[] = [];
          const deadline = t0 + 1_500;
          const pending: Promise<unknown>[] = [];
          for (const step of plan) {
            const budget = step.replica === 0 ? a : b;
            const controller = new AbortController();
            if (step.abortAfterMs !== null) setTimeout(() => controller.abort(new Error('caller went away')), step.abortAfterMs);
            pending.push(
              budget.reserve(step.tokens, { deadline, signal: controller.signal }).then(
                () => admitted.push({ at: performance.now(), tokens: step.tokens }),
                () => {},
              ),
            );
            if (step.gapMs > 0) await new Promise((r) => setTimeout(r, step.gapMs));
          }
          await Promise.all(pending);
          await Promise.all([a.settled(), b.settled()]);
          admitted.sort((x, y) => x.at - y.at);
          let total = 0;
          for (const grant of admitted) {
            total += grant.tokens;
            // The bucket was created after t0, so (at - t0) over-states its age: a safe bound.
            expect(total).toBeLessThanOrEqual(capacity + (grant.at - t0) * perMs + 1e-6);
          }
          // Nothing leaked: what Redis holds is the full bucket minus what was admitted, plus the refill since.
          const level = await a.peek();
          expect(level).toBeLessThanOrEqual(capacity - total + (performance.now() - t0) * perMs + 1e-6);
          // And it is not stuck: unless nearly everything fitted, the heads only block once the bucket is short of them.
          const demandKept = plan.filter((s) => s.abortAfterMs === null).reduce((sum, s) => sum + s.tokens, 0);
          expect(total).toBeGreaterThanOrEqual(Math.min(demandKept, capacity - 2 * maxSize));
        },
      ),
      { numRuns: 6 },
    );
  }, 60_000);

  it('reservations are FIFO within a replica: a large one is not overtaken by small ones', async () => {
    const { a } = await replicas({ tokensPerMinute: 60_000, maxPollMs: 50 }); // 1,000 tokens/s
    await a.reserve(60_000); // drain
    const order: string[] = [];
    const big = a.reserve(400).then(() => order.push('big'));
    const small = [1, 2, 3].map((i) => a.reserve(10).then(() => order.push(`small${i}`)));
    expect(a.waiting).toBe(4);
    await Promise.all([big, ...small]);
    expect(order).toEqual(['big', 'small1', 'small2', 'small3']);
  });

  it('reconcile can drive the shared level negative; both replicas wait until the debt is repaid', async () => {
    const { a, b } = await replicas({ tokensPerMinute: 60_000, maxPollMs: 1_000 }); // 1,000 tokens/s
    await a.reserve(60_000);
    a.reconcile({ tokens: 100 }, 600); // the call used 500 more than reserved
    await a.settled();
    const level = await b.peek(); // the other replica sees the debt
    expect(level).toBeLessThan(-400);
    const start = performance.now();
    await b.reserve(100, { deadline: start + 5_000 });
    const waited = performance.now() - start;
    // (100 − level) tokens at 1 token/ms, minus the few ms between the peek and the reserve.
    expect(waited).toBeGreaterThanOrEqual(100 - level - 30);
    expect(waited).toBeLessThan(100 - level + 500);
    expect(a.available).toBeLessThan(60_000);
  });

  it('a reservation waiting on one replica is let in early when the other gives tokens back', async () => {
    const { a, b } = await replicas({ tokensPerMinute: 6_000, maxPollMs: 100 }); // 100 tokens/s
    await a.reserve(6_000);
    const start = performance.now();
    const waiting = b.reserve(3_000, { deadline: start + 5_000 }); // 30 s by refill alone
    await new Promise((r) => setTimeout(r, 150));
    a.reconcile({ tokens: 6_000 }, 2_000); // the call used a third of its estimate
    await waiting;
    expect(performance.now() - start).toBeLessThan(1_500);
  });

  it('a request larger than the capacity fails at once, without waiting or touching Redis', async () => {
    const { a } = await replicas({ tokensPerMinute: 6_000 });
    const start = performance.now();
    await expect(a.reserve(6_001, { deadline: start + 10_000 })).rejects.toBeInstanceOf(BudgetRequestTooLarge);
    expect(() => a.tryReserve(6_001)).toThrow(BudgetRequestTooLarge);
    expect(performance.now() - start).toBeLessThan(100);
    expect(a.tryReserve(10)).toBeUndefined(); // never decided synchronously
  });

  it('a deadline or an abort ends the wait, and the tokens of a late grant are given back', async () => {
    const { a } = await replicas({ tokensPerMinute: 6_000, maxPollMs: 50 });
    await a.reserve(6_000);
    const start = performance.now();
    await expect(a.reserve(1_000, { deadline: start + 200 })).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(performance.now() - start).toBeLessThan(600);
    const controller = new AbortController();
    const aborted = a.reserve(1_000, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('gone')), 50);
    await expect(aborted).rejects.toThrow('gone');
    expect(a.waiting).toBe(0);
  });

  it('the refill runs on Redis time: a replica whose clock is an hour ahead sees the same level', async () => {
    const skewed: Clock = { ...realClock, now: () => realClock.now() + 3_600_000 };
    const key = `test:budget:${++keyCounter}`;
    const a = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, registry: new Registry() });
    const b = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, registry: new Registry(), clock: skewed });
    await a.reserve(5_000);
    const [levelA, levelB] = [await a.peek(), await b.peek()];
    expect(levelB).toBeLessThan(1_100); // not refilled by the skew
    expect(Math.abs(levelA - levelB)).toBeLessThan(20);
    await expect(b.reserve(3_000, { deadline: skewed.now() + 100 })).rejects.toBeInstanceOf(DeadlineExceeded);
  });

  it('EVALSHA falls back to EVAL when Redis has lost the script', async () => {
    const { a } = await replicas({ tokensPerMinute: 6_000 });
    await a.reserve(100);
    const raw = await createClient({ url: redis.url }).connect();
    await raw.scriptFlush();
    raw.destroy();
    await a.reserve(100);
    expect(await a.peek()).toBeLessThan(5_850);
  });

  it('drives a RateLimitedLlm: two wrappers on one key admit one shared budget', async () => {
    const key = `test:budget:${++keyCounter}`;
    const delegate = new FakeLlm(async function* () {
      yield textResponse('ok', 1_000);
    });
    const wrappers = await Promise.all(
      [0, 1].map(async () => {
        const registry = new Registry();
        const budget = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, countedTokens: 'total', registry });
        return new RateLimitedLlm({ delegate, name: 'test', maxConcurrent: 10, budget, estimatedTokens: 1_000, maxWaitMs: 300, registry });
      }),
    );
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => consume(wrappers[i % 2].generateContentAsync(request('a')))));
    const ok = results.filter((r) => !r.error).length;
    // 6 calls fit in the shared 6,000-token bucket (+ ~30 tokens of refill in 300 ms); each wrapper alone would allow 6.
    expect(ok).toBe(6);
    expect(delegate.calls).toHaveLength(6);
    for (const w of wrappers) w.close();
  });
});

describe('RedisTokenBudget: Redis stopped mid-run', () => {
  afterEach(async () => {
    redis.resume();
    await redis.restart(); // every test starts with a running (empty) Redis
  });

  it('fails open to the local static share: keeps admitting within that share, counts it, returns to Redis', async () => {
    const registry = new Registry();
    const changes: boolean[] = [];
    const budget = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key: `test:budget:${++keyCounter}`,
      tokensPerMinute: 60_000,
      localShareTokensPerMinute: 3_000, // 50 tokens/s: this replica's static share
      retryRedisAfterMs: 200,
      registry,
      onCentralChange: (central) => changes.push(central),
    });
    await budget.reserve(1_000);
    expect(budget.central).toBe(true);

    await redis.stop();
    const start = performance.now();
    await budget.reserve(2_000, { deadline: start + 2_000 }); // served by the local share
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(budget.central).toBe(false);
    const unavailable = () => metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { limiter: 'test', handling: 'local_share' });
    expect(await unavailable()).toBe(1);
    // The local share binds: 1,000 tokens left of 3,000, the next 2,000 need 20 s.
    await expect(budget.reserve(2_000, { deadline: performance.now() + 300 })).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(budget.available).toBeLessThan(1_100);

    await redis.restart();
    const deadline = Date.now() + 8_000;
    while (!budget.central && Date.now() < deadline) {
      await budget.reserve(1, { deadline: performance.now() + 1_000 }).catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(budget.central).toBe(true);
    expect(changes).toEqual([false, true]);
    expect(await budget.peek()).toBeGreaterThan(59_000); // a fresh Redis: a full bucket again
  }, 20_000);

  it('Redis stopped (SIGSTOP): the hung command ends at the deadline, the local share serves, the connection is replaced and the budget returns', async () => {
    const registry = new Registry();
    const changes: boolean[] = [];
    const budget = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key: `test:budget:${++keyCounter}`,
      tokensPerMinute: 60_000,
      localShareTokensPerMinute: 3_000,
      retryRedisAfterMs: 200,
      healthCheckIntervalMs: 100,
      registry,
      onCentralChange: (central) => changes.push(central),
    });
    await budget.reserve(1_000);
    redis.pause();
    try {
      // maxWait-sized deadline: without a command deadline of its own this waits all of it.
      await budget.reserve(500, { deadline: performance.now() + 20_000 });
      expect(budget.central).toBe(false);
      expect(await metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { limiter: 'test', handling: 'local_share' })).toBe(1);
    } finally {
      redis.resume();
    }
    await vi.waitFor(() => expect(budget.central).toBe(true), { timeout: 10_000, interval: 50 });
    expect(changes).toEqual([false, true]);
    await budget.reserve(2_000); // from Redis again
    expect(await budget.peek()).toBeLessThan(58_000);
    await budget.close();
  }, 20_000);

  it('fails closed without a local share: queued and new reservations are refused with BUDGET_UNAVAILABLE', async () => {
    const registry = new Registry();
    const budget = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key: `test:budget:${++keyCounter}`,
      tokensPerMinute: 6_000,
      maxPollMs: 100,
      registry,
    });
    await budget.reserve(6_000);
    // The rejection is observed from the start: it may arrive while redis.stop() is awaited.
    const queued = budget.reserve(1_000, { deadline: performance.now() + 10_000 }).catch((e: unknown) => e); // polling for 10 s of refill
    await new Promise((r) => setTimeout(r, 50));
    await redis.stop();
    const start = performance.now();
    const error = await queued;
    expect(error).toBeInstanceOf(CentralBudgetUnavailable);
    expect(performance.now() - start).toBeLessThan(1_500);
    expect(JSON.parse((error as Error).message).error.code).toBe(ERROR_CODES.budgetUnavailable);
    await expect(budget.reserve(10)).rejects.toBeInstanceOf(CentralBudgetUnavailable);
    expect(await metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { handling: 'refused' })).toBe(2);
  }, 20_000);
});
