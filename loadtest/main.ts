// `npm start` (`quotascope start`): the embedded main job. Starts the mock provider, the agent
// service (or `serve` for a user's module, --agent) and Prometheus on loopback, replays a
// fan-out burst then steady traffic with k6 (or a small Node driver where k6 is missing),
// prints a summary and writes reports/<run-id>/. A run whose requests all failed exits 1.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { formatPerModel, mapPerModel } from '../agent/per-model.ts';
import type { TreeShape } from '../agent/tree-shapes.ts';
import { MAX_REQUEST_DEADLINE_MS } from '../instrumentation/defaults.ts';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { runNodeDriver } from './k6/node-driver.ts';
import { RunProgress } from './k6/progress.ts';
import { type K6Summary, runK6 } from './k6/runner.ts';
import { formatStatusCounts } from './k6/summary-text.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, completionsBetween, providerStatusCounts, UNMEASURED_EXIT_CODE, unmeasuredMessage } from './measure/run-outcome.ts';
import { criticalPathSeconds, minimumSteadySeconds, steadyPhase, steadyWindow } from './measure/steady-state.ts';
import { RUN_RECORD_FILE, type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { runVerdict } from './report/verdict.ts';
import { writeReport } from './report/write.ts';
import { loadScenario } from './scenario/schema.ts';
import { withTree } from './scenario/trees.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { type AgentTarget, defaultTreeOf, resolveAgentTarget, scenarioForTarget, treeShapeOf } from './stack/agent-target.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, startLocalStack } from './stack/local-stack.ts';
import { MOCK_COUNTED_TOKENS } from './stack/mock-parameters.ts';
import { ProcessGroup } from './stack/processes.ts';
import { findTool } from './stack/tools.ts';
import type { StartOptions } from './start-options.ts';

type Flags = StartOptions;

const OUTPUT_TOKENS = EX.outputTokensPerCall;
const BUDGET_FRACTION = EX.budgetFraction;
/** This run's Prometheus scrape interval, seconds. */
const SCRAPE_SECONDS = LOCAL_STACK_SCRAPE_SECONDS;
/** The panels' $__rate_interval: four scrape intervals. */
const RATE_INTERVAL = `${4 * SCRAPE_SECONDS}s`;
/** Share of a call's time the mock spends streaming output after the first token. */
const STREAMING_SHARE = 0.9;

/**
 * The default run: the worked example's burst of 10 users, then steady traffic. Requests get
 * time to finish: the timeout and k6's graceful stop cover the tree's critical path
 * (`criticalPath` seconds) and a maxWait.
 */
function mainScenario(f: Flags, tree: string, criticalPath = 0): ScenarioFile {
  const burstGap = f.burstUsers > 0 ? Math.max(10, f.callSeconds * 3) : 0;
  const maxWait = f.maxWaitMs / 1000;
  return {
    name: 'main',
    description: `burst of ${f.burstUsers} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f.burstUsers > 0 ? [{ kind: 'burst' as const, at: 0, users: f.burstUsers }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.ceil(Math.max(60, (maxWait + f.callSeconds) * 4, 2 * criticalPath + maxWait)),
    gracefulStop: Math.ceil(Math.max(10, f.callSeconds * 4, criticalPath + maxWait)),
  };
}

/**
 * The built-in run made long enough for the tree: a steady phase shorter than
 * minimumSteadySeconds would end before the requests it measures do. Returns the flags to run
 * with and, when it lengthened the run, the reason (said before anything starts).
 */
export function fitRunToTree(f: Flags, shape: TreeShape | undefined, tree: string): { flags: Flags; criticalPath: number; note?: string } {
  if (!shape) return { flags: f, criticalPath: 0 };
  const criticalPath = criticalPathSeconds(shape, f.callSeconds);
  const minimum = minimumSteadySeconds(criticalPath, f.callSeconds);
  if (f.duration >= minimum) return { flags: f, criticalPath };
  const chain = shape.callsPerBranch + shape.sequentialSteps;
  const note =
    `--duration ${f.duration} s is too short for ${tree}: its critical path is ${chain} model call${chain === 1 ? '' : 's'} one after another × ${f.callSeconds} s = ${Number(criticalPath.toFixed(1))} s, ` +
    `and the steady window must see requests start and finish; lengthened to ${minimum} s (pass --duration ${minimum} or more to choose)`;
  return { flags: { ...f, duration: minimum }, criticalPath, note };
}

/**
 * Under request admission, why no admitted request of the tree can finish: its request
 * deadline is shorter than the tree's critical path (a call that cannot finish before the
 * deadline is not started). Said before the run starts; undefined when the deadline is long enough.
 */
export function deadlineNote(f: Flags, shape: TreeShape | undefined, tree: string): string | undefined {
  // Unset, the deadline follows the tree (twice its critical path when that is longer than the default).
  if (!shape || f.admission !== 'request' || f.requestDeadlineMs === undefined) return undefined;
  const criticalPath = criticalPathSeconds(shape, f.callSeconds);
  if (f.requestDeadlineMs / 1000 > criticalPath) return undefined;
  const suggested = Math.min(MAX_REQUEST_DEADLINE_MS, Math.ceil(2 * criticalPath) * 1000);
  return (
    `the request deadline (${f.requestDeadlineMs / 1000} s) is not longer than ${tree}'s critical path (${Number(criticalPath.toFixed(1))} s at ${f.callSeconds} s per call): ` +
    `no admitted request can finish in time, so the run will shed or cut short every one; pass --request-deadline-ms ${suggested} (twice the critical path) to give requests room`
  );
}

const fmt = (v: number | undefined, unit = ''): string => (v === undefined ? '-' : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit}`);

async function run(flags: Flags, target: AgentTarget, scenario: ScenarioFile, group: ProcessGroup, reportDir: string, runId: string, signal: AbortSignal): Promise<number> {
  console.log(`[main] run ${runId}: report in ${reportDir}`);
  // Quota and latency for this run: ~800 output tokens, call-seconds per call on average.
  const perTokenMs = (flags.callSeconds * 1000 * STREAMING_SHARE) / (OUTPUT_TOKENS - 1);
  const mockConfig = {
    quotaScope: flags.quotaScope,
    requestsPerMinute: flags.quotaRpm,
    tokensPerMinute: flags.quotaTpm,
    countedTokens: MOCK_COUNTED_TOKENS[flags.countedTokens],
    timeToFirstTokenMs: { kind: 'fixed', value: Math.round(flags.callSeconds * 100) },
    perOutputTokenMs: { kind: 'fixed', value: perTokenMs },
    outputTokens: { kind: 'normal', mean: OUTPUT_TOKENS, stddev: 100 },
  };
  const { mockUrl, agentUrls, prometheusUrl } = await startLocalStack(group, {
    target,
    limits: {
      replicas: flags.replicas,
      permits: flags.permits,
      // Each model's limiter gets its own model's share of its own quota.
      tokensPerMinute: mapPerModel(flags.quotaTpm, (quota) => Math.round(quota * BUDGET_FRACTION)),
      quotaScope: flags.quotaScope,
      maxWaitMs: flags.maxWaitMs,
      admission: flags.admission,
      requestDeadlineMs: flags.requestDeadlineMs,
      countedTokens: flags.countedTokens,
    },
    mockConfig,
    mockNote: `quota ${formatPerModel(flags.quotaRpm)} req/min, ${formatPerModel(flags.quotaTpm)} ${flags.countedTokens} tokens/min per ${flags.quotaScope === 'model' ? 'model' : 'key'}, ~${flags.callSeconds} s per call`,
    prometheusDir: join(reportDir, 'prometheus'),
    scrapeIntervalSeconds: SCRAPE_SECONDS,
    say: (line) => console.log(`[main] ${line}`),
  });
  if (signal.aborted) return 130;

  // Permits in use sampled at random times (the periodic scrape can alias with k6's arrivals).
  const probe = new GaugeProbe({ urls: agentUrls.map((u) => `${u}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 });
  probe.start();
  let summary: K6Summary | undefined;
  let exitCode = 0;
  const startedAt = Date.now();
  let testStartedAt = startedAt;
  try {
    if (findTool('k6')) {
      const progress = new RunProgress({ scenario, prometheusUrl });
      await progress.start();
      const onLine = (line: string) => progress.log(`[k6] ${line}`);
      const r = await runK6({ scenario, target: agentUrls.join(','), reportDir, runId, prometheusUrl, mockUrl, onLine, onProgress: (p) => progress.update(p), signal }).finally(() => progress.stop());
      summary = r.summary;
      exitCode = r.exitCode;
      testStartedAt = r.testStartedAt;
    } else {
      console.log('[main] k6 is not installed (install it with: npm run tools); replaying the scenario with the Node driver');
      summary = await runNodeDriver(scenario, agentUrls[0], (l) => console.log(`[driver] ${l}`), signal);
    }
  } finally {
    await probe.stop();
  }
  if (signal.aborted) return 130;
  const endedAt = Date.now();
  await new Promise((r) => setTimeout(r, 3000)); // one more scrape after the last request

  const totals = await stackTotals(prometheusUrl, startedAt, Date.now());
  const failure = allFailedMessage(summary, await providerStatusCounts(prometheusUrl, startedAt, Date.now()));
  const agent =
    target.kind === 'serve' ? { app: target.app, module: target.spec, modelCallsPerRequest: target.modelCallsPerRequest ?? null, countNote: target.countNote } : undefined;
  const comparison = await compareRun({
    scenario,
    prometheusUrl,
    testStartedAt,
    endedAt,
    probe,
    agentUrl: agentUrls[0],
    stack: {
      outputTokensPerCall: OUTPUT_TOKENS,
      countedTokens: flags.countedTokens,
      latencySeconds: flags.callSeconds,
      quotaRequestsPerMinute: flags.quotaRpm,
      quotaTokensPerMinute: flags.quotaTpm,
      budgetFraction: BUDGET_FRACTION,
      replicas: flags.replicas,
      maxWaitSeconds: flags.maxWaitMs / 1000,
      burstUsers: Math.max(1, flags.burstUsers),
      permits: flags.permits,
      admission: flags.admission,
      ...(target.kind === 'serve' && target.inputTokensPerModel ? { inputTokensPerModel: target.inputTokensPerModel, inputTokensPerAgent: target.inputTokensPerAgent } : {}),
    },
  });
  const record: RunRecord = {
    runId,
    scenario: scenario.name,
    flags: { ...flags, description: scenario.description ?? scenario.name },
    agent,
    range: { from: testStartedAt, to: Date.now() },
    rateInterval: RATE_INTERVAL,
    k6ExitCode: exitCode,
    failure,
    k6: summary,
    stack: totals,
    planVsMeasured: comparison,
    processes: group.children.map(({ name, child }) => ({ name, pid: child.pid })),
    probeSamples: probe.samples,
  };
  const { path: reportPath } = await writeReport({
    prometheusUrl,
    from: record.range.from,
    to: record.range.to,
    reportDir,
    runId,
    rateInterval: RATE_INTERVAL,
    probeSamples: record.probeSamples,
    parameters: { scenario: scenario.name, ...record.flags },
    totals,
    k6: summary,
    planVsMeasured: comparison,
  });
  writeRunRecord(reportDir, { ...record, report: reportPath });
  const a = totals.acquireSeconds;
  const verdict = runVerdict({ outcomes: summary?.outcomes, providerRateLimited: totals.providerRateLimited, planVsMeasured: comparison });
  const o = summary?.outcomes;
  const started = o ? o.served + o.partial + o.shed + o.failed + o.unfinished : 0;
  const share = (n: number) => fmt((n / Math.max(1, started)) * 100, '%');
  const wasted = totals.actualTokens > 0 ? ` (${fmt((totals.wastedTokens / totals.actualTokens) * 100, '%')} of the counted tokens)` : '';
  console.log(
    [
      '',
      verdict.line,
      `quotascope run ${runId} (${scenario.name})`,
      o
        ? `  user requests:     ${started} started: served ${o.served} (${share(o.served)}), partial ${o.partial} (${share(o.partial)}), shed ${o.shed} (${share(o.shed)}), failed ${o.failed}, unfinished ${o.unfinished}`
        : '  user requests:     no client summary',
      `  agent service:     ${totals.requests} answered; missing branches in ${fmt((summary?.missingBranchesRate ?? 0) * 100, '%')} of the admitted requests`,
      `  HTTP statuses:     ${formatStatusCounts(summary?.statusCodes ?? {})}`,
      `  model calls:       ${totals.modelCalls} at the provider${agent?.modelCallsPerRequest ? ` (${agent.modelCallsPerRequest} per request counted in ${agent.app})` : agent ? ` (${agent.app}: ${agent.countNote})` : ''}`,
      `  wasted tokens:     ${Math.round(totals.wastedTokens)}${wasted} spent by requests that did not end wholly ok`,
      `  429s:              ${totals.providerRateLimited} answered by the provider, ${totals.limiterRateLimited} seen by the limiter`,
      `  acquire time:      p50 ${fmt(a.p50, ' s')}  p95 ${fmt(a.p95, ' s')}  p99 ${fmt(a.p99, ' s')} (admitted calls; maxWait ${fmt(totals.maxWaitSeconds, ' s')})`,
      `  limiter timeouts:  ${totals.timeouts} (gave up at maxWait)`,
      `  request duration:  p50 ${fmt((summary?.durationMs.p50 ?? 0) / 1000, ' s')}  p95 ${fmt((summary?.durationMs.p95 ?? 0) / 1000, ' s')}`,
      `  alerts fired:      ${totals.alertsFired.length ? totals.alertsFired.join(', ') : 'none'}`,
      `  alerts at the end: ${totals.alertsActiveAtEnd.length ? totals.alertsActiveAtEnd.join(', ') : 'none pending or firing'}`,
      'skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison),
      `  run record:        ${join(reportDir, RUN_RECORD_FILE)}`,
      `report: ${reportPath}`,
    ].join('\n'),
  );
  if (failure) {
    console.error(`start: ${failure}`);
    return ALL_FAILED_EXIT_CODE;
  }
  const phase = steadyPhase(scenario);
  const window = phase && steadyWindow(phase, flags.callSeconds);
  const from = window ? testStartedAt + window.from * 1000 : 0;
  const to = window ? Math.min(testStartedAt + window.to * 1000, endedAt) : 0;
  const unmeasured = unmeasuredMessage({
    limiterSeries: totals.limiterSeries,
    ...(window ? { steady: { completions: to > from ? await completionsBetween(prometheusUrl, from, to) : 0, seconds: Math.max(0, to - from) / 1000 } } : {}),
  });
  if (unmeasured) {
    console.error(`start: ${unmeasured}`);
    return UNMEASURED_EXIT_CODE;
  }
  // A failed threshold is the run's verdict (exit 99); anything else but 0 is an error.
  return exitCode;
}

/**
 * The whole run; resolves to the exit code. Before starting anything it throws ScenarioError
 * for a bad --scenario, AgentTargetError for an --agent that does not load or walk, and
 * UnservedTreeError for a tree the agent side does not serve.
 */
export async function runStart(flags: StartOptions): Promise<number> {
  // The tree's own prompts (one request with its session history) size the plan per model.
  const target = await resolveAgentTarget({ agent: flags.agent, tree: flags.tree, calibrate: { messageTokens: flags.tokens, outputTokensPerCall: OUTPUT_TOKENS } });
  if (target.kind === 'serve' && target.calibrationNote) console.log(`[main] ${target.calibrationNote}`);
  const tree = flags.tree ?? defaultTreeOf(target);
  // --tree sends every request of a scenario file to that tree too.
  const fitted = flags.scenario ? { flags, criticalPath: 0 } : fitRunToTree(flags, treeShapeOf(target, tree), tree);
  if (fitted.note) console.log(`[main] ${fitted.note}`);
  const tooShort = deadlineNote(fitted.flags, treeShapeOf(target, tree), tree);
  if (tooShort) console.log(`[main] warning: ${tooShort}`);
  const chosen = flags.scenario ? loadScenario(flags.scenario) : mainScenario(fitted.flags, tree, fitted.criticalPath);
  const scenario = scenarioForTarget(target, flags.tree ? withTree(chosen, tree) : chosen);
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(flags.reportDir, runId);
  mkdirSync(reportDir, { recursive: true });
  const group = new ProcessGroup(reportDir);
  const aborter = new AbortController();
  let finished: Promise<unknown> = Promise.resolve();
  let stopping = false;
  // Ctrl-C / SIGTERM: stop k6 (SIGINT, SIGKILL after 10 s) and every child, wait until the run
  // has wound down, then exit 130. A second signal exits at once (the children are signalled).
  const onSignal = (sig: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    console.log(`\n[main] ${sig}: stopping the run and every process it started…`);
    aborter.abort();
    const deadline = new Promise((r) => setTimeout(r, 15_000).unref());
    void Promise.all([group.stopAll(), Promise.race([finished, deadline])]).then(() => process.exit(130));
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  const running = run(fitted.flags, target, scenario, group, reportDir, runId, aborter.signal)
    .catch((e) => {
      if (aborter.signal.aborted) return 130;
      console.error(`[main] failed: ${(e as Error).message}`);
      return 1;
    })
    .finally(() => group.stopAll());
  finished = running;
  return running;
}

