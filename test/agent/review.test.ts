// One `review` request end to end: real service, real ADK tree, real genai client, the mock
// provider. 5 calls, the 4 reviewers overlapping, the synthesizer after them, and the
// limiter's token counters agreeing with what the mock counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { fastMock, metricsText, ProviderProbe, type Stack, sampleValue, startStack } from './stack.ts';

const CALL_MS = 150;

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
    const input = sampleValue(mockText, 'mock_provider_tokens_total', { type: 'input' });
    const output = sampleValue(mockText, 'mock_provider_tokens_total', { type: 'output' });
    const actual = sampleValue(agentText, limiterMetrics.tokensActual.name, { limiter: 'gemini' });
    const reserved = sampleValue(agentText, limiterMetrics.tokensReserved.name, { limiter: 'gemini' });
    expect(input).toBeGreaterThan(0);
    // The provider's reported totals are what the limiter settles against, token for token.
    expect(actual).toBe(input + output);
    // The reservation counts the input by the same rule as the mock, plus an output estimate.
    expect(reserved).toBeGreaterThanOrEqual(input);
    expect(sampleValue(agentText, limiterMetrics.calls.name, { outcome: 'ok' })).toBe(10);
    expect(sampleValue(agentText, limiterMetrics.tokensActual.name, { agent: 'synthesizer' })).toBeGreaterThan(0);
    expect(sampleValue(agentText, 'agent_requests_total', { tree: 'review', status: '200' })).toBe(1);
    expect(sampleValue(agentText, 'agent_branch_outcomes_total', { tree: 'review', branch: 'security', outcome: 'ok' })).toBe(1);
    expect(sampleValue(agentText, 'agent_model_calls_per_request_sum', { tree: 'review' })).toBe(5);
    expect(sampleValue(agentText, limiterMetrics.permitsInUse.name, { limiter: 'gemini' })).toBe(0);
  });
});
