// A client that leaves while its request waits at the door (request admission: here behind a
// cold limiter's learner) is a 499, not a 500, in agent_requests_total and the access log,
// in the agent service and in serve (its native run and ADK's /run), and counts as
// "abandoned" in llm_limiter_requests_total.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText, type Stack, startStack } from './stack.ts';

/** Provider latency: the learner's first call holds the others at the door this long. */
const CALL_MS = 2_000;
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/agents/${name}`, import.meta.url));

/** POSTs `body` and drops the connection after `leaveAfterMs`, before any answer. */
function leaveWhileWaiting(url: string, body: unknown, leaveAfterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => resolve());
    req.on('response', () => resolve()); // answered before it left: the test's expectations fail
    req.end(JSON.stringify(body));
    setTimeout(() => {
      req.destroy();
      resolve();
    }, leaveAfterMs);
  });
}

/** A learner's request in flight (a cold limiter admits one at a time), then a second client that leaves at the door. */
async function learnerAndLeaver(url: string, body: unknown, metricsUrl: string, tree: string): Promise<string> {
  const learner = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await new Promise((r) => setTimeout(r, 200));
  await leaveWhileWaiting(url, body, 300);
  expect((await learner).status).toBe(200);
  let text = '';
  await vi.waitFor(
    async () => {
      text = await metricsText(metricsUrl);
      expect(sumOfMetric(text, 'agent_requests_total', { tree, status: '499' })).toBe(1);
    },
    { timeout: 5_000, interval: 25 },
  );
  expect(sumOfMetric(text, 'agent_requests_total', { tree, status: '500' })).toBe(0);
  expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'abandoned' })).toBe(1);
  return text;
}

describe('the agent service: a client that leaves at the door', () => {
  let stack: Stack;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'door-abandon-'));
    stack = await startStack(fastMock(CALL_MS), { accessLog: join(dir, 'access.log') });
  });
  afterAll(async () => {
    await stack?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is 499 in agent_requests_total and the access log, and abandoned in llm_limiter_requests_total', async () => {
    await learnerAndLeaver(`${stack.agent.url}/v1/agents/review/run`, { document: 'door' }, stack.agent.url, 'review');
    await vi.waitFor(async () => expect(await readFile(join(dir, 'access.log'), 'utf8')).toMatch(/"status":499/), { timeout: 5_000, interval: 25 });
    expect(await readFile(join(dir, 'access.log'), 'utf8')).not.toMatch(/"status":500/);
  }, 30_000);
});

describe('serve: a client that leaves at the door', () => {
  let mock: MockProvider;
  let served: ServedAgent;
  beforeAll(async () => {
    mock = await startMockProvider(fastMock(CALL_MS) as Parameters<typeof startMockProvider>[0], { port: 0 });
  });
  afterEach(async () => {
    await served?.close();
  });
  afterAll(async () => {
    await mock?.close();
  });

  it('native run: 499 and abandoned', async () => {
    served = await startServe({ agent: fixture('single_call.ts'), port: 0, providerUrl: mock.url });
    await learnerAndLeaver(`${served.url}/v1/agents/single_call/run`, { document: 'door' }, served.url, 'single_call');
  }, 30_000);

  it("ADK's /run: 499 and abandoned", async () => {
    served = await startServe({ agent: fixture('single_call.ts'), port: 0, providerUrl: mock.url });
    const base = served.url;
    for (const id of ['s1', 's2']) expect((await fetch(`${base}/apps/single_call/users/u/sessions/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200);
    const message = { role: 'user', parts: [{ text: 'door' }] };
    const learner = fetch(`${base}/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ appName: 'single_call', userId: 'u', sessionId: 's1', newMessage: message }) });
    await new Promise((r) => setTimeout(r, 200));
    await leaveWhileWaiting(`${base}/run`, { appName: 'single_call', userId: 'u', sessionId: 's2', newMessage: message }, 300);
    expect((await learner).status).toBe(200);
    let text = '';
    await vi.waitFor(
      async () => {
        text = await metricsText(base);
        expect(sumOfMetric(text, 'agent_requests_total', { tree: 'single_call', status: '499' })).toBe(1);
      },
      { timeout: 5_000, interval: 25 },
    );
    expect(sumOfMetric(text, 'agent_requests_total', { tree: 'single_call', status: '500' })).toBe(0);
    expect(sumOfMetric(text, limiterMetrics.requests.name, { outcome: 'abandoned' })).toBe(1);
  }, 30_000);
});
