// `serve` end to end: the suite's own agent trees (test/fixtures/agents), the real ADK
// Runner, the real genai client over real sockets and the real mock provider. The mock's
// own count of model calls is the oracle for the planner's count of the same tree.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import { type ServedAgent, startServe } from '../../agent/serve/server.ts';
import { countAgent } from '../../loadtest/planner/agent-plan.ts';
import { type MockProvider, startMockProvider } from '../../mock-provider/index.ts';
import { fastMock, metricsText } from './stack.ts';
import { sumOfMetric } from '../../loadtest/measure/prometheus-text.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/agents/${name}`, import.meta.url));
const LOOP_TOOLS = fixture('loop_tools.ts');
const WORKFLOW = fixture('workflow_graph.ts');

/** The planner's count (`plan --agent FILE`), one tool turn as the mock answers tools once. */
async function plannedCalls(spec: string): Promise<number> {
  return (await countAgent(spec, 1)).tree.calls;
}

async function mockCalls(mock: MockProvider): Promise<number> {
  return sumOfMetric(await metricsText(mock.url), 'mock_provider_requests_total');
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

interface WireEvent {
  author?: string;
  partial?: boolean;
  errorCode?: string;
  usageMetadata?: unknown;
  content?: { parts?: { text?: string; functionCall?: unknown }[] };
}

/** The `data:` frames of a text/event-stream body. */
function sseFrames(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => JSON.parse(frame.slice('data: '.length)));
}

const OUTER_AGENTS = ['intake', 'quick_look', 'deep_draft', 'deep_check', 'critic', 'decision'];

describe('serve --agent on a tree with a loop, an AgentTool and uneven parallel branches', () => {
  let mock: MockProvider;
  let served: ServedAgent;
  let planned: number;

  beforeAll(async () => {
    planned = await plannedCalls(LOOP_TOOLS);
    mock = await startMockProvider(fastMock(15) as Parameters<typeof startMockProvider>[0], { port: 0 });
    served = await startServe({ agent: LOOP_TOOLS, port: 0, providerUrl: mock.url, permits: 3, maxWaitMs: 10_000, httpTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await served?.close();
    await mock?.close();
  });

  it('wraps every model once per model name, leaving nothing unwrapped', () => {
    expect(served.appName).toBe('loop_tools');
    expect([...served.limiters.keys()].sort()).toEqual(['gemini-2.5-flash', 'gemini-2.5-pro']);
    const wrapped = served.models.filter((d) => d.action === 'wrapped').map((d) => d.agent);
    expect(wrapped.sort()).toEqual([...OUTER_AGENTS, 'explainer'].sort());
    // Two model names: the limiter label names the model.
    expect(served.models.find((d) => d.agent === 'deep_check')).toMatchObject({ model: 'gemini-2.5-pro', limiter: 'gemini-2_5-pro' });
  });

  it('native runs: the calls at the mock equal the planner count × requests; agent labels; permits back to 0', async () => {
    expect(planned).toBe(11);
    // Published for plan vs measured as the planner counts it.
    expect(await (await fetch(`${served.url}/v1/agents`)).json()).toEqual({
      trees: ['loop_tools'],
      agents: [
        {
          name: 'loop_tools',
          modelCallsPerRequest: 11,
          shape: { parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 9 },
          // Each model's share, under its own limiter (each model has its own quota).
          models: [
            { model: 'gemini-2.5-flash', limiter: 'gemini-2_5-flash', modelCallsPerRequest: 10, shape: { parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 8 } },
            { model: 'gemini-2.5-pro', limiter: 'gemini-2_5-pro', modelCallsPerRequest: 1, shape: { parallelBranches: 1, callsPerBranch: 1, sequentialSteps: 0 } },
          ],
        },
      ],
    });
    const before = await mockCalls(mock);
    const requests = 3;
    const answers = await Promise.all(
      Array.from({ length: requests }, () => post(`${served.url}/v1/agents/loop_tools/run`, { document: 'Is a loop of two critics enough?' })),
    );
    const bodies = await Promise.all(answers.map((r) => r.json() as Promise<{ modelCalls: number; branches: { name: string; outcome: string }[] }>));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const body of bodies) {
      expect(body.modelCalls).toBe(planned);
      expect(body.branches.map((b) => b.name)).toEqual(OUTER_AGENTS);
      expect(body.branches.every((b) => b.outcome === 'ok')).toBe(true);
    }
    expect((await mockCalls(mock)) - before).toBe(planned * requests);

    const metrics = await metricsText(served.url);
    for (const agent of [...OUTER_AGENTS, 'explainer']) {
      expect(sumOfMetric(metrics, 'llm_limiter_calls_total', { agent, outcome: 'ok' }), agent).toBeGreaterThan(0);
    }
    // The loop ran the critic twice per request, each time calling the explainer once.
    expect(sumOfMetric(metrics, 'llm_limiter_calls_total', { agent: 'critic' })).toBe(4 * requests);
    expect(sumOfMetric(metrics, 'llm_limiter_calls_total', { agent: 'explainer' })).toBe(2 * requests);
    expect(sumOfMetric(metrics, 'llm_limiter_calls_total', { limiter: 'gemini-2_5-pro' })).toBe(requests);
    expect(sumOfMetric(metrics, 'llm_limiter_permits_in_use')).toBe(0);
    expect(sumOfMetric(metrics, 'agent_requests_total', { tree: 'loop_tools', status: '200' })).toBe(requests);
    expect(sumOfMetric(metrics, 'agent_branch_outcomes_total', { tree: 'loop_tools', branch: 'critic', outcome: 'ok' })).toBe(requests);
  });

  it("ADK's protocol: sessions, /run and /run_sse round trip", async () => {
    const base = served.url;
    expect(await (await fetch(`${base}/list-apps`)).json()).toEqual(['loop_tools']);

    const created = await post(`${base}/apps/loop_tools/users/user_1/sessions`, { state: { topic: 'loops' } });
    expect(created.status).toBe(200);
    const session = (await created.json()) as { id: string; appName: string; userId: string; state: Record<string, unknown> };
    expect(session).toMatchObject({ appName: 'loop_tools', userId: 'user_1', state: { topic: 'loops' } });
    const named = await post(`${base}/apps/loop_tools/users/user_1/sessions/my_session`, {});
    expect(((await named.json()) as { id: string }).id).toBe('my_session');
    expect((await post(`${base}/apps/loop_tools/users/user_1/sessions/my_session`, {})).status).toBe(400);

    const message = { role: 'user', parts: [{ text: 'Review the plan.' }] };
    let before = await mockCalls(mock);
    const run = await post(`${base}/run`, { appName: 'loop_tools', userId: 'user_1', sessionId: session.id, newMessage: message });
    expect(run.status).toBe(200);
    const events = (await run.json()) as WireEvent[];
    expect((await mockCalls(mock)) - before).toBe(planned);
    const authors = new Set(events.map((e) => e.author));
    for (const agent of OUTER_AGENTS) expect(authors, agent).toContain(agent);
    expect(events.some((e) => e.content?.parts?.some((p) => p.functionCall))).toBe(true);
    expect(events.filter((e) => e.errorCode !== undefined)).toEqual([]);

    // The session kept the run: its events and the output keys' state.
    const stored = (await (await fetch(`${base}/apps/loop_tools/users/user_1/sessions/${session.id}`)).json()) as {
      events: unknown[];
      state: Record<string, unknown>;
    };
    expect(stored.events.length).toBeGreaterThanOrEqual(events.length);
    expect(stored.state).toHaveProperty('critique');

    before = await mockCalls(mock);
    const sse = await post(`${base}/run_sse`, { appName: 'loop_tools', userId: 'user_1', sessionId: 'my_session', newMessage: message, streaming: true });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const frames = sseFrames(await sse.text()) as WireEvent[];
    expect((await mockCalls(mock)) - before).toBe(planned);
    expect(frames.some((f) => f.partial === true)).toBe(true);
    expect(new Set(frames.filter((f) => !f.partial).map((f) => f.author))).toEqual(new Set(OUTER_AGENTS));

    // ADK JS's shape: { sessions: [...] } (ADK Python answers the bare list).
    const list = (await (await fetch(`${base}/apps/loop_tools/users/user_1/sessions`)).json()) as { sessions: { id: string }[] };
    expect(list.sessions.map((s) => s.id).sort()).toEqual([session.id, 'my_session'].sort());
    expect((await fetch(`${base}/apps/loop_tools/users/user_1/sessions/my_session`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${base}/apps/loop_tools/users/user_1/sessions/my_session`)).status).toBe(404);
    expect(sumOfMetric(await metricsText(base), 'llm_limiter_permits_in_use')).toBe(0);
  });

  it('answers 404 for a missing app or session and 400 naming the bad field, before any model call', async () => {
    const base = served.url;
    const before = await mockCalls(mock);
    const message = { parts: [{ text: 'x' }] };
    const noSession = await post(`${base}/run`, { appName: 'loop_tools', userId: 'u', sessionId: 'nope', newMessage: message });
    expect(noSession.status).toBe(404);
    expect(((await noSession.json()) as { error: string }).error).toContain('nope');
    const noApp = await post(`${base}/run_sse`, { appName: 'other_app', userId: 'u', sessionId: 's', newMessage: message });
    expect(noApp.status).toBe(404);
    expect(((await noApp.json()) as { error: string }).error).toContain('other_app');
    expect((await fetch(`${base}/apps/other_app/users/u/sessions`)).status).toBe(404);
    expect((await post(`${base}/v1/agents/other_app/run`, { document: 'x' })).status).toBe(404);

    const bad = await post(`${base}/run`, { appName: 'loop_tools', userId: 'u', sessionId: 's', newMessage: { parts: [] } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/newMessage\.parts/);
    const badState = await post(`${base}/apps/loop_tools/users/u/sessions`, { state: 'not an object' });
    expect(badState.status).toBe(400);
    expect(((await badState.json()) as { error: string }).error).toMatch(/^invalid request: state/);
    const badNative = await post(`${base}/v1/agents/loop_tools/run`, { document: '' });
    expect(((await badNative.json()) as { error: string }).error).toMatch(/document/);
    expect(await mockCalls(mock)).toBe(before);
  });
});

describe('serve --agent on a Workflow', () => {
  it('runs the graph: the calls at the mock equal the planner count', async () => {
    const planned = await plannedCalls(WORKFLOW);
    expect(planned).toBe(5);
    const mock = await startMockProvider(fastMock(10) as Parameters<typeof startMockProvider>[0], { port: 0 });
    const served = await startServe({ agent: `${WORKFLOW}#rootAgent`, appName: 'graph_app', port: 0, providerUrl: mock.url });
    try {
      const res = await post(`${served.url}/v1/agents/graph_app/run`, { document: 'Route this ticket.' });
      const body = (await res.json()) as { modelCalls: number; branches: { name: string; outcome: string }[] };
      expect(res.status).toBe(200);
      expect(body.modelCalls).toBe(planned);
      expect(body.branches.every((b) => b.outcome === 'ok')).toBe(true);
      expect(await mockCalls(mock)).toBe(planned);
      expect(sumOfMetric(await metricsText(served.url), 'llm_limiter_calls_total', { limiter: 'gemini', agent: 'right_check' })).toBe(1);
    } finally {
      await served.close();
      await mock.close();
    }
  });
});

describe('serve: bad input fails before anything starts', () => {
  it('names the unknown export, the non-agent export and the missing file', async () => {
    await expect(startServe({ agent: `${LOOP_TOOLS}#nope`, port: 0 })).rejects.toThrow(/no export "nope"; agent exports: rootAgent/);
    await expect(startServe({ agent: `${LOOP_TOOLS}#settings`, port: 0 })).rejects.toThrow(/export "settings" is an object \(Object\), not an ADK agent/);
    await expect(startServe({ agent: fixture('missing.ts'), port: 0 })).rejects.toThrow(/missing\.ts: no such file/);
  });

  it('--no-wrap leaves every model as it is', async () => {
    const served = await startServe({ agent: LOOP_TOOLS, port: 0, wrap: false });
    try {
      expect(served.limiters.size).toBe(0);
      expect(served.models.every((d) => d.action === 'kept')).toBe(true);
      const health = (await (await fetch(`${served.url}/healthz`)).json()) as { app: string; agents: string[] };
      expect(health).toMatchObject({ app: 'loop_tools', agents: OUTER_AGENTS });
    } finally {
      await served.close();
    }
  });

  it('main(argv) exits 2 with one line naming the flag, the export or the file', async () => {
    const lines: string[] = [];
    const original = process.stderr.write;
    process.stderr.write = ((chunk: string) => lines.push(chunk.replace(/\n$/, '')) > 0) as typeof process.stderr.write;
    try {
      expect(await runCli(['serve', '--agent', LOOP_TOOLS, '--permits', '0'])).toBe(2);
      expect(await runCli(['serve', '--agent', `${LOOP_TOOLS}#nope`, '--port', '0'])).toBe(2);
      expect(await runCli(['serve', '--port', '0'])).toBe(2);
      expect(await runCli(['serve', '--agent', LOOP_TOOLS, '--app-name', '9lives'])).toBe(2);
      expect(await runCli(['serve', '--agent', LOOP_TOOLS, '--bogus'])).toBe(2);
    } finally {
      process.stderr.write = original;
    }
    expect(lines).toHaveLength(5);
    expect(lines[0]).toMatch(/^serve: --permits: /);
    expect(lines[1]).toMatch(/^serve: agent module .*loop_tools\.ts: no export "nope"/);
    expect(lines[2]).toMatch(/^serve: --agent: /);
    expect(lines[3]).toMatch(/^serve: --app-name: /);
    expect(lines[4]).toMatch(/^serve: .*bogus/);
    for (const line of lines) expect(line).not.toContain('\n');
  });
});

describe('serve: a run that throws', () => {
  it('answers /run with 500, /run_sse with an error frame after the 200, the native run with 500; a custom model is left alone', async () => {
    const served = await startServe({ agent: fixture('throwing_model.ts'), port: 0 });
    try {
      expect(served.models).toEqual([{ agent: 'fragile', action: 'kept', reason: 'custom model' }]);
      const base = served.url;
      const session = (await (await post(`${base}/apps/throwing_model/users/u/sessions`, {})).json()) as { id: string };
      const body = { appName: 'throwing_model', userId: 'u', sessionId: session.id, newMessage: { parts: [{ text: 'go' }] } };
      const run = await post(`${base}/run`, body);
      expect(run.status).toBe(500);
      expect(((await run.json()) as { error: string }).error).toContain('model exploded');
      const sse = await post(`${base}/run_sse`, body);
      expect(sse.status).toBe(200);
      expect(sseFrames(await sse.text()).at(-1)).toEqual({ error: expect.stringContaining('model exploded') });
      const native = await post(`${base}/v1/agents/throwing_model/run`, { document: 'go' });
      expect(native.status).toBe(500);
      expect(sumOfMetric(await metricsText(base), 'agent_requests_total', { tree: 'throwing_model', status: '500' })).toBe(3);
    } finally {
      await served.close();
    }
  });
});
