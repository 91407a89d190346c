// A cold burst on a deep two-model tree of the suite's own (claims_pipeline: 19 calls, a chain
// of 13, two LoopAgents around pro verifiers that call a flash lookup through an AgentTool),
// served by `serve` over real sockets against the mock provider, 20 requests at once on cold
// limiters: every request is served whole or shed whole, none ends partial, and the provider
// never answers 429. Once with an expected cost per call (a cold burst funded from the
// estimate), once without (one request learns, the others wait at the door).
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { buildClaimsPipeline } from '../fixtures/agents/claims_pipeline.ts';
import { fastMock, metricsText } from './stack.ts';

const APP = 'claims_pipeline';
const BUDGET = 120_000;
// The claim each request carries: ~750 input tokens, in every call of the tree.
const CLAIM = 'The customer reports water damage in the kitchen after a pipe burst on the second floor. '.repeat(35);

let mock: MockProvider | undefined;
let served: ServedAgent | undefined;

afterEach(async () => {
  await served?.close();
  await mock?.close();
  served = undefined;
  mock = undefined;
});

/** The mock with a quota of the budget over 0.9 (the limiter, not the provider, must hold the line) and serve on it. */
async function startServed(expectedTokensPerCall: number | undefined): Promise<string> {
  mock = await startMockProvider({ ...fastMock(40), tokensPerMinute: Math.round(BUDGET / 0.9) } as Parameters<typeof startMockProvider>[0], { port: 0 });
  const file = fileURLToPath(new URL('../fixtures/agents/claims_pipeline.ts', import.meta.url));
  // A fresh tree each time: serve wraps a module's models in place, and the module is imported once per process.
  const loaded = { file, exportName: 'rootAgent', root: buildClaimsPipeline(), appName: APP };
  served = await startServe({
    agent: file,
    port: 0,
    providerUrl: mock.url,
    permits: 4,
    tokensPerMinute: BUDGET,
    expectedCallMs: 200,
    expectedTokensPerCall,
    httpTimeoutMs: 30_000,
  }, loaded);
  return served.url;
}

/** One /run request with `text` in a session of its own; resolves to its status. */
async function runOnce(url: string, user: string, text: string): Promise<number> {
  await post(`${url}/apps/${APP}/users/${user}/sessions/s`, {});
  const res = await post(`${url}/run`, { appName: APP, userId: user, sessionId: 's', newMessage: { role: 'user', parts: [{ text }] } });
  await res.text();
  return res.status;
}

async function outcome(url: string, statuses: number[]): Promise<{ statuses: number[]; metrics: string; provider429s: number }> {
  return { statuses, metrics: await metricsText(url), provider429s: sumOfMetric(await metricsText(mock?.url ?? ''), 'mock_provider_requests_total', { status: '429' }) };
}

async function burst(expectedTokensPerCall: number | undefined): Promise<{ statuses: number[]; metrics: string; provider429s: number }> {
  const url = await startServed(expectedTokensPerCall);
  return outcome(url, await Promise.all(Array.from({ length: 20 }, (_, i) => runOnce(url, `u${i}`, `${i}: ${CLAIM}`))));
}

describe('a cold burst of 20 on a deep two-model tree', () => {
  for (const [label, expected] of [
    ['funded from an expected cost per call', 1_500],
    ['with no expected cost (one learner)', undefined],
  ] as const) {
    it(`${label}: every request whole or shed, none partial, no provider 429`, async () => {
      const { statuses, metrics, provider429s } = await burst(expected);
      for (const status of statuses) expect([200, 429]).toContain(status);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(sumOfMetric(metrics, limiterMetrics.requests.name, { outcome: 'partial' })).toBe(0);
      expect(sumOfMetric(metrics, limiterMetrics.timeouts.name)).toBe(0);
      expect(provider429s).toBe(0);
      expect(sumOfMetric(metrics, limiterMetrics.permitsInUse.name)).toBe(0);
    }, 180_000);
  }
});

describe('requests larger than the ones before them', () => {
  // Requests admitted on what smaller ones taught may still end partial while their calls wait
  // for the difference (never sent on credit); what must hold is the provider's quota.
  it('10x larger requests after small ones, then outputs grown 30x: no provider 429', async () => {
    const url = await startServed(undefined);
    const small = CLAIM.slice(0, 300);
    for (let i = 0; i < 3; i++) expect(await runOnce(url, `warm${i}`, `${i}: ${small}`)).toBe(200);
    // Every call is funded at no less than its own prompt: the large ones take the difference before they are sent.
    const large = await Promise.all(Array.from({ length: 8 }, (_, i) => runOnce(url, `large${i}`, `${i}: ${small.repeat(10)}`)));
    await fetch(`${mock?.url}/admin/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ outputTokens: { kind: 'fixed', value: 600 } }) });
    const grown = await Promise.all(Array.from({ length: 8 }, (_, i) => runOnce(url, `grown${i}`, `${i}: ${small}`)));
    const { statuses, metrics, provider429s } = await outcome(url, [...large, ...grown]);
    for (const status of statuses) expect([200, 429]).toContain(status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    expect(provider429s).toBe(0);
    expect(sumOfMetric(metrics, limiterMetrics.requests.name, { outcome: 'completed' })).toBeGreaterThan(3);
  }, 240_000);
});

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}
