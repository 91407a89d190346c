// Adaptive (AIMD) and static (replica split) limits, and AIMD driving a real wrapper.
import { ApiError } from '@google/genai';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AimdLimit, RateLimitedLlm, replicaShare } from '../../instrumentation/index.ts';
import { acquireSecondsBuckets, limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import { FakeLlm, ManualClock, fakeRequest as request, textResponse } from '../../instrumentation/testing.ts';
import { consume } from './helpers.ts';

describe('AimdLimit', () => {
  it('backs off multiplicatively on 429 or slow calls (at most once per window), grows by one when used', async () => {
    const clock = new ManualClock();
    const aimd = new AimdLimit({ initial: 10, max: 20, backoffRatio: 0.5, latencyThresholdMs: 1000, windowMs: 60_000, clock });
    expect(aimd.onSample({ durationMs: 10, rateLimited: true, failed: false, inFlight: 10 })).toBe(5);
    expect(aimd.onSample({ durationMs: 10, rateLimited: true, failed: false, inFlight: 10 })).toBe(5); // same window
    await clock.advance(60_000);
    expect(aimd.onSample({ durationMs: 5000, rateLimited: false, failed: false, inFlight: 5 })).toBe(2);
    expect(aimd.onSample({ durationMs: 10, rateLimited: false, failed: false, inFlight: 2 })).toBe(3);
    expect(aimd.onSample({ durationMs: 10, rateLimited: false, failed: false, inFlight: 1 })).toBe(3); // 1*2 < 3: idle
    expect(aimd.onSample({ durationMs: 10, rateLimited: false, failed: true, inFlight: 3 })).toBe(3);
  });

  it('property: the limit always stays within [min, max]', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ durationMs: fc.nat(5000), rateLimited: fc.boolean(), failed: fc.boolean(), inFlight: fc.nat(50) })),
        (samples) => {
          const aimd = new AimdLimit({ initial: 5, min: 2, max: 12, latencyThresholdMs: 2000 });
          for (const s of samples) {
            const limit = aimd.onSample(s);
            expect(limit).toBeGreaterThanOrEqual(2);
            expect(limit).toBeLessThanOrEqual(12);
          }
        },
      ),
    );
  });

  it('moves the wrapper semaphore limit down after provider 429s', async () => {
    const delegate = new FakeLlm(async function* () {
      yield* [];
      throw new ApiError({ status: 429, message: '{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}' });
    });
    const llm = new RateLimitedLlm({
      delegate,
      name: 'aimd',
      maxConcurrent: 8,
      maxAttempts: 1,
      estimatedTokens: 1,
      registry: new Registry(),
      adaptiveLimit: new AimdLimit({ initial: 8, max: 8, backoffRatio: 0.5 }),
    });
    await consume(llm.generateContentAsync(request('a')));
    expect(llm.snapshot().permitsLimit).toBe(4);
    const ok = new RateLimitedLlm({
      delegate: new FakeLlm(async function* () {
        yield textResponse('ok', 1);
      }),
      name: 'aimd-ok',
      maxConcurrent: 1,
      estimatedTokens: 1,
      registry: new Registry(),
      adaptiveLimit: new AimdLimit({ initial: 1, max: 3 }),
    });
    await consume(ok.generateContentAsync(request('a')));
    expect(ok.snapshot().permitsLimit).toBe(2);
  });
});

describe('replicaShare', () => {
  it('splits the worked example: 90 % of 1 M TPM over 3 replicas', () => {
    expect(replicaShare({ tokensPerMinute: 1_000_000, maxConcurrent: 30, replicas: 3 })).toEqual({
      tokensPerMinute: 300_000,
      maxConcurrent: 10,
    });
  });

  it('property: the fleet never exceeds headroom × quota', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e8 }), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 50 }), (tpm, conc, replicas) => {
        const share = replicaShare({ tokensPerMinute: tpm, maxConcurrent: conc, replicas });
        expect(share.tokensPerMinute * replicas).toBeLessThanOrEqual(tpm * 0.9 + 1e-6);
        expect(share.maxConcurrent).toBeGreaterThanOrEqual(1);
      }),
    );
  });

  it('rejects bad input with the field named', () => {
    expect(() => replicaShare({ tokensPerMinute: 1000, maxConcurrent: 3, replicas: 0 })).toThrow(/replicas/);
    expect(() => replicaShare({ tokensPerMinute: 1000, maxConcurrent: 3, replicas: 2, headroom: 2 })).toThrow(/headroom/);
  });
});

describe('RateLimitedLlm options', () => {
  it('rejects bad options with the field named', () => {
    const delegate = new FakeLlm(async function* () {});
    expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 0, registry: new Registry() })).toThrow(/maxConcurrent/);
    expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 1, maxWaitMs: -1, registry: new Registry() })).toThrow(/maxWaitMs/);
    expect(() => new RateLimitedLlm({ delegate, name: '', maxConcurrent: 1, registry: new Registry() })).toThrow(/name/);
    expect(() => new RateLimitedLlm({ delegate, name: 'x', registry: new Registry() })).toThrow(/maxConcurrent/);
  });
});

describe('the wrapper\'s acquire-time buckets follow its maxWait', () => {
  it('a wrapper exports its maxWait as a gauge and its acquire histogram ends just above it', async () => {
    const registry = new Registry();
    const model = new RateLimitedLlm({ delegate: new FakeLlm(async function* () { yield textResponse('ok'); }), name: 'short-wait', maxConcurrent: 1, maxWaitMs: 300, registry });
    await consume(model.generateContentAsync(request('a', 'hi')));
    const text = await registry.metrics();
    expect(text).toContain(`${limiterMetrics.maxWait.name}{limiter="short-wait"} 0.3`);
    const bounds = [...text.matchAll(new RegExp(`${limiterMetrics.acquireDuration.name}_bucket\\{[^}]*le="([^"]+)"`, 'g'))].map((m) => m[1]);
    expect([...new Set(bounds)]).toEqual([...acquireSecondsBuckets(0.3).map(String), '+Inf']);
    model.close();
  });

  it('refuses a maxWait outside [1 ms, 1 h] naming the field', () => {
    const delegate = new FakeLlm(async function* () {});
    expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 1, maxWaitMs: 0.5, registry: new Registry() })).toThrow(/maxWaitMs/);
    expect(() => new RateLimitedLlm({ delegate, name: 'x', maxConcurrent: 1, maxWaitMs: 3_600_001, registry: new Registry() })).toThrow(/maxWaitMs/);
  });
});
