// Excess demand turns into recorded per-branch timeouts, never into failed requests: a
// tight quota at the mock, 2 permits and a short maxWait. Every request still answers
// 200 with each branch's outcome, and the timeouts show in both metric families.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { fastMock, metricsText, type Stack, sampleValue, startStack } from './stack.ts';

describe('tight quota and short maxWait', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(250, { requestsPerMinute: 8 }), { permits: 2, maxWaitMs: 200 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('some branches time out, every request still gets a 200 with its branch outcomes', async () => {
    const responses = await Promise.all(Array.from({ length: 4 }, (_, i) => stack.run('review', { document: `doc ${i}` })));
    let timeouts = 0;
    let ok = 0;
    for (const r of responses) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // No fan-out is cancelled wholesale: every branch reports its own fate.
      expect(r.body.branches).toHaveLength(5);
      for (const b of r.body.branches) {
        expect(['ok', 'timeout', 'rate_limited', 'error']).toContain(b.outcome);
        if (b.outcome === 'timeout') {
          timeouts++;
          expect(b.errorCode).toBe('RATE_LIMIT_TIMEOUT');
        }
        if (b.outcome === 'ok') ok++;
      }
      expect(r.body.missingBranches).toEqual(r.body.branches.filter((b) => b.outcome !== 'ok').map((b) => b.name));
      // The synthesizer ran (or was itself limited) even when reviewers were missing.
      expect(r.body.modelCalls).toBeGreaterThanOrEqual(5);
    }
    expect(timeouts).toBeGreaterThan(0);
    expect(ok).toBeGreaterThan(0);

    const text = await metricsText(stack.agent.url);
    expect(sampleValue(text, 'agent_branch_outcomes_total', { tree: 'review', outcome: 'timeout' })).toBe(timeouts);
    expect(sampleValue(text, 'agent_requests_total', { tree: 'review', status: '200' })).toBe(4);
    expect(sampleValue(text, limiterMetrics.timeouts.name, { limiter: 'gemini' })).toBeGreaterThanOrEqual(timeouts);
    expect(sampleValue(text, limiterMetrics.calls.name, { outcome: 'timeout' })).toBe(timeouts);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
  });
});
