// RedisTokenBudget against a real redis-server: budget instances on their own clients stand
// for replicas sharing one window. Scaled down: windows of 1 s (slots of 10 ms) where a test
// waits for the window to pass, a minute where it must not.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BudgetTicket } from '../../instrumentation/budget/budget.ts';
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

/** `count` "replicas": a client and a budget each, one key. */
async function replicas(count: number, options: Partial<RedisTokenBudgetOptions> & { tokensPerMinute: number }) {
  const key = `test:budget:${++keyCounter}`;
  const budgets: RedisTokenBudget[] = [];
  for (let i = 0; i < count; i++) budgets.push(new RedisTokenBudget({ client: await client(), name: 'test', key, registry: new Registry(), ...options }));
  return { key, budgets };
}

/** The Redis slot an admission was counted in (10 ms slots for a 1 s window). */
const slotOf = (ticket: BudgetTicket) => Number((ticket as { redisSlot?: string }).redisSlot);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every window (at most 101 slots of 10 ms: a 1 s window) holds at most the limit of what the provider counts. */
function expectNoWindowOver(counted: readonly { slot: number; tokens: number }[], limit: number): void {
  for (const { slot } of counted) {
    const inWindow = counted.filter((c) => c.slot <= slot && c.slot >= slot - 100).reduce((sum, c) => sum + c.tokens, 0);
    expect(inWindow).toBeLessThanOrEqual(limit + 1e-6);
  }
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

describe('RedisTokenBudget: one window shared by replicas', () => {
  it('property: in no window do the replicas together admit more than the limit (as the provider counts: actual usage)', async () => {
    const limit = 3_000;
    const windowMs = 1_000;
    const maxSize = 1_500;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            tokens: fc.integer({ min: 1, max: maxSize }),
            replica: fc.constantFrom(0, 1, 2),
            gapMs: fc.integer({ min: 0, max: 80 }),
            used: fc.double({ min: 0, max: 1, noNaN: true }),
            holdMs: fc.integer({ min: 0, max: 150 }),
            abortAfterMs: fc.option(fc.integer({ min: 0, max: 300 }), { freq: 4 }),
          }),
          { minLength: 4, maxLength: 24 },
        ),
        async (plan) => {
          const { budgets } = await replicas(3, { tokensPerMinute: limit, windowMs, maxPollMs: 50 });
          const t0 = performance.now();
          const admitted: { slot: number; actual: number }[] = [];
          const deadline = t0 + 2_500;
          const pending: Promise<unknown>[] = [];
          for (const step of plan) {
            const budget = budgets[step.replica];
            const controller = new AbortController();
            if (step.abortAfterMs !== null) setTimeout(() => controller.abort(new Error('caller went away')), step.abortAfterMs);
            pending.push(
              budget.reserve(step.tokens, { deadline, signal: controller.signal }).then(
                async (ticket) => {
                  // The call uses at most its estimate; it ends after holdMs and is reconciled.
                  const actual = Math.floor(step.tokens * step.used);
                  admitted.push({ slot: slotOf(ticket), actual });
                  await sleep(step.holdMs);
                  budget.reconcile(ticket, actual);
                },
                () => {},
              ),
            );
            if (step.gapMs > 0) await sleep(step.gapMs);
          }
          await Promise.all(pending);
          await Promise.all(budgets.map((b) => b.settled()));
          expectNoWindowOver(admitted.map((a) => ({ slot: a.slot, tokens: a.actual })), limit);
          // And it is not stuck: a demand that fits the window is admitted whole.
          const kept = plan.filter((s) => s.abortAfterMs === null);
          if (kept.reduce((sum, s) => sum + s.tokens, 0) <= limit) expect(admitted.length).toBeGreaterThanOrEqual(kept.length);
          for (const b of budgets) await b.close();
        },
      ),
      { numRuns: 8 },
    );
  }, 90_000);

  it('a window that is full admits again only as its admissions leave it, not by refill', async () => {
    const { budgets } = await replicas(2, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50 });
    const [a, b] = budgets;
    const start = performance.now();
    await a.reserve(3_000);
    // A bucket would have 300 tokens back after 100 ms; the window has none until the first admission is a window old.
    await expect(b.reserve(300, { deadline: performance.now() + 500 })).rejects.toBeInstanceOf(DeadlineExceeded);
    await b.reserve(300, { deadline: performance.now() + 2_000 });
    expect(performance.now() - start).toBeGreaterThanOrEqual(950);
  });

  it('sends the reservations queued in a replica together: fewer script runs than reservations', async () => {
    const c = await client();
    let runs = 0;
    const counting = {
      get isReady() {
        return c.isReady;
      },
      evalSha: (sha: string, o: { keys: string[]; arguments: string[] }) => {
        runs++;
        return c.evalSha(sha, o);
      },
      eval: (s: string, o: { keys: string[]; arguments: string[] }) => c.eval(s, o),
    };
    const budget = new RedisTokenBudget({ client: counting, name: 'test', key: `test:budget:${++keyCounter}`, tokensPerMinute: 1e9, registry: new Registry(), healthCheckIntervalMs: 600_000 });
    await budget.reserve(1);
    runs = 0;
    const tickets = await Promise.all(Array.from({ length: 40 }, () => budget.reserve(10)));
    for (const t of tickets) budget.reconcile(t, 5);
    await budget.settled();
    expect(runs).toBeLessThanOrEqual(4); // 40 reservations, 40 reconciliations
    expect(await budget.peek()).toBe(1e9 - 1 - 40 * 5);
    await budget.close();
  });

  it('reservations are FIFO within a replica: a large one is not overtaken by small ones', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50 });
    const [a] = budgets;
    await a.reserve(2_700); // 300 left
    const order: string[] = [];
    const big = a.reserve(400).then(() => order.push('big'));
    const small = [1, 2, 3].map((i) => a.reserve(10).then(() => order.push(`small${i}`)));
    expect(a.waiting).toBe(4);
    await Promise.all([big, ...small]);
    expect(order).toEqual(['big', 'small1', 'small2', 'small3']);
  });

  it('a debt (actual above the estimate) is counted: every replica waits until it leaves the window', async () => {
    const { budgets } = await replicas(2, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50 });
    const [a, b] = budgets;
    const ticket = await a.reserve(2_000);
    a.reconcile(ticket, 3_500); // the call used 1,500 more than reserved
    await a.settled();
    expect(await b.peek()).toBe(-500); // the other replica sees the debt
    await expect(b.reserve(100, { deadline: performance.now() + 400 })).rejects.toBeInstanceOf(DeadlineExceeded);
    await b.reserve(100, { deadline: performance.now() + 2_000 });
  });

  it('a reservation waiting on one replica is let in early when the other gives tokens back', async () => {
    const { budgets } = await replicas(2, { tokensPerMinute: 6_000, maxPollMs: 100 }); // a minute's window
    const [a, b] = budgets;
    const ticket = await a.reserve(6_000);
    const start = performance.now();
    const waiting = b.reserve(3_000, { deadline: start + 5_000 }); // a minute by the window alone
    await sleep(150);
    a.reconcile(ticket, 2_000); // the call used a third of its estimate
    await waiting;
    expect(performance.now() - start).toBeLessThan(1_500);
  });

  it('a request larger than the capacity fails at once, without waiting or touching Redis', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 6_000 });
    const [a] = budgets;
    const start = performance.now();
    await expect(a.reserve(6_001, { deadline: start + 10_000 })).rejects.toBeInstanceOf(BudgetRequestTooLarge);
    expect(() => a.tryReserve(6_001)).toThrow(BudgetRequestTooLarge);
    expect(performance.now() - start).toBeLessThan(100);
    expect(a.tryReserve(10)).toBeUndefined(); // never decided synchronously
  });

  it('a deadline or an abort ends the wait, and the tokens of a late grant are given back', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 6_000, maxPollMs: 50 });
    const [a] = budgets;
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

  it('the window runs on Redis time: a replica whose clock is an hour ahead sees the same window', async () => {
    const skewed: Clock = { ...realClock, now: () => realClock.now() + 3_600_000 };
    const key = `test:budget:${++keyCounter}`;
    const a = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, registry: new Registry() });
    const b = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, registry: new Registry(), clock: skewed });
    await a.reserve(5_000);
    expect(await a.peek()).toBe(1_000);
    expect(await b.peek()).toBe(1_000);
    await expect(b.reserve(3_000, { deadline: skewed.now() + 100 })).rejects.toBeInstanceOf(DeadlineExceeded);
  });

  it('a lowered window limit (an adaptive limit moving it) admits less; the capacity still bounds a reservation', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 6_000 });
    const [a] = budgets;
    a.setWindowLimit(2_000);
    expect(a.windowLimit).toBe(2_000);
    await a.reserve(1_500);
    await expect(a.reserve(1_000, { deadline: performance.now() + 200 })).rejects.toBeInstanceOf(DeadlineExceeded);
    a.setWindowLimit(10_000); // never above the capacity
    expect(a.windowLimit).toBe(6_000);
    await a.reserve(1_000);
  });

  it('EVALSHA falls back to EVAL when Redis has lost the script', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 6_000 });
    const [a] = budgets;
    await a.reserve(100);
    const raw = await createClient({ url: redis.url }).connect();
    await raw.scriptFlush();
    raw.destroy();
    await a.reserve(100);
    expect(await a.peek()).toBe(5_800);
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
    // 6 calls fit in the shared 6,000-token window; each wrapper alone would allow 6.
    expect(ok).toBe(6);
    expect(delegate.calls).toHaveLength(6);
    for (const w of wrappers) w.close();
  });
});

describe('RedisTokenBudget: whole requests held at the door, counted when used (windowAtUse)', () => {
  it('property: with whole-request holds charged call by call (held from when each call is due, or all at once), no window counts more than the limit, and a demand that fits is admitted', async () => {
    const limit = 4_000;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            replica: fc.constantFrom(0, 1, 2),
            /** Tokens of each call of the request, and how much of it the call used. */
            calls: fc.array(fc.record({ tokens: fc.integer({ min: 1, max: 600 }), used: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 1, maxLength: 4 }),
            /** Calls that never run (a branch shed or failed before it called). */
            skipped: fc.nat(2),
            gapMs: fc.integer({ min: 0, max: 60 }),
            callGapMs: fc.integer({ min: 0, max: 80 }),
            /** Held as a schedule (call i due i × callGapMs + dueLateMs after admission), or all at admission. */
            scheduled: fc.boolean(),
            /** How much later than it starts a call is expected: it starts early and waits for its room. */
            dueLateMs: fc.integer({ min: 0, max: 40 }),
          }),
          { minLength: 3, maxLength: 16 },
        ),
        async (plan) => {
          const { budgets } = await replicas(3, { tokensPerMinute: limit, windowMs: 1_000, maxPollMs: 50 });
          const deadline = performance.now() + 2_500;
          /** What the provider counts: each call's use in the slot Redis counted it. */
          const uses: { slot: number; tokens: number }[] = [];
          let admittedRequests = 0;
          const run = async (step: (typeof plan)[number]) => {
            const budget = budgets[step.replica];
            const whole = step.calls.reduce((sum, c) => sum + c.tokens, 0);
            const useSchedule = step.scheduled ? step.calls.map((c, i) => ({ afterMs: i * step.callGapMs + step.dueLateMs, tokens: c.tokens })) : undefined;
            let ticket: BudgetTicket;
            try {
              ticket = await budget.reserve(whole, { deadline, windowAtUse: true, useSchedule });
            } catch {
              return;
            }
            admittedRequests++;
            let spent = 0;
            for (const [i, call] of step.calls.slice(0, Math.max(1, step.calls.length - step.skipped)).entries()) {
              if (i > 0) await sleep(step.callGapMs);
              const tokens = Math.floor(call.tokens * call.used);
              // A call that starts before its part is due waits for its room, as the wrapper does.
              for (let room = budget.windowRoomInMs(ticket, tokens); room > 0; room = budget.windowRoomInMs(ticket, tokens)) await sleep(room);
              budget.chargeWindow(ticket, tokens);
              await budget.settled();
              if (tokens > 0) uses.push({ slot: slotOf(ticket), tokens });
              spent += tokens;
            }
            budget.reconcile(ticket, spent); // the request is over: what it never used goes back
          };
          const pending: Promise<void>[] = [];
          for (const step of plan) {
            pending.push(run(step));
            if (step.gapMs > 0) await sleep(step.gapMs);
          }
          await Promise.all(pending);
          await Promise.all(budgets.map((b) => b.settled()));
          expectNoWindowOver(uses, limit);
          if (plan.reduce((sum, s) => sum + s.calls.reduce((a, c) => a + c.tokens, 0), 0) <= limit) expect(admittedRequests).toBe(plan.length);
          for (const b of budgets) await b.close();
        },
      ),
      { numRuns: 8 },
    );
  }, 120_000);

  it('a request whose later call is due after the window frees is admitted at once; that call, started early, waits until it is due', async () => {
    const { budgets } = await replicas(2, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50 });
    const [a, b] = budgets;
    await a.reserve(2_000); // counted now: leaves the window in about 1 s
    const useSchedule = [
      { afterMs: 0, tokens: 500 },
      { afterMs: 1_100, tokens: 1_000 },
    ];
    const asked = performance.now();
    const ticket = await b.reserve(1_500, { windowAtUse: true, useSchedule, deadline: asked + 500 });
    expect(performance.now() - asked).toBeLessThan(500); // all of it now would wait a window
    // The first part is due now: 2,000 + 500 held; another 1,000 now does not fit.
    await expect(a.reserve(1_000, { deadline: performance.now() + 200 })).rejects.toBeInstanceOf(DeadlineExceeded);
    b.chargeWindow(ticket, 500);
    await b.settled();
    expect(b.windowRoomInMs(ticket, 400)).toBeGreaterThan(600); // the first part is used up: drawn from the next, due later
    const early = b.windowRoomInMs(ticket, 1_000);
    expect(early).toBeGreaterThan(600);
    expect(early).toBeLessThanOrEqual(1_100);
    // A timer may fire up to a millisecond early against performance.now().
    await sleep(early + 1);
    expect(b.windowRoomInMs(ticket, 1_000)).toBe(0);
    b.chargeWindow(ticket, 1_000);
    b.reconcile(ticket, 1_500);
    await b.settled();
    expect(await b.peek()).toBeLessThanOrEqual(3_000 - 1_500); // a's 2,000 left the window; b's 1,500 are in it
  });

  it('a hold counts against every replica until it is used or settled; charged, it is in the window; settled, what was not used goes back', async () => {
    const { budgets } = await replicas(2, { tokensPerMinute: 6_000 });
    const [a, b] = budgets;
    const ticket = await a.reserve(5_000, { windowAtUse: true });
    expect(await b.peek()).toBe(6_000); // the window counts nothing yet
    await expect(b.reserve(2_000, { deadline: performance.now() + 200 })).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(b.fundableInMs(2_000)).toBeGreaterThan(0);
    a.chargeWindow(ticket, 1_500); // the first call runs
    await a.settled();
    expect(await b.peek()).toBe(4_500);
    a.reconcile(ticket, 1_500); // the request ended: the other 3,500 were never used
    await a.settled();
    expect(await b.peek()).toBe(4_500); // b's view is as Redis last answered it (the health probe refreshes it too)
    expect(b.fundableInMs(2_000)).toBe(0);
    await b.reserve(2_000, { deadline: performance.now() + 1_000 });
    expect(await b.peek()).toBe(2_500);
  });

  it('fundableInMs: 0 while the window has room; while it is full, when enough leaves it (within a window); unknown without a schedule', async () => {
    const { budgets } = await replicas(1, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50 });
    const [a] = budgets;
    expect(a.fundableInMs(3_000)).toBe(0);
    await a.reserve(1_000);
    expect(a.fundableInMs(2_500)).toBeUndefined(); // under half full, Redis sends no schedule: the caller waits and sees
    await a.reserve(1_800);
    const wait = a.fundableInMs(1_000) as number;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1_010); // the first admission leaves within a window (and a slot)
    expect(a.fundableInMs(100)).toBe(0);
    expect(() => a.fundableInMs(3_001)).toThrow(BudgetRequestTooLarge);
    await vi.waitFor(() => expect(a.peek()).resolves.toBe(3_000), { timeout: 3_000, interval: 50 });
    expect(a.fundableInMs(3_000)).toBe(0);
  });
});

describe('RedisTokenBudget: a provider 429 pauses every replica once', () => {
  it('pauseFor sets a shared blocked time: the other replicas admit nothing before it', async () => {
    const { budgets } = await replicas(3, { tokensPerMinute: 60_000, maxPollMs: 50 });
    const [a, b, c] = budgets;
    await a.reserve(100);
    const start = performance.now();
    a.pauseFor(600);
    await a.settled();
    const admittedAt = await Promise.all([b, c, a].map((budget) => budget.reserve(100, { deadline: start + 5_000 }).then(() => performance.now() - start)));
    for (const at of admittedAt) expect(at).toBeGreaterThanOrEqual(550);
  });
});

describe('RedisTokenBudget: Redis stopped mid-run', () => {
  afterEach(async () => {
    redis.resume();
    await redis.restart(); // every test starts with a running (empty) Redis
  });

  it('a restarted Redis does not start from a full bucket: it counts a full window, then admits again', async () => {
    const { key, budgets } = await replicas(2, { tokensPerMinute: 3_000, windowMs: 1_000, maxPollMs: 50, retryRedisAfterMs: 50 });
    const [a, b] = budgets;
    await a.reserve(2_500); // the provider counts these for a window
    await redis.restart(); // empty: the window is lost
    await vi.waitFor(() => expect(b.peek()).resolves.toBeLessThanOrEqual(0), { timeout: 5_000, interval: 50 });
    const start = performance.now();
    await a.reserve(100, { deadline: start + 5_000 });
    expect(performance.now() - start).toBeGreaterThanOrEqual(700);
    // A key nobody used recently starts empty: a fresh fleet is not held back.
    const fresh = new RedisTokenBudget({ client: await client(), name: 'test', key: `${key}:fresh`, tokensPerMinute: 3_000, windowMs: 1_000, registry: new Registry() });
    expect(await fresh.peek()).toBe(3_000);
  }, 20_000);

  it('fails open to the local share, which counts what this replica already admitted from Redis; returns to Redis', async () => {
    const registry = new Registry();
    const changes: boolean[] = [];
    const budget = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key: `test:budget:${++keyCounter}`,
      tokensPerMinute: 60_000,
      localShareTokensPerMinute: 3_000, // this replica's static share
      retryRedisAfterMs: 200,
      registry,
      onCentralChange: (central) => changes.push(central),
    });
    await budget.reserve(1_000); // from Redis: the local share has 2,000 left in this window
    expect(budget.central).toBe(true);

    await redis.stop();
    const start = performance.now();
    await budget.reserve(2_000, { deadline: start + 2_000 }); // served by the local share
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(budget.central).toBe(false);
    const unavailable = () => metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { limiter: 'test', handling: 'local_share' });
    expect(await unavailable()).toBe(1);
    // The share is used up by the Redis admission and the local one: nothing more this window.
    await expect(budget.reserve(100, { deadline: performance.now() + 300 })).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(budget.available).toBeLessThan(100);

    await redis.restart();
    await vi.waitFor(() => expect(budget.central).toBe(true), { timeout: 8_000, interval: 50 });
    expect(changes).toEqual([false, true]);
    // A restarted Redis while this replica admitted within the window: a full window, not a full bucket.
    expect(await budget.peek()).toBeLessThanOrEqual(0);
  }, 20_000);

  it('Redis stopped (SIGSTOP): the local share serves, and what it admitted is carried into Redis once it answers', async () => {
    const registry = new Registry();
    const changes: boolean[] = [];
    const budget = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key: `test:budget:${++keyCounter}`,
      tokensPerMinute: 60_000,
      localShareTokensPerMinute: 30_000,
      retryRedisAfterMs: 200,
      healthCheckIntervalMs: 100,
      registry,
      onCentralChange: (central) => changes.push(central),
    });
    await budget.reserve(1_000);
    redis.pause();
    try {
      // maxWait-sized deadline: without a command deadline of its own this waits all of it.
      await budget.reserve(5_000, { deadline: performance.now() + 20_000 });
      expect(budget.central).toBe(false);
      expect(await metricValue(registry, limiterMetrics.budgetCentralUnavailable.name, { limiter: 'test', handling: 'local_share' })).toBe(1);
    } finally {
      redis.resume();
    }
    await vi.waitFor(() => expect(budget.central).toBe(true), { timeout: 10_000, interval: 50 });
    expect(changes).toEqual([false, true]);
    // Redis kept its window (1,000) and now counts the 5,000 the local share admitted.
    expect(await budget.peek()).toBeLessThanOrEqual(60_000 - 6_000);
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
    const queued = budget.reserve(1_000, { deadline: performance.now() + 10_000 }).catch((e: unknown) => e);
    await sleep(50);
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

describe('RedisTokenBudget: a key belongs to one window and limit', () => {
  /** The same key with another window or limit: refused whole, fail-open or not, with one line naming both. */
  it.each([
    { other: { windowMs: 10_000, tokensPerMinute: 6_000 }, named: 'window 10000 ms, limit 6000 tokens' },
    { other: { windowMs: 60_000, tokensPerMinute: 3_000 }, named: 'window 60000 ms, limit 3000 tokens' },
  ])('another deployment on the same key ($named) is refused and changes nothing; the first keeps its window', async ({ other, named }) => {
    const key = `test:budget:${++keyCounter}`;
    const first = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, windowMs: 60_000, registry: new Registry() });
    await first.reserve(1_000);
    const changes: unknown[] = [];
    const second = new RedisTokenBudget({
      client: await client(),
      name: 'test',
      key,
      ...other,
      localShareTokensPerMinute: 1_000, // fail-open: a conflict is still refused, never served locally
      registry: new Registry(),
      onCentralChange: (central, error) => changes.push(central ? 'central' : error),
    });
    const error = await second.reserve(100, { deadline: performance.now() + 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CentralBudgetUnavailable);
    const text = JSON.parse((error as Error).message).error.message as string;
    expect(text).toContain(`key "${key}" holds another configuration (window 60000 ms, limit 6000 tokens) than this deployment (${named})`);
    expect(text).not.toContain('unreachable');
    // Truthful and bounded: when the key expires if the first stops writing it.
    const retryAfterMs = (error as CentralBudgetUnavailable).retryAfterMs as number;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000 + 600_000);
    expect(changes).toHaveLength(1);
    expect(String(changes[0])).toContain('holds another configuration');
    // Nothing was counted by the second: the first's window holds its 1,000 alone.
    expect(await first.peek()).toBe(5_000);
    await Promise.all([first.close(), second.close()]);
  });

  it('the refused deployment is admitted once the key is free (never forever)', async () => {
    const key = `test:budget:${++keyCounter}`;
    const first = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, windowMs: 1_000, registry: new Registry() });
    await first.reserve(1_000);
    await first.close();
    const second = new RedisTokenBudget({ client: await client(), name: 'test', key, tokensPerMinute: 6_000, windowMs: 2_000, retryRedisAfterMs: 50, registry: new Registry() });
    await expect(second.reserve(100)).rejects.toBeInstanceOf(CentralBudgetUnavailable);
    // The first's key lives 3 of its windows after its last change, then the second owns it.
    await vi.waitFor(() => expect(second.peek()).resolves.toBe(6_000), { timeout: 10_000, interval: 200 });
    await second.reserve(100);
    await second.close();
  }, 20_000);

  it('no key TTL and no wait exceeds the window plus the longest request deadline', async () => {
    const raw = await createClient({ url: redis.url }).connect();
    try {
      const { key, budgets } = await replicas(1, { tokensPerMinute: 6_000, windowMs: 1_000 });
      const [budget] = budgets;
      await budget.reserve(6_000);
      budget.pauseFor(10 * 3_600_000); // a provider naming a 10 h retry delay
      await budget.settled();
      const bound = 1_000 + 600_000;
      expect(await raw.pTTL(key)).toBeLessThanOrEqual(bound);
      expect(budget.fundableInMs(1_000)).toBeLessThanOrEqual(bound);
      // A state whose slots are numbered far beyond now (written by another window's scale): counted as lost, not waited on for years.
      const legacy = `${key}:legacy`;
      await raw.hSet(legacy, { sum: '6000', cur: String(Date.now() * 1_000), blocked: '0', psum: '0', pmax: String(Date.now() * 1_000), [String(Date.now() * 1_000)]: '6000' });
      await raw.pExpire(legacy, 9e12);
      const fresh = new RedisTokenBudget({ client: await client(), name: 'test', key: legacy, tokensPerMinute: 6_000, windowMs: 1_000, maxPollMs: 50, registry: new Registry() });
      await fresh.reserve(100, { deadline: performance.now() + 5_000 });
      expect(await raw.pTTL(legacy)).toBeLessThanOrEqual(bound);
      await Promise.all([budget.close(), fresh.close()]);
    } finally {
      raw.destroy();
    }
  }, 20_000);
});
