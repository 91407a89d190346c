// One review request with the default settings (input-counted, like Gemini's TPM and the
// mock's default): the budget is charged exactly the input tokens the mock counted, over
// real sockets with the real genai client, and the output is never charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { fastMock, metricsText, type Stack, startStack } from './stack.ts';

describe('counted tokens end to end', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(20, { outputTokens: { kind: 'fixed', value: 150 } }));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('one review request charges the budget exactly the input tokens the mock counted', async () => {
    const { status, body } = await stack.run('review', { document: 'Lorem ipsum dolor sit amet. '.repeat(700) });
    expect(status).toBe(200);
    expect(body.missingBranches).toEqual([]);
    const mock = await metricsText(stack.mock.url);
    const agent = await metricsText(stack.agent.url);
    const mockInput = sumOfMetric(mock, 'mock_provider_tokens_total', { type: 'input' });
    const mockOutput = sumOfMetric(mock, 'mock_provider_tokens_total', { type: 'output' });
    expect(mockOutput).toBe(5 * 150);
    const actual = sumOfMetric(agent, limiterMetrics.tokensActual.name);
    const windowTokens = sumOfMetric(agent, limiterMetrics.budgetWindow.name);
    expect(actual).toBe(mockInput);
    expect(body.tokens.actual).toBe(mockInput);
    // The rolling guard holds what the budget was charged: the input alone.
    expect(windowTokens).toBe(mockInput);
    const windows = (await (await fetch(`${stack.mock.url}/admin/quota/windows`)).json()) as { windows: { tokens: number }[] };
    expect(windows.windows.reduce((sum, w) => sum + w.tokens, 0)).toBe(mockInput);
  });
});
