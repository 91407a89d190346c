// `npm start -- --agent FILE` and `npm run loadtest -- <scenario> --agent FILE` end to end on
// test trees of the suite's own (test/fixtures/agents/, not the samples): the mock provider,
// serve for the module (2 replicas), Prometheus and k6, scaled down. Also what must fail
// before anything starts (unknown export, file or tree: exit 2, one line, no child process)
// and a run whose every request failed (exit 1, naming the statuses it saw).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requireTool } from '../../loadtest/stack/tools.ts';
import { expectNothingLeft, killStarted, npmStart, runCommand } from './start-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'qs-start-agent-'));
/** Sequential[intake, Parallel[1, 2 calls], Loop×2[critic + AgentTool], decision]: 11 calls per request, two models. */
const LOOP_TOOLS = 'test/fixtures/agents/loop_tools.ts';
const LOOP_TOOLS_CALLS = 11;
const FLAGS = ['--duration', '10', '--rate', '30', '--call-seconds', '0.5', '--tokens', '1000', '--replicas', '2', '--burst-users', '2'];

afterAll(() => {
  killStarted();
  rmSync(dir, { recursive: true, force: true });
});

const summaryOf = (reports: string) => {
  const [runId] = readdirSync(reports);
  return JSON.parse(readFileSync(join(reports, runId, 'summary.json'), 'utf8'));
};

/** A scenario whose every model call gets an HTTP 500 from the mock provider. */
function allFailingScenario(): string {
  const file = join(dir, 'all-500.json');
  const scenario = {
    name: 'all-500',
    defaults: { tree: 'review', inputTokensPerCall: 1000 },
    arrivals: [{ kind: 'burst', at: 0, users: 3 }],
    mock: { config: { faults: { http500Probability: 1 } } },
    requestTimeout: 60,
    gracefulStop: 10,
  };
  writeFileSync(file, JSON.stringify(scenario));
  return file;
}

describe('npm start -- --agent FILE (a user tree with uneven branches, a loop and an AgentTool)', () => {
  it('runs the tree served by serve: provider calls = requests x counted calls, plan vs measured, nothing left', async () => {
    requireTool('k6');
    requireTool('prometheus');
    const reports = join(dir, 'ok');
    const run = await npmStart([...FLAGS, '--agent', LOOP_TOOLS, '--report-dir', reports]);
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/serve \(app "loop_tools", .*loop_tools\.ts#rootAgent\): 2 replica\(s\)/);
    expect(run.out).toMatch(new RegExp(`model calls: +\\d+ at the provider \\(${LOOP_TOOLS_CALLS} per request counted in loop_tools\\)`));
    expect(run.out).toMatch(/HTTP statuses: +200 ×\d+/);
    expect(run.out).toMatch(/plan vs measured \(binding quota: tokens of gemini-2\.5-flash, [^)]*each model planned against its own quota, input tokens per call calibrated from the tree; request admission, served as a forward run of the tree through one replica's door found it \(30 simulated min\); steady window \d+ s/);
    // 10 s cannot hold the tree's 10 calls one after another at 0.5 s: lengthened before the run, with the reason.
    const note = run.out.indexOf('[main] --duration 10 s is too short for loop_tools: its critical path is 10 model calls one after another × 0.5 s = 5 s');
    expect(note, run.out).toBeGreaterThanOrEqual(0);
    expect(note).toBeLessThan(run.out.indexOf('[main] run '));
    expect(run.out).toContain('lengthened to 17 s');

    const summary = summaryOf(reports);
    expect(summary.agent).toEqual({ countNote: undefined, app: 'loop_tools', module: expect.stringMatching(/loop_tools\.ts#rootAgent$/), modelCallsPerRequest: LOOP_TOOLS_CALLS });
    expect(summary.k6ExitCode).toBe(0);
    expect(summary.failure).toBeUndefined();
    // 2 burst users + 30/min for 17 s (8, or 9 with the one k6 starts at the window's end); every one finished.
    expect(summary.k6.requests).toBeGreaterThanOrEqual(10);
    expect(summary.k6.requests).toBeLessThanOrEqual(11);
    expect(summary.k6.outcomes).toEqual({ served: summary.k6.requests, partial: 0, shed: 0, failed: 0, unfinished: 0 });
    expect(summary.k6.failedRequests).toBe(0);
    expect(summary.k6.statusCodes).toEqual({ '200': summary.k6.requests });
    expect(summary.stack.requests).toBe(summary.k6.requests);
    expect(summary.stack.modelCalls).toBe(LOOP_TOOLS_CALLS * summary.k6.requests);
    expect(summary.stack.timeouts).toBe(0);
    // Two models, each planned against its own quota; the demand fits both.
    // Whole requests at the door: one served figure for the tree, then each model's calls in flight.
    expect(summary.planVsMeasured.rows.map((r: { quantity: string }) => r.quantity)).toEqual([
      'served requests/min',
      'shed requests/min',
      'partial requests/min',
      'calls in flight gemini-2.5-flash',
      'calls in flight gemini-2.5-pro',
      'permits in use',
    ]);
    // Whole requests at the door: every model serves what the binding one sustains (its calls'
    // calibrated tokens carry the loop's history), at most the demand of 30/min.
    const binding = summary.planVsMeasured.models.find((m: { binding: boolean }) => m.binding);
    expect(binding.model).toBe('gemini-2.5-flash');
    // Request admission: every model serves what the tree's forward run through one replica's
    // door served (times the replicas), at most the demand; it ends none partial.
    const forward = summary.planVsMeasured.forwardRun;
    expect(forward.partial).toBe(0);
    expect(forward.servedPerMinute).toBeGreaterThan(0);
    expect(run.out).toMatch(/forward run: a replica serves [\d.]+ whole requests\/min/);
    const served = Math.min(30, forward.servedPerMinute);
    expect(summary.planVsMeasured.rows[0].planned).toBeCloseTo(served, 9);
    expect(summary.planVsMeasured.tokens).toBe('calibrated');
    // None shed or partial in the run; the plan sheds what the door does not serve of the demand.
    expect(summary.planVsMeasured.rows[1]).toMatchObject({ planned: expect.closeTo(30 - served, 9), measured: 0 });
    expect(summary.planVsMeasured.rows[2]).toMatchObject({ planned: 0, measured: 0 });
    for (const row of [summary.planVsMeasured.rows[0], ...summary.planVsMeasured.rows.slice(3)]) expect(row.measured, row.quantity).toBeGreaterThan(0);
    expect(summary.processes.map((p: { name: string }) => p.name)).toEqual(['mock-provider', 'serve-1', 'serve-2', 'prometheus']);
    const [runId] = readdirSync(reports);
    for (const f of ['serve-1.log', 'serve-2.log', 'mock-provider.log', 'k6-summary.json']) expect(existsSync(join(reports, runId, f)), f).toBe(true);
    await expectNothingLeft(run);
  }, 150_000);

  it('a run whose every request failed exits 1 and names the statuses the agent and the provider answered', async () => {
    const reports = join(dir, 'failed');
    const run = await npmStart(['--agent', LOOP_TOOLS, '--scenario', allFailingScenario(), '--replicas', '1', '--call-seconds', '0.5', '--report-dir', reports]);
    expect(run.code, run.out).toBe(1);
    // ADK turns each model error into an event: serve answers 200 with every branch failed.
    expect(run.err.trim()).toMatch(/^start: all 3 requests failed: HTTP statuses 200 ×3 \(answered, but no branch of any request came back ok\); the provider answered the model calls 500 ×\d+$/);
    const summary = summaryOf(reports);
    expect(summary.k6.failedRequests).toBe(3);
    expect(summary.failure).toMatch(/^all 3 requests failed/);
    await expectNothingLeft(run, { processes: 3, urls: 3 }); // k6 may come and go between two looks
  }, 120_000);
});

describe('npm run loadtest -- <scenario> --agent FILE', () => {
  it('starts mock, serve and Prometheus for the module; all requests failing exits 1 with the statuses', async () => {
    // A Workflow re-raises a model error out of the run: serve answers 500.
    const args = [allFailingScenario(), '--agent', 'test/fixtures/agents/workflow_graph.ts', '--app', 'graph_app', '--report-dir', join(dir, 'lt')];
    const run = await runCommand('loadtest', args);
    expect(run.code, run.out).toBe(1);
    expect(run.out).toMatch(/\[loadtest\] serve \(app "graph_app", .*workflow_graph\.ts#rootAgent\): 1 replica\(s\)/);
    expect(run.out).toMatch(/\[loadtest\] 3 requests served, 3 model calls at the provider \(5 per request counted in graph_app\)/);
    expect(run.err.trim()).toBe('loadtest: all 3 requests failed: HTTP statuses 500 ×3; the provider answered the model calls 500 ×3');
    await expectNothingLeft(run, { processes: 3, urls: 3 }); // k6 may come and go between two looks
  }, 120_000);
});

describe('bad input fails before anything starts: one line, exit 2, no child process', () => {
  const cases: [string, string, string[], RegExp][] = [
    ['an unknown export', 'start', ['--agent', `${LOOP_TOOLS}#noSuchAgent`], /^start: --agent: agent module .*loop_tools\.ts: no export "noSuchAgent"; agent exports: rootAgent$/],
    ['a missing file', 'start', ['--agent', 'test/fixtures/agents/nope.ts'], /^start: --agent: agent module .*nope\.ts: no such file$/],
    ['a file that is no module', 'start', ['--agent', 'package.json'], /^start: --agent: agent module .*package\.json: not a JS or TS module/],
    ['a tree with no model', 'start', ['--agent', 'test/fixtures/agents/no_model.ts'], /^start: --agent: agent "modelless" has no model, and no LlmAgent above it has one to inherit$/],
    ['an unknown tree', 'start', ['--tree', 'unknown'], /^start: unknown tree "unknown": the agent service serves "review", "review-workflow", "wide", "tools"/],
    ['an ADK-style name the agent service does not serve', 'start', ['--tree', 'my_agent'], /^start: unknown tree "my_agent"/],
    ['a scenario tree the agent service does not serve', 'start', ['--scenario', 'burst', '--tree', 'nope'], /^start: unknown tree "nope"/],
    ['loadtest: an unknown export', 'loadtest', ['burst', '--agent', `${LOOP_TOOLS}#noSuchAgent`], /^loadtest: --agent: .*no export "noSuchAgent"/],
    ['loadtest: an app name ADK cannot have', 'loadtest', ['burst', '--agent', LOOP_TOOLS, '--app', 'bad.name'], /^loadtest: --agent: the app name "bad\.name" .* is not an ADK app name/],
    ['loadtest: --agent with --target', 'loadtest', ['burst', '--agent', LOOP_TOOLS, '--target', 'http://127.0.0.1:9'], /^loadtest: --agent starts its own stack/],
    ['loadtest: a target that is not up', 'loadtest', ['burst', '--target', 'http://127.0.0.1:9'], /^loadtest: GET http:\/\/127\.0\.0\.1:9\/v1\/agents failed/],
  ];
  it.each(cases)('%s', async (_name, command, args, message) => {
    const reports = join(dir, 'bad');
    const run = await runCommand(command, [...args, '--report-dir', reports]);
    expect(run.code, run.out).toBe(2);
    expect(run.err.trim().split('\n'), run.err).toHaveLength(1);
    expect(run.err.trim()).toMatch(message);
    expect(run.pids, 'child processes').toEqual([]);
    expect(existsSync(reports), 'report folder').toBe(false);
  }, 60_000);
});
