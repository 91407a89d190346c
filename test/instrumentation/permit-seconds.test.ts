// llm_limiter_permit_seconds_total adds up how long permits were held, from acquire to
// release, budget wait included: its rate is the exact mean number of permits in use (the
// L of Little's law), which the call-duration histogram alone under-states whenever a call
// holds its permit while it waits for token budget. Fake time, so the sums are exact.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../instrumentation/clock.ts';
import { FairSemaphore, limiterMetrics, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, ManualClock, textResponse } from '../../instrumentation/testing.ts';
import { consume, metricValue } from './helpers.ts';

function setup(maxWaitMs: number) {
  const clock = new ManualClock();
  const registry = new Registry();
  const delegate = new FakeLlm(async function* () {
    await sleep(clock, 200);
    yield textResponse('ok', 100);
  });
  const llm = new RateLimitedLlm({
    delegate,
    name: 'test',
    maxConcurrent: 1,
    budget: new TokenBudget(60_000, { clock, initialLevel: 0 }), // 1 token per ms, empty at start
    estimatedTokens: 100,
    maxWaitMs,
    registry,
    clock,
  });
  const permitSeconds = () => metricValue(registry, limiterMetrics.permitSeconds.name, { limiter: 'test' });
  const callSeconds = async () => {
    const data = await registry.getSingleMetric(limiterMetrics.callDuration.name)!.get();
    return data.values.filter((v) => (v as { metricName?: string }).metricName === `${limiterMetrics.callDuration.name}_sum`).reduce((s, v) => s + v.value, 0);
  };
  return { clock, llm, permitSeconds, callSeconds };
}

describe('llm_limiter_permit_seconds_total', () => {
  it('counts permit time from acquire to release, the wait for budget included', async () => {
    const { clock, llm, permitSeconds, callSeconds } = setup(10_000);
    // A: permit at 0, budget at 100 (100 tokens at 1/ms), call until 300.
    // B: permit at 300, budget at once (200 tokens refilled meanwhile), call until 500.
    const a = consume(llm.generateContentAsync(request('a')));
    const b = consume(llm.generateContentAsync(request('b')));
    await clock.advance(1_000);
    expect((await a).error).toBeUndefined();
    expect((await b).error).toBeUndefined();
    expect(await permitSeconds()).toBeCloseTo(0.5, 9); // one permit busy for all of [0, 500]: mean in use = 1
    expect(await callSeconds()).toBeCloseTo(0.4, 9); // the call time alone misses A's 100 ms budget wait
    llm.close();
  });

  it('counts the permit held by a call that then times out waiting for budget', async () => {
    const { clock, llm, permitSeconds } = setup(50);
    const call = consume(llm.generateContentAsync(request('a')));
    await clock.advance(1_000);
    expect((await call).error).toMatchObject({ name: 'RateLimitTimeout', reason: 'budget' });
    expect(await permitSeconds()).toBeCloseTo(0.05, 9);
    expect(llm.snapshot().permitsInUse).toBe(0);
    llm.close();
  });

  it('grows while a permit is held, so a scrape mid-call sees the time so far (no lump at release)', async () => {
    const { clock, llm, permitSeconds } = setup(10_000);
    const a = consume(llm.generateContentAsync(request('a')));
    await clock.advance(150); // A holds its permit (waiting for budget, then calling)
    expect(await permitSeconds()).toBeCloseTo(0.15, 9);
    await clock.advance(50);
    expect(await permitSeconds()).toBeCloseTo(0.2, 9);
    await clock.advance(1_000);
    expect((await a).error).toBeUndefined();
    const done = await permitSeconds();
    await clock.advance(5_000); // nothing held: the integral stays put
    expect(await permitSeconds()).toBeCloseTo(done, 9);
    llm.close();
  });

  it('accounts permits admitted by raising the limit (adaptive concurrency) from that moment', async () => {
    const clock = new ManualClock();
    const semaphore = new FairSemaphore(1, { clock });
    const first = semaphore.tryAcquire()!;
    const queued = semaphore.acquire();
    await clock.advance(1_000); // 1 permit held for 1 s
    semaphore.setLimit(2); // admits the waiter now: 2 held from here
    const second = await queued;
    await clock.advance(1_000);
    expect(semaphore.heldPermitSeconds).toBeCloseTo(3, 9);
    first.release();
    second.release();
    await clock.advance(1_000);
    expect(semaphore.heldPermitSeconds).toBeCloseTo(3, 9);
  });
});
