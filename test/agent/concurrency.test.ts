// Burst of 10 simultaneous review requests against 10 permits: the mock never sees more
// than 10 calls at once, the 40 reviewer calls are admitted before the synthesizer wave,
// and every permit is back afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { fastMock, metricsText, type Stack, sampleValue, startStack } from './stack.ts';

describe('10 simultaneous review requests, 10 permits', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(120), { permits: 10, maxWaitMs: 30_000 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('never more than 10 calls in flight at the mock; reviewers first, then the synthesizers; permits back to 0', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => stack.run('review', { document: `document number ${i}: x = 1 / 0`, userId: `user${i}` })),
    );
    for (const r of responses) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.modelCalls).toBe(5);
      expect(r.body.missingBranches).toEqual([]);
    }
    const calls = stack.probe.calls;
    expect(calls).toHaveLength(50);
    expect(stack.probe.peakInFlight).toBeLessThanOrEqual(10);
    expect(stack.probe.peakInFlight).toBe(10); // the burst really saturated the permits

    // FIFO admission: the 40 reviewer calls queued first, so all start before any synthesizer.
    const byStart = [...calls].sort((a, b) => a.start - b.start);
    expect(byStart.slice(0, 40).every((c) => c.agent !== 'synthesizer')).toBe(true);
    expect(byStart.slice(40).every((c) => c.agent === 'synthesizer')).toBe(true);
    // Some requests queued for a permit.
    expect(Math.max(...responses.map((r) => r.body.permitWaitMs))).toBeGreaterThan(50);

    const text = await metricsText(stack.agent.url);
    expect(sampleValue(text, limiterMetrics.permitsInUse.name, { limiter: 'gemini' })).toBe(0);
    expect(sampleValue(text, limiterMetrics.waitingCalls.name, { limiter: 'gemini' })).toBe(0);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
    const mockText = await metricsText(stack.mock.url);
    expect(sampleValue(mockText, 'mock_provider_in_flight_requests')).toBe(0);
    expect(sampleValue(mockText, 'mock_provider_requests_total', { status: '200' })).toBe(50);
  });
});
