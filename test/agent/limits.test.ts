// Burst of 10 simultaneous review requests against 10 permits, model calls admitted one by
// one (`admission: call`): the mock never sees more than 10 calls at once, the 40 reviewer
// calls are admitted before the synthesizer wave, and every permit is back afterwards.
//
// Excess demand turns into recorded per-branch timeouts, never into failed requests: a
// tight quota at the mock, 2 permits and a short maxWait. Every request still answers
// 200 with each branch's outcome, and the timeouts show in both metric families.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRANCH_OUTCOMES } from '../../agent/outcomes.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { fastMock, metricsText, type Stack, startStack } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

describe('10 simultaneous review requests, 10 permits, per-call admission', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(200), { permits: 10, maxWaitMs: 30_000, admission: 'call' });
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
    // (Arrival at the proxy may trail admission by a few ms, hence the small tolerance.)
    const reviewerStarts = calls.filter((c) => c.agent !== 'synthesizer').map((c) => c.start);
    const synthesizerStarts = calls.filter((c) => c.agent === 'synthesizer').map((c) => c.start);
    expect(reviewerStarts).toHaveLength(40);
    expect(synthesizerStarts).toHaveLength(10);
    expect(Math.min(...synthesizerStarts)).toBeGreaterThan(Math.max(...reviewerStarts) - 20);
    // Some requests queued for a permit.
    expect(Math.max(...responses.map((r) => r.body.permitWaitMs))).toBeGreaterThan(50);

    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, limiterMetrics.permitsInUse.name, { limiter: 'gemini' })).toBe(0);
    expect(sumOfMetric(text, limiterMetrics.waitingCalls.name, { limiter: 'gemini' })).toBe(0);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
    const mockText = await metricsText(stack.mock.url);
    expect(sumOfMetric(mockText, 'mock_provider_in_flight_requests')).toBe(0);
    expect(sumOfMetric(mockText, 'mock_provider_requests_total', { status: '200' })).toBe(50);
  });
});

describe('tight quota and short maxWait', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Per-call admission: what this tests is each branch's own fate at maxWait.
    stack = await startStack(fastMock(250, { requestsPerMinute: 4 }), { permits: 2, maxWaitMs: 200, admission: 'call' });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('some branches time out, every request still gets a 200 with its branch outcomes', async () => {
    const responses = await Promise.all(Array.from({ length: 4 }, (_, i) => stack.run('review', { document: `doc ${i}` })));
    let timeouts = 0;
    let rateLimited = 0;
    let ok = 0;
    for (const r of responses) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // No fan-out is cancelled wholesale: every branch reports its own fate.
      expect(r.body.branches).toHaveLength(5);
      for (const b of r.body.branches) {
        expect(BRANCH_OUTCOMES).toContain(b.outcome);
        if (b.outcome === 'timeout') {
          timeouts++;
          expect(b.errorCode).toBe('RATE_LIMIT_TIMEOUT');
        }
        if (b.outcome === 'rate_limited') rateLimited++;
        if (b.outcome === 'ok') ok++;
      }
      expect(r.body.missingBranches).toEqual(r.body.branches.filter((b) => b.outcome !== 'ok').map((b) => b.name));
      // The synthesizer ran (or was itself limited) even when reviewers were missing.
      expect(r.body.modelCalls).toBeGreaterThanOrEqual(5);
    }
    expect(timeouts).toBeGreaterThan(0);
    expect(ok).toBeGreaterThan(0);

    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, 'agent_branch_outcomes_total', { tree: 'review', outcome: 'timeout' })).toBe(timeouts);
    expect(sumOfMetric(text, 'agent_requests_total', { tree: 'review', status: '200' })).toBe(4);
    expect(sumOfMetric(text, 'agent_branch_outcomes_total', { tree: 'review', outcome: 'rate_limited' })).toBe(rateLimited);
    expect(sumOfMetric(text, limiterMetrics.timeouts.name, { limiter: 'gemini' })).toBeGreaterThanOrEqual(timeouts);
    expect(sumOfMetric(text, limiterMetrics.calls.name, { outcome: 'timeout' })).toBe(timeouts);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
  });
});

describe('--max-waiting: a cap on queued calls', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(200), { permits: 2, maxWaiting: 2 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('calls beyond permits + maxWaiting are refused at once as queue_full; every request still answered', async () => {
    // 3 requests = 12 reviewer calls at once against 2 permits and 2 places in the queue.
    const responses = await Promise.all(Array.from({ length: 3 }, (_, i) => stack.run('review', { document: `doc ${i}` })));
    let refused = 0;
    for (const r of responses) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.branches).toHaveLength(5);
      for (const b of r.body.branches) {
        if (b.outcome === 'timeout') {
          refused++;
          expect(b.errorCode).toBe('RATE_LIMIT_TIMEOUT');
        }
      }
    }
    expect(refused).toBeGreaterThan(0);
    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, limiterMetrics.timeouts.name, { limiter: 'gemini', reason: 'queue_full' })).toBe(refused);
    expect(stack.agent.limiter.snapshot()).toMatchObject({ permitsInUse: 0, waiting: 0 });
  });
});
