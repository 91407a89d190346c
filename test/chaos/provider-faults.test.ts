// Chaos matrix: every provider fault the mock injects (500, 503, connection reset, stall,
// stream error, random 429s) × every tree × streaming on and off. One mock serves all
// cases (its admin API switches the fault); two agents run in-process, one unary and one
// streaming. Each case checks, from both sides' /metrics:
//   - every request is answered 200 with an outcome for every branch;
//   - the mock saw exactly the attempts the limiter made (calls + retries), its 429s are
//     the limiter's rate_limited count, its 200s (less streams it broke) the ok calls, and
//     its 500s, 503s, dropped connections (plus broken streams) the failed calls;
//   - permits in use and waiting calls are back to 0, and no permit was reclaimed.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVIEWERS } from '../../agent/reviewers.ts';
import { type AgentService, startAgentService } from '../../agent/service.ts';
import { TREE_NAMES, type TreeName } from '../../agent/tree-shapes.ts';
import { limiterMetrics } from '../../instrumentation/index.ts';
import { type FaultsConfig, faultsSchema, type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, type RunResponse } from '../agent/stack.ts';
import { mock as mockNames } from '../../dashboards/config.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

/** Requests per case, sent at once. */
const REQUESTS = 4;
/** The agents' provider HTTP timeout: far above a call (5 ms), short enough for the stall case. */
const HTTP_TIMEOUT_MS = 1_000;
/** Fault probability in each case: high enough that a few requests meet the fault many times. */
const P = 0.35;

const FAULTS: { name: string; faults: Partial<FaultsConfig>; throttleProbability?: number }[] = [
  { name: 'http 500', faults: { http500Probability: P } },
  { name: 'http 503', faults: { http503Probability: P } },
  { name: 'reset', faults: { connectionResetProbability: P } },
  // The mock drops a stalled connection after 200 ms ...
  { name: 'stall', faults: { stallProbability: P, stallMs: 200 } },
  // ... or holds it until the agent's HTTP timeout gives up on it.
  { name: 'stall past http timeout', faults: { stallProbability: P, stallMs: 600_000 } },
  // Streams only: in the unary cases nothing is injected, a baseline the same relations hold for.
  { name: 'stream error', faults: { streamErrorProbability: P, streamErrorAfterChunks: 1 } },
  { name: '429', faults: {}, throttleProbability: P },
];

/** Each tree's request body and the branches its answer reports (a Record, so a new tree must be added here). */
const WIDE_BRANCHES = 3;
const TREES: Record<TreeName, { body: Record<string, unknown>; branches: number }> = {
  review: { body: {}, branches: REVIEWERS.length + 1 },
  'review-workflow': { body: {}, branches: REVIEWERS.length + 1 },
  wide: { body: { branches: WIDE_BRANCHES, width: WIDE_BRANCHES }, branches: WIDE_BRANCHES + 1 },
  tools: { body: {}, branches: 3 }, // two tool-using reviewers and the synthesizer
};

/** Every fault off (the mock's defaults); a case turns one on. */
const NO_FAULTS = faultsSchema.parse({});

let mock: MockProvider;
const agents = new Map<'unary' | 'streaming', AgentService>();
const table: string[][] = [];

beforeAll(async () => {
  // Quotas far above the matrix's traffic: every 429 is an injected one.
  mock = await startMockProvider(fastMock(5, { requestsPerMinute: 10_000_000, tokensPerMinute: 1_000_000_000 }) as Parameters<typeof startMockProvider>[0], { port: 0 });
  const common = { port: 0, providerUrl: mock.url, httpTimeoutMs: HTTP_TIMEOUT_MS, tokensPerMinute: 1_000_000_000, toolDelayMs: 5, shutdownGraceMs: 1_000 };
  agents.set('unary', await startAgentService({ ...common, streaming: false }));
  agents.set('streaming', await startAgentService({ ...common, streaming: true }));
});

afterAll(async () => {
  await Promise.allSettled([...agents.values()].map((agent) => agent.close()));
  await mock?.close();
  const header = ['case', 'requests', 'answered', 'permits after', 'mock: requests / 200 (broken streams) / 429 / 5xx / dropped', 'agent: attempts / ok / rate-limited / error', 'equal'];
  const rows = [header, ...table];
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
  console.log(['', line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...table.map(line)].join('\n'));
});

async function setFaults(fault: (typeof FAULTS)[number], seed: number): Promise<void> {
  const response = await fetch(`${mock.url}/admin/config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ faults: { ...NO_FAULTS, ...fault.faults }, throttleProbability: fault.throttleProbability ?? 0, seed }),
  });
  expect(response.status).toBe(200);
}

async function scrape(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

/** The mock counts a request when its response closes; wait until none is open. */
async function mockIdle(): Promise<string> {
  for (;;) {
    const text = await scrape(mock.url);
    if (sumOfMetric(text, mockNames.inFlight) === 0) return text;
    await sleep(10);
  }
}

async function run(agent: AgentService, tree: string, body: Record<string, unknown>, i: number): Promise<{ status: number; body: RunResponse }> {
  const response = await fetch(`${agent.url}/v1/agents/${tree}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ document: `chaos document ${i}: function f(x) { return eval(x); }`, ...body }),
  });
  return { status: response.status, body: (await response.json()) as RunResponse };
}

const L = limiterMetrics;
let seed = 0;

describe('provider faults × trees × streaming', () => {
  for (const mode of ['unary', 'streaming'] as const) {
    for (const fault of FAULTS) {
      for (const tree of TREE_NAMES) {
        const { body, branches } = TREES[tree];
        const name = `${fault.name} · ${tree} · ${mode}`;
        it(name, async () => {
          const agent = agents.get(mode)!;
          await setFaults(fault, ++seed);
          const mockBefore = await mockIdle();
          const agentBefore = await scrape(agent.url);

          const results = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => run(agent, tree, body, i)));

          const mockAfter = await mockIdle();
          const agentAfter = await scrape(agent.url);
          // What this case added to a counter: the after scrape less the before one.
          const since = (before: string, after: string, metric: string, labels: Record<string, string> = {}) =>
            sumOfMetric(after, metric, labels) - sumOfMetric(before, metric, labels);
          const m = (status: string) => since(mockBefore, mockAfter, mockNames.requests, { status });
          const a = (metric: string, labels: Record<string, string> = {}) => since(agentBefore, agentAfter, metric, labels);
          const mockRequests = since(mockBefore, mockAfter, mockNames.requests);
          const brokenStreams = since(mockBefore, mockAfter, mockNames.faults, { fault: 'stream_error' });
          const mock5xx = m('500') + m('503');
          const calls = a(L.calls.name);
          const attempts = calls + a(L.retries.name);
          const ok = a(L.calls.name, { outcome: 'ok' });
          const failed = a(L.calls.name, { outcome: 'error' });
          const snapshot = agent.limiter.snapshot();
          const answered = results.filter((r) => r.status === 200 && r.body.branches?.length === branches && r.body.branches.every((b) => b.outcome !== 'missing')).length;
          const equal =
            mockRequests === attempts &&
            m('429') === a(L.rateLimited.name) &&
            m('200') - brokenStreams === ok &&
            mock5xx + m('aborted') + brokenStreams === failed;
          table.push([
            name,
            String(REQUESTS),
            String(answered),
            `${snapshot.permitsInUse} in use, ${snapshot.waiting} waiting`,
            `${mockRequests} / ${m('200')} (${brokenStreams}) / ${m('429')} / ${mock5xx} / ${m('aborted')}`,
            `${attempts} / ${ok} / ${a(L.rateLimited.name)} / ${failed}`,
            equal ? 'yes' : 'NO',
          ]);

          for (const r of results) {
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            expect(r.body.branches.map((b) => b.outcome).filter((o) => o === 'missing'), JSON.stringify(r.body.branches)).toEqual([]);
            expect(r.body.branches).toHaveLength(branches);
          }
          // What the mock answered is what the limiter tried, attempt for attempt.
          expect(mockRequests).toBeGreaterThan(0);
          expect(mockRequests).toBe(attempts);
          expect(m('429')).toBe(a(L.rateLimited.name));
          expect(ok).toBe(m('200') - brokenStreams);
          expect(failed).toBe(mock5xx + m('aborted') + brokenStreams);
          // No call timed out waiting or was cancelled; nothing leaked.
          expect(a(L.timeouts.name)).toBe(0);
          expect(a(L.calls.name, { outcome: 'cancelled' }) + a(L.calls.name, { outcome: 'timeout' })).toBe(0);
          expect(a(L.permitsReclaimed.name)).toBe(0);
          expect(snapshot).toMatchObject({ permitsInUse: 0, waiting: 0 });
          expect(sumOfMetric(agentAfter, L.permitsInUse.name)).toBe(0);
          expect(sumOfMetric(agentAfter, L.waitingCalls.name)).toBe(0);
        });
      }
    }
  }
});
