// Streaming accounting and the permit's lifetime when the consumer stops pulling.
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { MaxCallTimeExceeded } from '../../instrumentation/errors.ts';
import { type CallReport, limiterMetrics, RateLimitedLlm, TokenBudget } from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, type Script, textResponse } from '../../instrumentation/testing.ts';
import { consume, delay, metricValue, until } from './helpers.ts';

function harness(script: Script, maxCallMs = 60_000) {
  const registry = new Registry();
  const delegate = new FakeLlm(script);
  const budget = new TokenBudget(60_000, { countedTokens: 'total' });
  const reconcile = vi.spyOn(budget, 'reconcile');
  const reports: CallReport[] = [];
  const llm = new RateLimitedLlm({
    delegate,
    name: 'stream',
    maxConcurrent: 1,
    budget,
    estimatedTokens: 100,
    maxCallMs,
    registry,
    onCallEnd: (r) => reports.push(r),
  });
  return { registry, delegate, reconcile, reports, llm };
}

describe('streaming', () => {
  it('reconciles once from the final response, not the sum of partials', async () => {
    const h = harness(async function* () {
      yield textResponse('a', 10, true);
      yield textResponse('b', 20, true);
      yield textResponse('c', 30, true);
      yield textResponse('abc', 35, false);
    });
    const result = await consume(h.llm.generateContentAsync(request('a'), true));
    expect(result.responses).toHaveLength(4);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 35);
    expect(await metricValue(h.registry, limiterMetrics.tokensActual.name, {})).toBe(35);
  });

  it('uses the last reported usage when no final response carries one', async () => {
    const h = harness(async function* () {
      yield textResponse('a', 10, true);
      yield textResponse('b', 20, true);
      yield textResponse('ab', undefined, false);
    });
    await consume(h.llm.generateContentAsync(request('a'), true));
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 20);
  });

  it('a call that reports no usage keeps its estimate and is counted', async () => {
    const h = harness(async function* () {
      yield textResponse('a');
    });
    await consume(h.llm.generateContentAsync(request('a')));
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 100);
    expect(await metricValue(h.registry, limiterMetrics.tokensActual.name, {})).toBe(100);
  });

  it('yields each response exactly once, in order', async () => {
    const h = harness(async function* () {
      for (let i = 0; i < 5; i++) {
        await delay(1);
        yield textResponse(`p${i}`, i + 1, i < 4);
      }
    });
    const result = await consume(h.llm.generateContentAsync(request('a'), true));
    expect(result.responses.map((r) => r.content?.parts?.[0].text)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
  });
});

describe('the stranded consumer', () => {
  it('gets its permit back when the provider call ends, though it never pulls again nor returns', async () => {
    const h = harness(async function* () {
      yield textResponse('first', 5, true);
      await delay(20);
      yield textResponse('second', 8, true);
      await delay(20);
      yield textResponse('final', 12, false);
    });
    const gen = h.llm.generateContentAsync(request('a'), true);
    await gen.next(); // then abandoned without return(), as ADK does to a sibling branch
    expect(h.llm.snapshot().permitsInUse).toBe(1);
    await until(() => h.reports.length === 1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 12);
    expect(h.reports[0].outcome).toBe('ok');
    // The next call is admitted: the limiter is not locked.
    const next = harness(async function* () {});
    expect(next).toBeDefined();
    const again = await consume(h.llm.generateContentAsync(request('b')));
    expect(again.error).toBeUndefined();
  });

  it('a provider call that never ends is reclaimed after maxCallMs and counted', async () => {
    const h = harness(async function* () {
      yield textResponse('first', 5, true);
      await new Promise(() => {}); // hangs, ignoring its abort signal
    }, 50);
    const gen = h.llm.generateContentAsync(request('a'), true);
    await gen.next();
    expect(h.llm.snapshot().permitsInUse).toBe(1);
    await until(() => h.llm.snapshot().permitsInUse === 0, 1000);
    expect(await metricValue(h.registry, limiterMetrics.permitsReclaimed.name, { limiter: 'stream' })).toBe(1);
    // A consumer that does come back gets a clear error rather than hanging.
    await expect(gen.next()).rejects.toBeInstanceOf(MaxCallTimeExceeded);
    await until(() => h.reports.length === 1);
    expect(h.reports[0].outcome).toBe('error');
    expect(h.reconcile).toHaveBeenCalledTimes(1);
  });
});

describe('onCallEnd', () => {
  it('is called once per call, inside the async context of the request that made it', async () => {
    const { AsyncLocalStorage } = await import('node:async_hooks');
    const als = new AsyncLocalStorage<string>();
    const seen: { agent: string; store: string | undefined }[] = [];
    const llm = new RateLimitedLlm({
      delegate: new FakeLlm(async function* () {
        await delay(10);
        yield textResponse('ok', 3);
      }),
      name: 'als',
      maxConcurrent: 1, // the second and third calls queue: their reports must still see their own context
      estimatedTokens: 1,
      registry: new (await import('prom-client')).Registry(),
      onCallEnd: (r) => seen.push({ agent: r.agent, store: als.getStore() }),
    });
    await Promise.all(
      ['a', 'b', 'c'].map((id) => als.run(`request-${id}`, () => consume(llm.generateContentAsync(request(id))))),
    );
    expect(seen.sort((x, y) => x.agent.localeCompare(y.agent))).toEqual([
      { agent: 'a', store: 'request-a' },
      { agent: 'b', store: 'request-b' },
      { agent: 'c', store: 'request-c' },
    ]);
  });
});
