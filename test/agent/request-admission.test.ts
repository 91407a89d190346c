// Request admission in the agent service, over real sockets against the mock provider: a
// burst of requests each served whole, and a request the budget cannot fund in time shed
// whole with 429 + Retry-After before it makes a single provider call.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText, type Stack, startStack } from './stack.ts';

describe('request admission: a burst served whole', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(100), { permits: 4, maxWaitMs: 30_000 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('10 simultaneous requests on 4 permits all come back whole, each admitted once', async () => {
    await stack.run('review', { document: 'warm-up' });
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => stack.run('review', { document: `doc ${i}`, userId: `u${i}` })));
    for (const r of responses) {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.missingBranches).toEqual([]);
    }
    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'admitted' })).toBe(11);
    expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'completed' })).toBe(11);
    expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'partial' })).toBe(0);
    expect(sumOfMetric(text, limiterMetrics.wastedTokens.name)).toBe(0);
    expect(sumOfMetric(text, limiterMetrics.requestDeadline.name)).toBe(60);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
  });
});

describe('request admission: a request that cannot be funded in time', () => {
  let stack: Stack;
  // ~10,000 input tokens a call: a review request counts ~52,000; the budget holds 80,000 a minute.
  const document = 'x'.repeat(40_000);
  beforeAll(async () => {
    // The calls' time is stated: a 5 s deadline fits the tree's chain at 100 ms a call (at the 20 s default it would not, and the start is refused).
    stack = await startStack(fastMock(50), { permits: 10, tokensPerMinute: 80_000, requestDeadlineMs: 5_000, expectedCallMs: 100 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('is answered 429 at once with Retry-After, makes no provider call, and is counted shed', async () => {
    const warm = await stack.run('review', { document });
    expect(warm.status, JSON.stringify(warm.body)).toBe(200);
    const callsBefore = stack.probe.calls.length;
    const res = await fetch(`${stack.agent.url}/v1/agents/review/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document }),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(2);
    const body = (await res.json()) as { error: { code: string; reason: string; retryAfterSeconds: number; message: string } };
    expect(body.error.code).toBe('REQUEST_SHED');
    expect(body.error.reason).toBe('deadline');
    expect(body.error.message).toMatch(/request shed by limiter "gemini"/);
    expect(stack.probe.calls.length).toBe(callsBefore);
    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'shed' })).toBe(1);
    expect(sumOfMetric(text, 'agent_requests_total', { status: '429' })).toBe(1);
  });
});

describe('request admission on serve: a two-model tree, ADK protocol', () => {
  let mock: MockProvider;
  let served: ServedAgent;
  const text = 'y'.repeat(20_000);
  beforeAll(async () => {
    mock = await startMockProvider(fastMock(15) as Parameters<typeof startMockProvider>[0], { port: 0 });
    served = await startServe({
      agent: fileURLToPath(new URL('../fixtures/agents/loop_tools.ts', import.meta.url)),
      port: 0,
      providerUrl: mock.url,
      permits: 3,
      tokensPerMinute: 60_000, // a request counts ~41,000 on flash and ~5,000 on pro
      requestDeadlineMs: 1_000,
      expectedCallMs: 50,
      httpTimeoutMs: 10_000,
    });
  });
  afterAll(async () => {
    await served?.close();
    await mock?.close();
  });

  async function run(path: '/run' | '/run_sse', sessionId: string): Promise<Response> {
    await post(`${served.url}/apps/loop_tools/users/u/sessions/${sessionId}`, {});
    return post(`${served.url}${path}`, { appName: 'loop_tools', userId: 'u', sessionId, newMessage: { role: 'user', parts: [{ text }] } });
  }

  it('funds the request on both models; one it cannot fund in time is 429 with Retry-After and the error on /run and /run_sse', async () => {
    const warm = await run('/run', 's1');
    expect(warm.status).toBe(200);
    const callsBefore = sumOfMetric(await metricsText(mock.url), 'mock_provider_requests_total');
    for (const [path, session] of [['/run', 's2'], ['/run_sse', 's3']] as const) {
      const shed = await run(path, session);
      expect(shed.status, path).toBe(429);
      expect(Number(shed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await shed.json()) as { error: string }).error).toMatch(/^request shed by limiter/);
    }
    expect(sumOfMetric(await metricsText(mock.url), 'mock_provider_requests_total')).toBe(callsBefore);
    const metrics = await metricsText(served.url);
    // The warm-up was admitted on both limiters of the tree, each with its own count.
    expect(sumOfMetric(metrics, limiterMetrics.requests.name, { limiter: 'gemini-2_5-pro', outcome: 'admitted' })).toBe(1);
    expect(sumOfMetric(metrics, limiterMetrics.requests.name, { limiter: 'gemini-2_5-flash', outcome: 'admitted' })).toBe(1);
    // Every limiter of the tree counts each request it decided on.
    expect(sumOfMetric(metrics, limiterMetrics.requests.name, { limiter: 'gemini-2_5-flash', outcome: 'shed' })).toBe(2);
    expect(sumOfMetric(metrics, limiterMetrics.permitsInUse.name)).toBe(0);
  });
});

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}
