// The seed's advice: fail and cancel a branch, then confirm permits return to the starting
// count. Every case checks permits, the single reconciliation, the metric outcome and the
// number of delegate calls.
import { ApiError } from '@google/genai';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type CallReport,
  ERROR_CODES,
  limiterMetrics,
  RateLimitedLlm,
  type RateLimitedLlmOptions,
  RateLimitExhausted,
  RateLimitTimeout,
  TokenBudget,
} from '../../instrumentation/index.ts';
import { FakeLlm, fakeRequest as request, type Script, textResponse } from '../../instrumentation/testing.ts';
import { consume, delay, histogramCount, metricValue, until } from './helpers.ts';

const LIMIT = 2;

function rateLimitError(retryDelay = '0.005s'): ApiError {
  return new ApiError({
    status: 429,
    message: JSON.stringify({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        message: 'quota',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }],
      },
    }),
  });
}

const wrappers: RateLimitedLlm[] = [];
afterEach(() => {
  for (const w of wrappers.splice(0)) w.close();
});

function harness(script: Script, options: Partial<RateLimitedLlmOptions> = {}) {
  const registry = new Registry();
  const delegate = new FakeLlm(script);
  const budget = new TokenBudget(60_000, { countedTokens: 'total' });
  const reconcile = vi.spyOn(budget, 'reconcile');
  const reports: CallReport[] = [];
  const llm = new RateLimitedLlm({
    delegate,
    name: 'test',
    maxConcurrent: LIMIT,
    budget,
    estimatedTokens: 100,
    maxWaitMs: 2_000,
    backoff: { baseMs: 2, capMs: 10 },
    registry,
    onCallEnd: (r) => reports.push(r),
    ...options,
  });
  wrappers.push(llm);
  const outcome = (o: string) => metricValue(registry, limiterMetrics.calls.name, { limiter: 'test', outcome: o });
  return { registry, delegate, budget, reconcile, reports, llm, outcome };
}

describe('fault matrix', () => {
  it('success: one call, tokens reconciled from the reported usage', async () => {
    const h = harness(async function* () {
      yield textResponse('ok', 40);
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect(result.error).toBeUndefined();
    expect(result.responses).toHaveLength(1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 40); // the admission ticket carries the reservation
    expect(await h.outcome('ok')).toBe(1);
    expect(h.delegate.calls).toHaveLength(1);
    expect(h.reports).toEqual([expect.objectContaining({ agent: 'a', outcome: 'ok', attempts: 1, reservedTokens: 100, actualTokens: 40 })]);
  });

  it('429 then success: retried once with the same request, keeping the permit', async () => {
    const h = harness(async function* (call) {
      if (call.index === 0) throw rateLimitError();
      yield textResponse('ok', 50);
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect(result.error).toBeUndefined();
    expect(h.delegate.calls).toHaveLength(2);
    expect(h.delegate.calls[1].request).toBe(h.delegate.calls[0].request);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 50);
    expect(await h.outcome('ok')).toBe(1);
    expect(await metricValue(h.registry, limiterMetrics.rateLimited.name, { agent: 'a' })).toBe(1);
    expect(await metricValue(h.registry, limiterMetrics.retries.name, { agent: 'a' })).toBe(1);
    expect(h.reports[0].attempts).toBe(2);
  });

  it('429 × maxAttempts: RateLimitExhausted with code RATE_LIMITED, estimate kept', async () => {
    const h = harness(async function* () {
      yield* [];
      throw rateLimitError();
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect(result.error).toBeInstanceOf(RateLimitExhausted);
    const error = result.error as RateLimitExhausted;
    expect(error.reason).toBe('attempts');
    expect(JSON.parse(error.message).code).toBe(ERROR_CODES.rateLimited);
    expect(error.cause).toBeInstanceOf(ApiError);
    expect(h.delegate.calls).toHaveLength(3);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 100);
    expect(await h.outcome('rate_limited')).toBe(1);
    expect(await metricValue(h.registry, limiterMetrics.rateLimited.name, {})).toBe(3);
    expect(await metricValue(h.registry, limiterMetrics.retries.name, {})).toBe(2);
  });

  it('non-429 error: passed through unchanged, not retried', async () => {
    const boom = new Error('boom');
    const h = harness(async function* () {
      yield* [];
      throw boom;
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect(result.error).toBe(boom);
    expect(h.delegate.calls).toHaveLength(1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(await h.outcome('error')).toBe(1);
  });

  it('error after the first streamed chunk: not retried, nothing yielded twice', async () => {
    const h = harness(async function* () {
      yield textResponse('part', 10, true);
      await delay(5);
      throw rateLimitError();
    });
    const result = await consume(h.llm.generateContentAsync(request('a'), true));
    expect(result.responses.map((r) => r.content?.parts?.[0].text)).toEqual(['part']);
    expect(result.error).toBeInstanceOf(ApiError);
    expect(h.delegate.calls).toHaveLength(1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 10);
    expect(await h.outcome('rate_limited')).toBe(1);
    expect(await metricValue(h.registry, limiterMetrics.retries.name, {})).toBe(0);
  });

  it('consumer abandons mid-stream: the delegate call is aborted and the permit returns', async () => {
    let delegateSignal: AbortSignal | undefined;
    const h = harness(async function* (call) {
      delegateSignal = call.signal;
      yield textResponse('one', 10, true);
      await delay(10_000, call.signal);
      yield textResponse('never', 20);
    });
    for await (const _ of h.llm.generateContentAsync(request('a'), true)) break;
    expect(delegateSignal?.aborted).toBe(true);
    // Released as soon as the aborted provider call unwinds (a few microtasks later).
    await until(() => h.reports.length === 1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(h.reconcile).toHaveBeenCalledWith(expect.objectContaining({ tokens: 100 }), 10);
    expect(await h.outcome('cancelled')).toBe(1);
    expect(h.delegate.calls).toHaveLength(1);
  });

  it('abort signal fired while waiting for a permit: leaves the queue, no delegate call', async () => {
    const h = harness(async function* (call) {
      await delay(100, call.signal);
      yield textResponse('ok', 10);
    }, { maxConcurrent: 1 });
    const holder = consume(h.llm.generateContentAsync(request('holder')));
    await until(() => h.delegate.calls.length === 1);
    const controller = new AbortController();
    const waiter = consume(h.llm.generateContentAsync(request('waiter'), false, controller.signal));
    await until(() => h.llm.snapshot().waiting === 1);
    controller.abort(new Error('user went away'));
    const result = await waiter;
    expect((result.error as Error).message).toBe('user went away');
    expect(h.llm.snapshot().waiting).toBe(0);
    expect((await holder).error).toBeUndefined();
    expect(h.delegate.calls).toHaveLength(1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1); // the holder's only: the waiter reserved nothing
    expect(await metricValue(h.registry, limiterMetrics.calls.name, { agent: 'waiter', outcome: 'cancelled' })).toBe(1);
    expect(await histogramCount(h.registry, limiterMetrics.acquireDuration.name, { agent: 'waiter', outcome: 'aborted' })).toBe(1);
  });

  it('abort signal fired while streaming: the consumer gets the reason, permit and tokens settled', async () => {
    const h = harness(async function* (call) {
      yield textResponse('one', 10, true);
      await delay(10_000, call.signal);
    });
    const controller = new AbortController();
    const gen = h.llm.generateContentAsync(request('a'), true, controller.signal);
    const first = await gen.next();
    expect(first.done).toBe(false);
    controller.abort(new Error('stop'));
    const result = await consume(gen);
    expect((result.error as Error).message).toBe('stop');
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(await h.outcome('cancelled')).toBe(1);
    expect(h.delegate.calls).toHaveLength(1);
  });

  it('maxWait expires waiting for a permit: RateLimitTimeout reason permit', async () => {
    const h = harness(async function* (call) {
      await delay(200, call.signal);
      yield textResponse('ok', 10);
    }, { maxConcurrent: 1, maxWaitMs: 30 });
    const holder = consume(h.llm.generateContentAsync(request('holder')));
    await until(() => h.delegate.calls.length === 1);
    const result = await consume(h.llm.generateContentAsync(request('late')));
    expect(result.error).toBeInstanceOf(RateLimitTimeout);
    const error = result.error as RateLimitTimeout;
    expect(error.reason).toBe('permit');
    expect(JSON.parse(error.message)).toMatchObject({ code: 'RATE_LIMIT_TIMEOUT', reason: 'permit' });
    await holder;
    expect(h.delegate.calls).toHaveLength(1);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.reconcile).toHaveBeenCalledTimes(1);
    expect(await metricValue(h.registry, limiterMetrics.timeouts.name, { agent: 'late', reason: 'permit' })).toBe(1);
    expect(await metricValue(h.registry, limiterMetrics.calls.name, { agent: 'late', outcome: 'timeout' })).toBe(1);
  });

  it('maxWait expires waiting for budget: RateLimitTimeout reason budget, permit given back', async () => {
    const h = harness(async function* () {
      yield textResponse('ok');
    }, { budget: new TokenBudget(600, { initialLevel: 0 }), maxWaitMs: 30 });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect(result.error).toBeInstanceOf(RateLimitTimeout);
    expect((result.error as RateLimitTimeout).reason).toBe('budget');
    expect(h.delegate.calls).toHaveLength(0);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
    expect(h.llm.snapshot().waiting).toBe(0);
    expect(await metricValue(h.registry, limiterMetrics.timeouts.name, { reason: 'budget' })).toBe(1);
    expect(await h.outcome('timeout')).toBe(1);
  });
});

describe('retry policy', () => {
  it('a server delay beyond the remaining maxWait is not retried', async () => {
    const h = harness(async function* () {
      yield* [];
      throw rateLimitError('45.8s');
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect((result.error as RateLimitExhausted).reason).toBe('delay_exceeds_wait');
    expect(h.delegate.calls).toHaveLength(1);
  });

  it('a per-day quota violation fails at once', async () => {
    const daily = new ApiError({
      status: 429,
      message: JSON.stringify({
        error: {
          code: 429,
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [{ quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier' }],
            },
            { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
          ],
        },
      }),
    });
    const h = harness(async function* () {
      yield* [];
      throw daily;
    });
    const result = await consume(h.llm.generateContentAsync(request('a')));
    expect((result.error as RateLimitExhausted).reason).toBe('daily_quota');
    expect(h.delegate.calls).toHaveLength(1);
  });

  it('the retry budget caps retries in a 429 storm', async () => {
    const h = harness(async function* () {
      yield* [];
      throw rateLimitError('0s');
    }, { retryBudget: { ratio: 0.1, minRetries: 2 }, maxAttempts: 5, maxConcurrent: 20 });
    await Promise.all(Array.from({ length: 20 }, () => consume(h.llm.generateContentAsync(request('a')))));
    // 20 calls: at most max(2, 10 % of 20) = 2 retries.
    expect(await metricValue(h.registry, limiterMetrics.retries.name, {})).toBe(2);
    expect(h.delegate.calls).toHaveLength(22);
    expect(h.reports.filter((r) => r.outcome === 'rate_limited')).toHaveLength(20);
    expect(h.llm.snapshot().permitsInUse).toBe(0);
  });

  it('connect() is refused', async () => {
    const h = harness(async function* () {});
    await expect(h.llm.connect(request('a'))).rejects.toThrow(/live/);
  });

  it('nothing is acquired for a call that is never consumed', async () => {
    const h = harness(async function* () {
      yield textResponse('ok', 1);
    });
    h.llm.generateContentAsync(request('a'));
    await delay(5);
    expect(h.delegate.calls).toHaveLength(0);
    expect(h.reports).toHaveLength(0);
  });

  it('the agent name is read before delegating (the delegate may delete the labels)', async () => {
    const h = harness(async function* (call) {
      (call.request.config as { labels?: unknown }).labels = undefined;
      yield textResponse('ok', 1);
    });
    await consume(h.llm.generateContentAsync(request('reviewer_1')));
    expect(await metricValue(h.registry, limiterMetrics.calls.name, { agent: 'reviewer_1', outcome: 'ok' })).toBe(1);
    await consume(h.llm.generateContentAsync(request()));
    expect(await metricValue(h.registry, limiterMetrics.calls.name, { agent: 'unknown' })).toBe(1);
  });
});
