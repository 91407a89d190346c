// k6 with protocol adk against ADK's own API server: `adk api_server` from
// @google/adk-devtools serves the suite's own test tree (test/fixtures/adk-apps), its
// Gemini client sent to the mock provider by GOOGLE_GEMINI_BASE_URL alone. The mock's
// /metrics counts the calls; the server's session store holds the events it produced, read
// by a proxy just before k6 deletes each session.
// Then the same scenario against `quotascope serve` on the same tree.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import type { ScenarioFile } from '../../loadtest/scenario/types.ts';
import { runK6 } from '../../loadtest/drive/runner.ts';
import { freePort, ProcessGroup, waitForHealthy } from '../../loadtest/stack/processes.ts';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { startMockProvider } from '../../mock-provider/index.ts';
import { CALLS_PER_MESSAGE } from '../fixtures/adk-apps/fanout_review/agent.ts';
import { instant } from '../mock-provider/helpers.ts';
import { samplesOf } from '../../loadtest/measure/prometheus-text.ts';

const APPS_DIR = join(import.meta.dirname, '..', 'fixtures', 'adk-apps');
const APP = 'fanout_review';
const AUTHORS = ['intake', 'analyst_1', 'analyst_2', 'analyst_3', 'critic', 'decision'];
// What `npx adk` runs: the bin of @google/adk-devtools.
const ADK_CLI = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'adk');

const dir = mkdtempSync(join(tmpdir(), 'qs-adk-protocol-'));
const group = new ProcessGroup(dir);
let mock: Awaited<ReturnType<typeof startMockProvider>>;
let adkUrl: string;

/** Model calls the mock answered, by HTTP status. */
async function mockCalls(): Promise<Record<string, number>> {
  const text = await (await fetch(`${mock.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const { labels, value } of samplesOf(text, 'mock_provider_requests_total')) out[labels.status] = (out[labels.status] ?? 0) + value;
  return out;
}
const total = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
const delta = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]).filter(([, v]) => v !== 0));

/** Sums k6's qs_branch_outcomes samples (from `-o json=`) by author and outcome. */
function k6Outcomes(pointsFile: string): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const line of readFileSync(pointsFile, 'utf8').split('\n')) {
    if (!line.includes('"qs_branch_outcomes"')) continue;
    const p = JSON.parse(line) as { type: string; data?: { value: number; tags: { author: string; outcome: string } } };
    if (p.type !== 'Point' || !p.data) continue;
    const { author, outcome } = p.data.tags;
    out[author] ??= {};
    out[author][outcome] = (out[author][outcome] ?? 0) + p.data.value;
  }
  return out;
}

interface StoredEvent {
  author?: string;
  errorCode?: string;
  partial?: boolean;
}

interface DeleteRecord {
  user: string;
  /** The session as the server stored it, read just before the DELETE reached it. */
  events: StoredEvent[];
}

/**
 * A pass-through proxy in front of adk api_server that, on each DELETE of a session, reads
 * that session from the server first: the server's own record of every request, kept after
 * k6 removes it. With `answerDelete`, it answers the DELETEs itself (a server without the route).
 */
async function startRecordingProxy(upstream: string, answerDelete?: number) {
  const deletes: DeleteRecord[] = [];
  const server = createServer(async (req, res) => {
    const url = req.url ?? '/';
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const session = req.method === 'DELETE' ? /^\/apps\/[^/]+\/users\/([^/]+)\/sessions\/[^/]+$/.exec(url) : null;
    if (session) {
      const stored = await fetch(`${upstream}${url}`);
      deletes.push({ user: decodeURIComponent(session[1]), events: stored.ok ? ((await stored.json()) as { events: StoredEvent[] }).events : [] });
      if (answerDelete !== undefined) {
        res.writeHead(answerDelete).end();
        return;
      }
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
    const answer = await fetch(`${upstream}${url}`, { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/octet-stream' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, deletes, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Sessions the server still holds for a user. */
async function storedSessions(userId: string, server = adkUrl): Promise<number> {
  const list = (await (await fetch(`${server}/apps/${APP}/users/${userId}/sessions`)).json()) as { sessions?: unknown[] } | unknown[];
  return (Array.isArray(list) ? list : (list.sessions ?? [])).length;
}

/**
 * The same tally from the server's own session store, by a rule of this test's own: per
 * session, each agent's outcome is its last error's kind (429 → rate_limited) or else ok.
 */
function serverOutcomes(deletes: readonly DeleteRecord[], userId: string): { outcomes: Record<string, Record<string, number>>; sessions: number; events429: number } {
  const sessions = deletes.filter((d) => d.user === userId);
  const outcomes: Record<string, Record<string, number>> = {};
  let events429 = 0;
  for (const { events } of sessions) {
    const per = new Map<string, string>();
    for (const e of events) {
      if (!e.author || e.author === 'user' || e.partial) continue;
      if (e.errorCode === '429') events429++;
      if (e.errorCode !== undefined) per.set(e.author, e.errorCode === '429' ? 'rate_limited' : 'error');
      else if (!per.has(e.author)) per.set(e.author, 'ok');
    }
    for (const [author, outcome] of per) {
      outcomes[author] ??= {};
      outcomes[author][outcome] = (outcomes[author][outcome] ?? 0) + 1;
    }
  }
  return { outcomes, sessions: sessions.length, events429 };
}

function scenario(name: string, userId: string, users: number, streaming = false): ScenarioFile {
  return {
    name,
    protocol: 'adk',
    adk: { app: APP, userId, streaming, authors: AUTHORS, message: 'Review this change:\n{document}' },
    defaults: { inputTokensPerCall: 300 },
    arrivals: [{ kind: 'burst', at: 0, users }],
    requestTimeout: 30,
    gracefulStop: 5,
  };
}

beforeAll(async () => {
  requireTool('k6');
  mock = await startMockProvider(instant, { port: 0, host: '127.0.0.1' });
  const port = await freePort();
  // GOOGLE_GENAI_USE_VERTEXAI would switch ADK's Gemini to Vertex and its other base URL.
  group.start('adk-api-server', process.execPath, [ADK_CLI, 'api_server', APPS_DIR, '-h', '127.0.0.1', '-p', String(port)], {
    GOOGLE_GEMINI_BASE_URL: mock.url,
    GEMINI_API_KEY: 'any',
    GOOGLE_GENAI_USE_VERTEXAI: 'false',
  });
  adkUrl = `http://127.0.0.1:${port}`;
  await waitForHealthy('adk api_server', `${adkUrl}/list-apps`, 90_000, () => group.assertRunning());
  expect(await (await fetch(`${adkUrl}/list-apps`)).json()).toEqual([APP]);
});

afterAll(async () => {
  await group.stopAll();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('k6 --protocol adk against adk api_server (ADK JS)', () => {
  it('calls at the mock = requests x 7; one ok per author per request, as the events say', async () => {
    const before = await mockCalls();
    const points = join(dir, 'clean-points.json');
    const proxy = await startRecordingProxy(adkUrl);
    const r = await runK6({ scenario: scenario('adk-clean', 'clean-user', 4), target: proxy.url, reportDir: join(dir, 'clean'), runId: 'adk-clean', outputs: [`json=${points}`] }).finally(proxy.close);
    expect(r.exitCode).toBe(0);
    expect(r.summary?.requests).toBe(4);
    expect(r.summary?.failedRate).toBe(0);
    expect(r.summary?.missingBranchesRate).toBe(0);
    expect(r.summary?.modelCalls).toBe(4 * CALLS_PER_MESSAGE);
    expect(delta(await mockCalls(), before)).toEqual({ '200': 4 * CALLS_PER_MESSAGE });
    const expected = Object.fromEntries(AUTHORS.map((a) => [a, { ok: 4 }]));
    expect(k6Outcomes(points)).toEqual(expected);
    const server = serverOutcomes(proxy.deletes, 'clean-user');
    expect(server.sessions).toBe(4); // one DELETE per request
    expect(server.outcomes).toEqual(expected);
    expect(await storedSessions('clean-user')).toBe(0);
  }, 120_000);

  it('/run_sse with streaming: the same counts, partial chunks not counted as calls', async () => {
    const before = await mockCalls();
    const points = join(dir, 'sse-points.json');
    // A server without the DELETE route: its 405s count in no metric.
    const proxy = await startRecordingProxy(adkUrl, 405);
    const r = await runK6({ scenario: scenario('adk-sse', 'sse-user', 2, true), target: proxy.url, reportDir: join(dir, 'sse'), runId: 'adk-sse', outputs: [`json=${points}`] }).finally(proxy.close);
    expect(r.exitCode).toBe(0);
    expect(proxy.deletes).toHaveLength(2);
    expect(r.summary?.failedRate).toBe(0);
    expect(r.summary?.missingBranchesRate).toBe(0);
    expect(r.summary?.modelCalls).toBe(2 * CALLS_PER_MESSAGE);
    expect(total(delta(await mockCalls(), before))).toBe(2 * CALLS_PER_MESSAGE);
    expect(k6Outcomes(points)).toEqual(Object.fromEntries(AUTHORS.map((a) => [a, { ok: 2 }])));
  }, 120_000);

  it('with the mock throttling and failing: the outcomes k6 counts are the errorCodes the server recorded', async () => {
    await fetch(`${mock.url}/admin/config`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ throttleProbability: 0.25, faults: { http500Probability: 0.15 } }),
    });
    try {
      const users = 8;
      const before = await mockCalls();
      const points = join(dir, 'fault-points.json');
      const proxy = await startRecordingProxy(adkUrl);
      const r = await runK6({ scenario: scenario('adk-faults', 'fault-user', users), target: proxy.url, reportDir: join(dir, 'faults'), runId: 'adk-faults', outputs: [`json=${points}`] }).finally(proxy.close);
      expect(r.exitCode).toBe(0); // no thresholds in this scenario
      const calls = delta(await mockCalls(), before);
      // A failed branch does not stop its siblings or the next steps: every call is still made once.
      expect(total(calls)).toBe(users * CALLS_PER_MESSAGE);
      expect(calls['429']).toBeGreaterThan(0);
      expect(calls['500']).toBeGreaterThan(0);
      expect(r.summary?.modelCalls).toBe(calls['200']); // only answers count as calls
      const server = serverOutcomes(proxy.deletes, 'fault-user');
      expect(server.sessions).toBe(users);
      expect(await storedSessions('fault-user')).toBe(0);
      expect(server.events429).toBe(calls['429']);
      const seen = k6Outcomes(points);
      expect(seen).toEqual(server.outcomes);
      const flat = Object.values(seen).flatMap((o) => Object.keys(o));
      expect(flat).toContain('rate_limited');
      expect(flat).toContain('error');
    } finally {
      await fetch(`${mock.url}/admin/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ throttleProbability: 0, faults: { http500Probability: 0 } }),
      });
    }
  }, 120_000);

  it('an unknown app: the error frame under HTTP 200 counts as failed, not as a success', async () => {
    const s = scenario('adk-unknown-app', 'nobody', 2);
    s.adk = { app: 'no_such_app' };
    s.thresholds = { missingBranchesRate: 0 };
    const r = await runK6({ scenario: s, target: adkUrl, reportDir: join(dir, 'unknown'), runId: 'adk-unknown' });
    expect(r.exitCode).toBe(99); // the missing-branches threshold failed
    expect(r.summary?.missingBranchesRate).toBe(1);
    expect(r.summary?.modelCalls).toBe(0);
  }, 60_000);

  it('npm run loadtest -- <scenario> --protocol adk --app NAME runs it; bad or missing flags are one-line errors', async () => {
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, [
      'cli/quotascope.ts',
      'loadtest',
      'burst',
      '--protocol',
      'adk',
      '--app',
      APP,
      '--target',
      adkUrl,
      '--scale',
      '0.01',
      '--load',
      '0.1',
      '--report-dir',
      join(dir, 'cli'),
    ]);
    expect(stdout).toMatch(/model calls: +21 \(7\.0 per request\)/); // 1 user x 3 bursts
    const bad = await run(process.execPath, ['cli/quotascope.ts', 'loadtest', 'burst', '--protocol', 'adk', '--app', 'no spaces', '--target', adkUrl]).catch((e) => e);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^loadtest: --app: must be an ADK name/);
    const missing = await run(process.execPath, ['cli/quotascope.ts', 'loadtest', 'burst', '--protocol', 'adk', '--target', adkUrl]).catch((e) => e);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--protocol adk needs --app NAME/);
  }, 120_000);
});

describe('the same scenario against quotascope serve (the tree rate-limited in-process)', () => {
  let served: ServedAgent;
  beforeAll(async () => {
    served = await startServe({ agent: join(APPS_DIR, APP, 'agent.ts'), appName: APP, port: 0, providerUrl: mock.url, permits: 4, maxWaitMs: 10_000 });
  });
  afterAll(async () => {
    await served?.close();
  });

  it('calls at the mock = requests x 7, one ok per author per request, as against adk api_server', async () => {
    const before = await mockCalls();
    const points = join(dir, 'serve-points.json');
    const r = await runK6({ scenario: scenario('adk-serve', 'serve-user', 4), target: served.url, reportDir: join(dir, 'serve'), runId: 'adk-serve', outputs: [`json=${points}`] });
    expect(r.exitCode).toBe(0);
    expect(r.summary?.requests).toBe(4);
    expect(r.summary?.missingBranchesRate).toBe(0);
    expect(r.summary?.modelCalls).toBe(4 * CALLS_PER_MESSAGE);
    expect(delta(await mockCalls(), before)).toEqual({ '200': 4 * CALLS_PER_MESSAGE });
    expect(k6Outcomes(points)).toEqual(Object.fromEntries(AUTHORS.map((a) => [a, { ok: 4 }])));
    expect(await storedSessions('serve-user', served.url)).toBe(0);
  }, 120_000);
});
