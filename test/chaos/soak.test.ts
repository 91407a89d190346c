// Soak: `serve` (a user's one-agent tree) and the sample agent service, each its own process
// started through the quotascope bin with --expose-gc, under steady load from a few
// concurrent clients against the real mock provider. serve's clients create sessions with a
// little state, run in them, and then either delete them or abandon them, as ADK's own clients
// often do; every fourth serve request is a native run. After a warm-up (enough requests to
// fill --max-sessions), each process's heap is measured after garbage collection, the load
// runs for a fixed time, and the heap is measured again: its growth per 1,000 requests must
// stay under HEAP_GROWTH_BOUND, and no permit may be left in use. Sized for 2 shared cores.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText } from '../agent/stack.ts';

const BIN = fileURLToPath(new URL('../../cli/quotascope.ts', import.meta.url));
const PROBE = fileURLToPath(new URL('./heap-probe.ts', import.meta.url));
const AGENT = fileURLToPath(new URL('../fixtures/agents/single_call.ts', import.meta.url));

/** serve keeps this many sessions (the warm-up abandons more than this). */
const MAX_SESSIONS = 100;
/** Requests before the first heap measurement, per process: fills the session store and warms the code. */
const WARM_UP = 400;
/** How long the measured load runs, ms. */
const MEASURE_MS = 15_000;
/** Clients at once, per process. */
const CLIENTS = 4;
/** Fewer measured requests than this cannot show a growth rate: the soak fails rather than pass on too little. */
const MIN_MEASURED = 300;
/** Heap growth after GC per 1,000 requests, bytes: keeping the sessions serve's clients abandon (16 KB of state each, 3 in 8 requests) would be ~7 MB. */
const HEAP_GROWTH_BOUND = 2 * 1024 * 1024;
/** The provider HTTP timeout of both processes, ms (see beforeAll). */
const HTTP_TIMEOUT_MS = 2_000;
/** State each serve session is created with. */
const SESSION_STATE = { notes: 'x'.repeat(16_384) };

interface Soaked {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
}

/** Starts the bin with the heap probe preloaded; resolves at its "listening on" line. */
async function startSoaked(name: string, args: string[]): Promise<Soaked> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', PROBE, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${output}`)), 120_000);
    const read = (chunk: Buffer) => {
      output += chunk;
      const found = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${output}`)));
  });
  return { name, child, url };
}

/** The process's heap in use after garbage collection, bytes, once the last calls' HTTP timers have fired. */
async function heapAfterGc(soaked: Soaked): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, HTTP_TIMEOUT_MS + 500));
  const answer = once(soaked.child, 'message') as Promise<[{ heapUsed: number }]>;
  soaked.child.send('heap');
  return (await answer)[0].heapUsed;
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Runs `request` from CLIENTS concurrent clients until `count` are done or `until` passes; returns how many ran. */
async function load(request: (i: number) => Promise<void>, limit: { count?: number; until?: number }): Promise<number> {
  let next = 0;
  const more = () => (limit.count === undefined || next < limit.count) && (limit.until === undefined || performance.now() < limit.until);
  const client = async () => {
    while (more()) await request(next++);
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  return next;
}

const failures: string[] = [];
function expectStatus(what: string, res: Response, status: number): void {
  if (res.status !== status) failures.push(`${what}: ${res.status}`);
}

/** One serve request: a session with state and a run in it, then the session deleted (even i) or abandoned (odd i); every fourth a native run. */
async function serveRequest(base: string, i: number): Promise<void> {
  if (i % 4 === 3) {
    const res = await post(`${base}/v1/agents/single_call/run`, { document: `Document ${i}.` });
    expectStatus('native run', res, 200);
    await res.arrayBuffer();
    return;
  }
  const sessions = `${base}/apps/single_call/users/user-${i % 7}/sessions`;
  const created = await post(sessions, { state: SESSION_STATE });
  expectStatus('create session', created, 200);
  const { id } = (await created.json()) as { id: string };
  const run = await post(`${base}/run`, { appName: 'single_call', userId: `user-${i % 7}`, sessionId: id, newMessage: { parts: [{ text: `Question ${i}.` }] } });
  expectStatus('/run', run, 200);
  await run.arrayBuffer();
  if (i % 2 === 0) expectStatus('delete session', await fetch(`${sessions}/${id}`, { method: 'DELETE' }), 204);
}

/** One sample-service request: the wide tree with one branch (two model calls). */
async function agentRequest(base: string, i: number): Promise<void> {
  const res = await post(`${base}/v1/agents/wide/run`, { document: `Document ${i}.`, branches: 1, width: 1 });
  expectStatus('agent run', res, 200);
  await res.arrayBuffer();
}

let mock: MockProvider;
let serve: Soaked;
let agent: Soaked;

beforeAll(async () => {
  mock = await startMockProvider(fastMock(2, { requestsPerMinute: 10_000_000, tokensPerMinute: 1_000_000_000 }) as Parameters<typeof startMockProvider>[0], { port: 0 });
  // @google/genai keeps each successful call's abort signal and timer until the HTTP timeout
  // fires: state bounded by calls per second x the timeout. A short timeout (calls take ~2 ms)
  // lets that plateau be reached in the warm-up, so what is measured is growth without bound.
  const common = ['--port', '0', '--provider-url', mock.url, '--tokens-per-minute', '1000000000', '--http-timeout-ms', String(HTTP_TIMEOUT_MS)];
  [serve, agent] = await Promise.all([
    startSoaked('serve', ['serve', '--agent', AGENT, ...common, '--max-sessions', String(MAX_SESSIONS)]),
    startSoaked('agent', ['agent', ...common]),
  ]);
}, 180_000);

afterAll(async () => {
  for (const soaked of [serve, agent]) {
    if (!soaked || soaked.child.exitCode !== null) continue;
    soaked.child.kill('SIGTERM');
    await once(soaked.child, 'exit');
  }
  await mock?.close();
});

describe('soak: serve and the sample agent service under steady load', () => {
  it('heap growth per 1,000 requests after GC stays under the bound; permits end at 0', async () => {
    const targets = [
      { soaked: serve, request: (i: number) => serveRequest(serve.url, i) },
      { soaked: agent, request: (i: number) => agentRequest(agent.url, i) },
    ];
    await Promise.all(targets.map((t) => load(t.request, { count: WARM_UP })));
    const before = await Promise.all(targets.map((t) => heapAfterGc(t.soaked)));
    const until = performance.now() + MEASURE_MS;
    const measured = await Promise.all(targets.map((t) => load((i) => t.request(WARM_UP + i), { until })));
    const after = await Promise.all(targets.map((t) => heapAfterGc(t.soaked)));

    const rows = targets.map((t, k) => ({
      process: t.soaked.name,
      requests: measured[k],
      heapBeforeMB: +(before[k] / 2 ** 20).toFixed(2),
      heapAfterMB: +(after[k] / 2 ** 20).toFixed(2),
      growthPer1000KB: Math.round(((after[k] - before[k]) / measured[k]) * 1000 / 1024),
    }));
    console.log(`soak (bound ${HEAP_GROWTH_BOUND / 1024} KB per 1,000 requests):\n${rows.map((r) => JSON.stringify(r)).join('\n')}`);

    expect(failures.slice(0, 5)).toEqual([]);
    for (const [k, t] of targets.entries()) {
      expect(measured[k], `${t.soaked.name}: too few requests to measure a growth rate`).toBeGreaterThanOrEqual(MIN_MEASURED);
      expect(((after[k] - before[k]) / measured[k]) * 1000, `${t.soaked.name}: heap growth per 1,000 requests`).toBeLessThan(HEAP_GROWTH_BOUND);
      const metrics = await metricsText(t.soaked.url);
      expect(sumOfMetric(metrics, 'llm_limiter_permits_in_use'), `${t.soaked.name}: permits in use`).toBe(0);
    }
    const serveMetrics = await metricsText(serve.url);
    // The abandoned sessions were evicted, not kept.
    expect(sumOfMetric(serveMetrics, 'agent_sessions_stored')).toBeLessThanOrEqual(MAX_SESSIONS);
    expect(sumOfMetric(serveMetrics, 'agent_sessions_evicted_total', { reason: 'capacity' })).toBeGreaterThan(0);
  }, 180_000);
});
