// The pieces of a run's verdict and of pointing a run at a user's tree, without a stack: the
// per-request status and failure rules, the k6 summary's status counts, the all-failed
// message, scenario trees and ADK-style names, what a target serves (also a real serve over
// HTTP), and a user tree's counted shape in plan vs measured.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shapeOfCount } from '../../agent/tree-shapes.ts';
import { countModelCalls, DEFAULT_TOOL_TURNS } from '../../instrumentation/tree/tree-count.ts';
import { walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { loadAgentModule } from '../../agent/agent-module.ts';
import { requestFailed, STATUS_TAGS, statusSubmetric, statusTag } from '../../loadtest/k6/request-status.ts';
import { condenseSummary, type K6Summary } from '../../loadtest/k6/summary.ts';
import { SUMMARY_SUBMETRICS, summaryText } from '../../loadtest/k6/summary-text.ts';
import { allFailedMessage } from '../../loadtest/measure/run-outcome.ts';
import { steadyPlanInput } from '../../loadtest/measure/steady-plan.ts';
import { steadyPhase, steadyWindow, whyNoComparison } from '../../loadtest/measure/steady-state.ts';
import { plan } from '../../loadtest/planner/index.ts';
import { loadScenario, parseScenario, ScenarioError } from '../../loadtest/scenario/schema.ts';
import { scenarioTrees, withTree } from '../../loadtest/scenario/trees.ts';
import type { ScenarioFile } from '../../loadtest/scenario/types.ts';
import { AgentTargetError, resolveAgentTarget } from '../../loadtest/stack/agent-target.ts';
import { scenarioForTarget } from '../../loadtest/stack/target-scenario.ts';
import { checkServed, checkTargetsServe, UnservedTreeError } from '../../loadtest/stack/served-trees.ts';
import { startServe } from '../../agent/serve/server.ts';

describe('how one user request ended', () => {
  it('every status maps to a tag the summary shows, listed statuses to themselves', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10, max: 1000 }), (status) => {
        const tag = statusTag(status);
        expect(STATUS_TAGS).toContain(tag);
        expect(SUMMARY_SUBMETRICS[statusSubmetric(tag)]).toEqual(['count>=0']);
      }),
    );
    expect([0, 200, 404, 429, 500, 503].map(statusTag)).toEqual(['0', '200', '404', '429', '500', '503']);
    expect([302, 418, 599, 999].map(statusTag)).toEqual(['3xx', '4xx', '5xx', 'other']);
  });

  it('fails without a 2xx answer whatever the branches, and with one when no branch came back ok', () => {
    const outcomes = fc.array(fc.constantFrom('ok', 'timeout', 'rate_limited', 'error'), { maxLength: 8 });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 599 }), outcomes, (status, branches) => {
        const failed = requestFailed(status, branches);
        if (status < 200 || status >= 300) expect(failed).toBe(true);
        else expect(failed).toBe(!branches.includes('ok'));
      }),
    );
    expect(requestFailed(200, undefined)).toBe(true);
  });
});

/** A k6 summary export (the fields handleSummary gets) for `requests` user requests. */
function k6Data(requests: number, failed: number, statuses: Record<string, number>) {
  const metrics: Record<string, unknown> = {
    qs_request_duration: { values: { count: requests, med: 10, 'p(95)': 20, 'p(99)': 30, max: 40 } },
    qs_request_failed: { values: { rate: requests ? failed / requests : 0, passes: failed, fails: requests - failed } },
    http_req_failed: { values: { rate: 0 } },
  };
  for (const tag of STATUS_TAGS) metrics[statusSubmetric(tag)] = { values: { count: statuses[tag] ?? 0 }, thresholds: { 'count>=0': { ok: true } } };
  return { metrics, state: { testRunDurationMs: 1000 } };
}

describe("the run's verdict", () => {
  it("reads the statuses and failed requests from k6's summary, and leaves the display-only thresholds out", () => {
    const s = condenseSummary(k6Data(5, 2, { '200': 3, '404': 2 }));
    expect(s.statusCodes).toEqual({ '200': 3, '404': 2 });
    expect(s.failedRequests).toBe(2);
    expect(s.thresholds).toEqual([]);
    const text = summaryText(k6Data(5, 2, { '200': 3, '404': 2 }), 'x');
    expect(text).toContain('requests:         5 (failed 40.0%)');
    expect(text).toContain('statuses:         200 ×3, 404 ×2');
    expect(text).not.toContain('threshold');
  });

  const summary = (requests: number, failedRequests: number, statusCodes: Record<string, number>): K6Summary => ({
    ...condenseSummary(k6Data(requests, failedRequests, statusCodes)),
  });

  it('is a failure only when every request failed, naming the statuses (and the provider’s answers)', () => {
    expect(allFailedMessage(summary(4, 3, { '200': 1, '404': 3 }))).toBeUndefined();
    expect(allFailedMessage(summary(0, 0, {}))).toBeUndefined();
    expect(allFailedMessage(undefined)).toBeUndefined();
    expect(allFailedMessage(summary(3, 3, { '404': 3 }))).toBe('all 3 requests failed: HTTP statuses 404 ×3');
    expect(allFailedMessage(summary(2, 2, { '0': 1, '503': 1 }))).toBe('all 2 requests failed: HTTP statuses 0 ×1, 503 ×1');
    expect(allFailedMessage(summary(3, 3, { '200': 3 }), { '500': 12 })).toBe(
      'all 3 requests failed: HTTP statuses 200 ×3 (answered, but no branch of any request came back ok); the provider answered the model calls 500 ×12',
    );
  });
});

describe('scenario trees', () => {
  it('accepts ADK-style names (with _) for trees and trace records', () => {
    const s = parseScenario({ name: 'x', defaults: { tree: 'my_agent' }, arrivals: [{ kind: 'trace', records: [{ at: 0, tree: 'Other_App', inputTokensPerCall: 500, trafficClass: 'batch' }] }] });
    expect(scenarioTrees(s)).toEqual(['Other_App']);
    expect(() => parseScenario({ name: 'x', defaults: { tree: '9lives' }, arrivals: [{ kind: 'burst', at: 0, users: 1 }] })).toThrow(ScenarioError);
    expect(() => parseScenario({ name: 'x', defaults: { tree: 'a.b' }, arrivals: [{ kind: 'burst', at: 0, users: 1 }] })).toThrow(/defaults\.tree: must be a tree or app name/);
  });

  it('withTree sends every request of any scenario to the one tree', () => {
    const tree = fc.stringMatching(/^[A-Za-z_][\w-]{0,20}$/);
    for (const name of ['burst', 'ramp', 'lanes', 'trace', 'steady-40rpm', 'quota-incident']) {
      fc.assert(
        fc.property(tree, (t) => {
          const sent = withTree(loadScenario(name), t);
          expect(scenarioTrees(sent)).toEqual([t]);
          expect(parseScenario(sent)).toEqual(sent); // still a valid scenario
        }),
        { numRuns: 20 },
      );
    }
  });

  it('a target must serve every tree the scenario names', () => {
    expect(() => checkServed(['review'], ['review', 'wide'], 'tree', 'x')).not.toThrow();
    expect(() => checkServed(['review', 'my_app'], ['review'], 'tree', 'http://h')).toThrow(new UnservedTreeError('unknown tree "my_app": http://h serves "review"'));
    expect(() => checkServed(['a'], [], 'app', 'http://h')).toThrow('unknown app "a": http://h serves nothing');
  });
});

describe("a user's module as the run's agent", () => {
  const steady: ScenarioFile = { name: 's', defaults: { tree: 'review', inputTokensPerCall: 1000 }, arrivals: [{ kind: 'constant', start: 0, perMinute: 30, duration: 60 }] };

  it('loads, names and counts the tree; the scenario goes to the served app', async () => {
    const target = await resolveAgentTarget({ agent: 'test/fixtures/agents/loop_tools.ts' });
    expect(target).toEqual({ kind: 'serve', spec: expect.stringMatching(/\/test\/fixtures\/agents\/loop_tools\.ts#rootAgent$/), app: 'loop_tools', modelCallsPerRequest: 11, shape: { parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 9 },
      countNote: undefined,
      // The agents each model's calls come from: a fix for one model's quota names them.
      agentsPerModel: { 'gemini-2.5-flash': ['intake', 'quick_look', 'deep_draft', 'critic', 'explainer', 'decision'], 'gemini-2.5-pro': ['deep_check'] },
    });
    expect(scenarioTrees(scenarioForTarget(target, steady))).toEqual(['loop_tools']);
    const named = await resolveAgentTarget({ agent: 'test/fixtures/agents/shapes.ts#unevenFanOut', tree: 'Uneven_Tree' });
    expect(named).toMatchObject({ app: 'Uneven_Tree', modelCallsPerRequest: 7 });
  });

  it('a tree that cannot be counted still runs, with the reason kept', async () => {
    const target = await resolveAgentTarget({ agent: 'test/fixtures/agents/shapes.ts#unboundedLoop' });
    expect(target).toMatchObject({ kind: 'serve', modelCallsPerRequest: undefined, countNote: expect.stringMatching(/loop "forever" has no maxIterations/) });
  });

  it('bad modules and trees are AgentTargetErrors naming --agent', async () => {
    await expect(resolveAgentTarget({ agent: 'test/fixtures/agents/loop_tools.ts#nope' })).rejects.toThrow(AgentTargetError);
    await expect(resolveAgentTarget({ agent: 'test/fixtures/agents/loop_tools.ts#nope' })).rejects.toThrow(/^--agent: .*no export "nope"/);
    expect(() => scenarioForTarget({ kind: 'service' }, withTree(steady, 'my_agent'))).toThrow(/^unknown tree "my_agent": the agent service serves/);
    expect(() => scenarioForTarget({ kind: 'service' }, steady)).not.toThrow();
  });

  it("plan vs measured takes a user tree's counted shape (uneven branches, a loop, an AgentTool)", async () => {
    const module = await loadAgentModule('test/fixtures/agents/loop_tools.ts');
    const shape = shapeOfCount(countModelCalls(walkAgentTree(module.root), { toolTurns: DEFAULT_TOOL_TURNS }));
    const sent = withTree(steady, 'loop_tools');
    const phase = steadyPhase(sent);
    expect(phase?.tree).toBe('loop_tools');
    if (!phase) return;
    expect(whyNoComparison(sent, phase, steadyWindow(phase, 0.5), { loop_tools: shape })).toBeUndefined();
    const stack = { outputTokensPerCall: 800, countedTokens: 'input' as const, latencySeconds: 0.5, quotaRequestsPerMinute: 1000, quotaTokensPerMinute: 1_000_000, budgetFraction: 0.9, replicas: 2 };
    expect(plan(steadyPlanInput(phase, shape, stack)).tree.callsPerRequest).toBe(11);
    expect(whyNoComparison(sent, phase, steadyWindow(phase, 0.5), { loop_tools: null })).toMatch(/fixed shape/);
  });
});

describe('what a running target serves, asked before a run (serve on a test tree, in-process)', () => {
  let served: Awaited<ReturnType<typeof startServe>>;
  beforeAll(async () => {
    served = await startServe({ agent: 'test/fixtures/agents/workflow_graph.ts', port: 0 });
  });
  afterAll(async () => {
    await served?.close();
  });
  const burst = (extra: Partial<ScenarioFile>): ScenarioFile => ({ name: 'b', arrivals: [{ kind: 'burst', at: 0, users: 1 }], ...extra });

  it('native: the trees of GET /v1/agents; adk: the apps of GET /list-apps', async () => {
    await expect(checkTargetsServe([served.url], burst({ defaults: { tree: 'workflow_graph' } }))).resolves.toBeUndefined();
    await expect(checkTargetsServe([served.url], burst({ protocol: 'adk', adk: { app: 'workflow_graph' } }))).resolves.toBeUndefined();
    await expect(checkTargetsServe([served.url], burst({}))).rejects.toThrow(`unknown tree "review": ${served.url} serves "workflow_graph"`);
    await expect(checkTargetsServe([served.url], burst({ protocol: 'adk', adk: { app: 'other_app' } }))).rejects.toThrow(`unknown app "other_app": ${served.url} serves "workflow_graph"`);
    await expect(checkTargetsServe([served.url], burst({ protocol: 'adk', adk: { app: 'workflow_graph', basePath: '/api' } }))).rejects.toThrow(/GET .*\/api\/list-apps answered 404/);
  });
});
