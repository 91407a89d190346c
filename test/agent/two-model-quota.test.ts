// A two-model tree served with the defaults keeps within the provider's quotas: the mock
// counts per API key and model (as Gemini does), serve gives each model's limiter its own
// model's budget, so traffic above one shared quota but within each model's gets no 429.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText } from './stack.ts';

const TRIP = fileURLToPath(new URL('../fixtures/agents/trip_planner.ts', import.meta.url));
/** Each model's quota, tokens per minute. */
const QUOTA = 40_000;

describe('a two-model tree with per-model quotas', () => {
  let mock: MockProvider;
  let served: ServedAgent;

  beforeAll(async () => {
    mock = await startMockProvider(fastMock(20, { tokensPerMinute: QUOTA }) as Parameters<typeof startMockProvider>[0], { port: 0 });
    // The defaults but the budget: 90 % of each model's quota, as npm start gives it.
    served = await startServe({ agent: TRIP, port: 0, providerUrl: mock.url, tokensPerMinute: QUOTA * 0.9, maxWaitMs: 30_000, httpTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await served?.close();
    await mock?.close();
  });

  it('spends more than one model quota in a minute, with no provider 429', async () => {
    const document = 'Plan a week in Lisbon for two, mid-range hotels, museums and food. '.repeat(20);
    const run = () =>
      fetch(`${served.url}/v1/agents/trip_planner/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ document }),
      }).then((r) => r.json() as Promise<{ branches: { outcome: string }[] }>);
    const answers = await Promise.all(Array.from({ length: 13 }, run));
    const mockText = await metricsText(mock.url);
    const inputTokens = sumOfMetric(mockText, 'mock_provider_tokens_total', { type: 'input' });
    // More than one model's quota went through within the minute: one quota shared by both models would have refused some.
    expect(inputTokens).toBeGreaterThan(QUOTA);
    expect(sumOfMetric(mockText, 'mock_provider_rate_limited_total')).toBe(0);
    const served429 = sumOfMetric(await (await fetch(`${served.url}/metrics`)).text(), 'llm_limiter_rate_limited_total');
    expect(served429).toBe(0);
    for (const answer of answers) for (const b of answer.branches) expect(b.outcome).toBe('ok');
  });
});
