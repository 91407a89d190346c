// The HTTP boundary: bad input answers 4xx naming the problem and the service keeps
// serving; a client that disconnects aborts its run; a non-Error thrown out of ADK
// answers 500 with a clear body and leaks no permit.
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { BaseLlm, type LlmRequest, type LlmResponse } from '@google/adk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { MAX_BODY_BYTES } from '../../agent/request-schema.ts';
import { fetchAgentShapes } from '../../loadtest/measure/agent-shapes.ts';
import { openSocket } from '../raw-socket.ts';
import { fastMock, metricsText, type Stack, startStack } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

async function post(url: string, body: string, contentType = 'application/json') {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as { error?: string } };
}

describe('bad requests', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(20));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('GET /v1/agents publishes each tree and its model calls per request, as the load-test side reads it', async () => {
    const res = await fetch(`${stack.agent.url}/v1/agents`);
    expect(res.status).toBe(200);
    const shapes = await fetchAgentShapes(stack.agent.url);
    expect(Object.keys(shapes)).toEqual(['review', 'review-workflow', 'wide', 'tools']);
    expect(shapes.review).toEqual({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1, branchOutputsPerStep: 2 });
    expect(shapes.wide).toBeNull();
  });

  it('answers 4xx with a clear message and keeps serving', async () => {
    const run = (tree: string) => `${stack.agent.url}/v1/agents/${tree}/run`;
    const cases: [string, string, number, RegExp][] = [
      ['review', '{"document": "x",', 400, /malformed JSON/],
      ['nope', '{"document":"x"}', 404, /unknown tree "nope".*review/],
      ['wide', '{"document":"x","width":0}', 400, /width: Too small/],
      ['wide', '{"document":"x","width":10000}', 400, /width: Too big/],
      ['review', '{"width":2}', 400, /document:/],
      ['review', '{"document":"x","trafficClass":"bulk"}', 400, /trafficClass:/],
      ['review', '[1,2]', 400, /body:/],
      ['review', JSON.stringify({ document: 'x'.repeat(MAX_BODY_BYTES + 10) }), 413, /too large/],
    ];
    for (const [tree, body, status, message] of cases) {
      const r = await post(run(tree), body);
      expect(r.status, `${tree} ${body.slice(0, 40)}`).toBe(status);
      expect(r.body.error).toMatch(message);
    }
    const plain = await post(run('review'), 'document=x', 'text/plain');
    expect(plain.status).toBe(415); // as the mock provider answers
    expect(plain.body.error).toBe('content-type must be application/json (got "text/plain")');
    expect(stack.probe.calls).toHaveLength(0); // nothing reached the provider

    const good = await stack.run('review', { document: 'still serving?' });
    expect(good.status).toBe(200);
    expect((await fetch(`${stack.agent.url}/healthz`)).status).toBe(200);
    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, 'agent_requests_total', { status: '400' })).toBeGreaterThanOrEqual(6);
    expect(sumOfMetric(text, 'agent_requests_total', { tree: 'unknown', status: '404' })).toBe(1);
  });

  it('requests the body parser rejects are counted in agent_requests_total with their status', async () => {
    const count = async (labels: Record<string, string>) => {
      return sumOfMetric(await metricsText(stack.agent.url), 'agent_requests_total', labels);
    };
    const cases: { path: string; body: string; contentType?: string; tree: string; status: number; message: RegExp }[] = [
      { path: 'review', body: '{"document": ', tree: 'review', status: 400, message: /malformed JSON/ },
      { path: 'wide', body: 'null', tree: 'wide', status: 400, message: /malformed JSON/ },
      { path: 'tools', body: JSON.stringify({ document: 'x'.repeat(MAX_BODY_BYTES + 10) }), tree: 'tools', status: 413, message: /too large/ },
      { path: 'review', body: '{"document":"x"}', contentType: 'application/json; charset=latin9', tree: 'review', status: 415, message: /charset/ },
      { path: '%E0%A4%A', body: '{"document":"x"}', tree: 'unknown', status: 400, message: /.+/ },
    ];
    for (const c of cases) {
      const labels = { tree: c.tree, status: String(c.status) };
      const before = await count(labels);
      const r = await post(`${stack.agent.url}/v1/agents/${c.path}/run`, c.body, c.contentType);
      expect(r.status, `${c.path} ${c.body.slice(0, 20)}`).toBe(c.status);
      expect(r.body.error).toMatch(c.message);
      expect(await count(labels), `${c.path} ${c.body.slice(0, 20)} counted`).toBe(before + 1);
    }
  });

  it('a client that leaves mid-body counts as 499, not as a 400 it never saw', async () => {
    const count = async (status: string) => {
      return sumOfMetric(await metricsText(stack.agent.url), 'agent_requests_total', { tree: 'review', status });
    };
    const [gone, bad] = [await count('499'), await count('400')];
    const socket = await openSocket(stack.agent.port);
    socket.write('POST /v1/agents/review/run HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"document":"x');
    await sleep(50);
    socket.destroy();
    while ((await count('499')) === gone && (await count('400')) === bad) await sleep(10);
    expect(await count('499')).toBe(gone + 1);
    expect(await count('400')).toBe(bad);
  });
});

describe('client disconnect', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(3_000));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('aborts the run: the provider calls close, permits return, the request counts as 499', async () => {
    const started = performance.now();
    await new Promise<void>((resolve) => {
      const req = request(`${stack.agent.url}/v1/agents/review/run`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      req.on('error', () => resolve());
      req.end(JSON.stringify({ document: 'slow one' }));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 300);
    });
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && (stack.probe.inFlight > 0 || stack.agent.limiter.snapshot().permitsInUse > 0)) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(stack.probe.calls).toHaveLength(4);
    for (const call of stack.probe.calls) expect(call.end! - started).toBeLessThan(2_000); // long before the 3 s answer
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await metricsText(stack.agent.url);
      if (sumOfMetric(text, 'agent_requests_total', { status: '499' }) === 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(sumOfMetric(text, 'agent_requests_total', { tree: 'review', status: '499' })).toBe(1);
  });
});

/** A model that throws a plain object for one agent: what ADK rethrows out of runAsync. */
class ThrowsNonError extends BaseLlm {
  constructor() {
    super({ model: 'gemini-2.5-flash' });
  }
  async *generateContentAsync(request: LlmRequest): AsyncGenerator<LlmResponse, void> {
    const agent = request.config?.labels?.adk_agent_name;
    await new Promise((r) => setTimeout(r, agent === 'style' ? 20 : 100));
    if (agent === 'style') throw { reason: 'a plain object, not an Error' };
    yield { content: { role: 'model', parts: [{ text: `review by ${agent}` }] }, usageMetadata: { totalTokenCount: 10 } };
  }
  async connect(): Promise<never> {
    throw new Error('live connections are not supported');
  }
}

describe('a non-Error thrown out of runAsync', () => {
  let stack: Stack;
  beforeAll(async () => {
    // The delegate model is the fake here: the test is about the service's handling.
    stack = await startStack(fastMock(20), { permits: 4 }, new ThrowsNonError());
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers 500 with a clear body and leaks no permit', async () => {
    const { status, body } = await stack.run('review', { document: 'x' });
    expect(status).toBe(500);
    expect(body.error).toMatch(/review.*non-Error value \(object\).*a plain object, not an Error/);
    // The siblings' model calls end on their own; their permits come back although ADK
    // never resumes their generators.
    await new Promise((r) => setTimeout(r, 200));
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
    const text = await metricsText(stack.agent.url);
    expect(sumOfMetric(text, limiterMetrics.permitsInUse.name, { limiter: 'gemini' })).toBe(0);
    expect(sumOfMetric(text, 'agent_requests_total', { tree: 'review', status: '500' })).toBe(1);
    // And the service still serves.
    expect((await stack.run('wide', { document: 'y', branches: 2, width: 2 })).status).toBe(200);
  });
});
