// One `review` request end to end: real service, real ADK tree, real genai client, the mock
// provider. 5 calls, the 4 reviewers overlapping, the synthesizer after them, and the
// limiter's token counters agreeing with what the mock counted.
//
// `wide` with N = 20 and k = 4: one request never has more than 4 calls in flight, even
// with permits to spare.
//
// `tools`: reviewers call a slow function tool and an AgentTool whose inner agent uses the
// same limited model. With ONE permit (and a mock that allows one concurrent call) it
// still completes: the permit is held for the model call only, not while tools run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { fastMock, metricsText, ProviderProbe, type Stack, startStack } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

const CALL_MS = 300;

describe('review tree', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(CALL_MS));
  });
  afterAll(async () => {
    await stack?.close();
  });

  for (const tree of ['review', 'review-workflow']) {
    it(`${tree}: one request makes exactly 5 calls, 4 overlapping, the synthesizer after all 4`, async () => {
      const before = stack.probe.calls.length;
      const { status, body } = await stack.run(tree, { document: 'function add(a, b) { return eval(a + b); }' });
      expect(status, JSON.stringify(body)).toBe(200);
      const calls = stack.probe.calls.slice(before);
      expect(calls).toHaveLength(5);
      expect(calls.every((c) => c.status === 200)).toBe(true);
      const reviewers = calls.filter((c) => c.agent !== 'synthesizer');
      expect(reviewers.map((c) => c.agent).sort()).toEqual(['correctness', 'security', 'style', 'tests']);
      const synthesizer = calls.find((c) => c.agent === 'synthesizer')!;
      expect(ProviderProbe.peakOverlap(reviewers)).toBe(4);
      expect(synthesizer.start).toBeGreaterThanOrEqual(Math.max(...reviewers.map((c) => c.end!)));

      expect(body.modelCalls).toBe(5);
      expect(body.missingBranches).toEqual([]);
      expect(body.branches.map((b) => `${b.name}:${b.outcome}`)).toEqual([
        'correctness:ok',
        'security:ok',
        'style:ok',
        'tests:ok',
        'synthesizer:ok',
      ]);
      expect(body.text.length).toBeGreaterThan(0);
      expect(body.tokens.actual).toBeGreaterThan(0);
      expect(body.tokens.reserved).toBeGreaterThan(0);
    });
  }

  it('limiter token counters match the mock usage; agent metrics count the request', async () => {
    const agentText = await metricsText(stack.agent.url);
    const mockText = await metricsText(stack.mock.url);
    const input = sumOfMetric(mockText, 'mock_provider_tokens_total', { type: 'input' });
    const output = sumOfMetric(mockText, 'mock_provider_tokens_total', { type: 'output' });
    const actual = sumOfMetric(agentText, limiterMetrics.tokensActual.name, { limiter: 'gemini' });
    const reserved = sumOfMetric(agentText, limiterMetrics.tokensReserved.name, { limiter: 'gemini' });
    expect(input).toBeGreaterThan(0);
    // The limiter settles against the provider's reported usage in counted tokens (input by
    // default, as Gemini's per-minute quota counts), token for token.
    expect(output).toBeGreaterThan(0);
    expect(actual).toBe(input);
    // The reservation is the input estimated by the same rule as the mock.
    expect(reserved).toBeGreaterThanOrEqual(input);
    expect(sumOfMetric(agentText, limiterMetrics.calls.name, { outcome: 'ok' })).toBe(10);
    expect(sumOfMetric(agentText, limiterMetrics.tokensActual.name, { agent: 'synthesizer' })).toBeGreaterThan(0);
    expect(sumOfMetric(agentText, 'agent_requests_total', { tree: 'review', status: '200' })).toBe(1);
    expect(sumOfMetric(agentText, 'agent_branch_outcomes_total', { tree: 'review', branch: 'security', outcome: 'ok' })).toBe(1);
    expect(sumOfMetric(agentText, 'agent_model_calls_per_request_sum', { tree: 'review' })).toBe(5);
    expect(sumOfMetric(agentText, limiterMetrics.permitsInUse.name, { limiter: 'gemini' })).toBe(0);
  });
});

describe('provider 500s', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(20, { faults: { http500Probability: 1 } }));
  });
  afterAll(async () => {
    await stack?.close();
  });

  for (const tree of ['review', 'review-workflow']) {
    it(`${tree}: every call failing still answers 200 with every branch's outcome`, async () => {
      const { status, body } = await stack.run(tree, { document: 'x' });
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.branches.map((b) => `${b.name}:${b.outcome}`)).toEqual([
        'correctness:error',
        'security:error',
        'style:error',
        'tests:error',
        'synthesizer:error',
      ]);
      expect(body.text).toBe('');
    });

    it(`${tree}: with 30 % of calls failing, every request answers 200 and the finished reviews are kept`, async () => {
      await fetch(`${stack.mock.url}/admin/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ faults: { http500Probability: 0.3 }, seed: 5 }),
      });
      try {
        // Concurrent requests draw from the seeded stream in arrival order, which varies, so a
        // batch of 10 may see no failed synthesizer (0.7^10 ≈ 3 %); batches repeat until one does.
        const synthFailed: Awaited<ReturnType<Stack['run']>>[] = [];
        for (let batch = 0; batch < 5 && synthFailed.length === 0; batch++) {
          const results = await Promise.all(Array.from({ length: 10 }, (_, i) => stack.run(tree, { document: `doc ${batch}.${i}` })));
          for (const { status, body } of results) {
            expect(status, JSON.stringify(body)).toBe(200);
            expect(body.branches).toHaveLength(5);
            for (const b of body.branches) expect(['ok', 'error']).toContain(b.outcome);
          }
          synthFailed.push(...results.filter((r) => r.body.branches.at(-1)?.outcome === 'error'));
        }
        // Some synthesizer calls fail: the reviews that finished are still reported. One such
        // request may have lost all four reviews too (0.3^4 each), so it is asked of them all.
        expect(synthFailed.length).toBeGreaterThan(0);
        expect(synthFailed.some((r) => r.body.branches.slice(0, 4).some((b) => b.outcome === 'ok'))).toBe(true);
      } finally {
        // The next test expects every call to fail, whatever happened here.
        await fetch(`${stack.mock.url}/admin/config`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ faults: { http500Probability: 1 } }),
        });
      }
    });
  }
});

describe('review tree, streaming', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(100), { streaming: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('streams every call over SSE; partial chunks do not count as answers or double tokens', async () => {
    const { status, body } = await stack.run('review', { document: 'stream me' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(stack.probe.calls).toHaveLength(5);
    expect(stack.probe.calls.every((c) => c.path.includes(':streamGenerateContent?alt=sse'))).toBe(true);
    expect(body.missingBranches).toEqual([]);
    expect(body.text.length).toBeGreaterThan(0);
    const mockText = await metricsText(stack.mock.url);
    // Counted tokens are input tokens by default; streamed partials are not counted again.
    const mockTokens = sumOfMetric(mockText, 'mock_provider_tokens_total', { type: 'input' });
    expect(body.tokens.actual).toBe(mockTokens);
  });
});

describe('wide tree', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(150), { permits: 20 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('N = 20, k = 4: 21 calls, never more than 4 in flight', async () => {
    const { status, body } = await stack.run('wide', { document: 'a wide document', branches: 20, width: 4 });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.modelCalls).toBe(21);
    expect(body.branches).toHaveLength(21);
    expect(body.missingBranches).toEqual([]);
    const calls = stack.probe.calls;
    expect(calls).toHaveLength(21);
    expect(ProviderProbe.peakOverlap(calls)).toBe(4);
    expect(stack.probe.peakInFlight).toBe(4);
    expect(calls.at(-1)?.agent).toBe('synthesizer');
  });
});

describe('tools tree', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(40, { maxConcurrent: 1 }), { permits: 1, maxWaitMs: 20_000, toolDelayMs: 150 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('AgentTool with maxConcurrent 1 completes (no deadlock)', async () => {
    const { status, body } = await stack.run('tools', { document: 'const x = eval(input);' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.missingBranches).toEqual([]);
    expect(body.branches.map((b) => b.name)).toEqual(['security', 'tests', 'synthesizer']);
    const agents = stack.probe.calls.map((c) => c.agent);
    // Per reviewer: a call that asks for the tools, the inner explainer, the answer.
    expect(agents.filter((a) => a === 'explainer')).toHaveLength(2);
    expect(agents.filter((a) => a === 'security')).toHaveLength(2);
    expect(agents.filter((a) => a === 'tests')).toHaveLength(2);
    expect(agents.at(-1)).toBe('synthesizer');
    expect(body.modelCalls).toBe(7);
    expect(stack.probe.peakInFlight).toBe(1);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
  });
});
