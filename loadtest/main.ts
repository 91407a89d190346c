// `npm start` (`quotascope start`): the embedded main job. Starts the mock provider, the agent
// service (or `serve` for a user's module, --agent) and Prometheus on loopback, replays a
// fan-out burst then steady traffic with k6 (or a small Node driver where k6 is missing),
// prints a summary and writes reports/<run-id>/. A run whose requests all failed exits 1.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { runNodeDriver } from './k6/node-driver.ts';
import { RunProgress } from './k6/progress.ts';
import { type K6Summary, runK6 } from './k6/runner.ts';
import { formatStatusCounts } from './k6/summary-text.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, providerStatusCounts } from './measure/run-outcome.ts';
import { RUN_RECORD_FILE, type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { writeReport } from './report/write.ts';
import { loadScenario } from './scenario/schema.ts';
import { withTree } from './scenario/trees.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { type AgentTarget, defaultTreeOf, resolveAgentTarget, scenarioForTarget } from './stack/agent-target.ts';
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

/** The default run: the worked example's burst of 10 users, then steady traffic. */
function mainScenario(f: Flags, tree: string): ScenarioFile {
  const burstGap = f.burstUsers > 0 ? Math.max(10, f.callSeconds * 3) : 0;
  return {
    name: 'main',
    description: `burst of ${f.burstUsers} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f.burstUsers > 0 ? [{ kind: 'burst' as const, at: 0, users: f.burstUsers }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.max(60, (f.maxWaitMs / 1000 + f.callSeconds) * 4),
    gracefulStop: Math.max(10, f.callSeconds * 4),
  };
}

const fmt = (v: number | undefined, unit = ''): string => (v === undefined ? '-' : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit}`);

async function run(flags: Flags, target: AgentTarget, scenario: ScenarioFile, group: ProcessGroup, reportDir: string, runId: string, signal: AbortSignal): Promise<number> {
  console.log(`[main] run ${runId}: report in ${reportDir}`);
  // Quota and latency for this run: ~800 output tokens, call-seconds per call on average.
  const perTokenMs = (flags.callSeconds * 1000 * STREAMING_SHARE) / (OUTPUT_TOKENS - 1);
  const mockConfig = {
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
      tokensPerMinute: Math.round(flags.quotaTpm * BUDGET_FRACTION),
      maxWaitMs: flags.maxWaitMs,
      admission: flags.admission,
      requestDeadlineMs: flags.requestDeadlineMs,
      countedTokens: flags.countedTokens,
    },
    mockConfig,
    mockNote: `quota ${flags.quotaRpm} req/min, ${flags.quotaTpm} ${flags.countedTokens} tokens/min, ~${flags.callSeconds} s per call`,
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
  console.log(
    [
      '',
      `quotascope run ${runId} (${scenario.name})`,
      `  user requests:     ${totals.requests} (client saw ${summary?.requests ?? 0}, failed ${fmt(((summary?.failedRequests ?? 0) / Math.max(1, summary?.requests ?? 0)) * 100, '%')}, with missing branches ${fmt((summary?.missingBranchesRate ?? 0) * 100, '%')})`,
      `  HTTP statuses:     ${formatStatusCounts(summary?.statusCodes ?? {})}`,
      `  model calls:       ${totals.modelCalls} at the provider${agent?.modelCallsPerRequest ? ` (${agent.modelCallsPerRequest} per request counted in ${agent.app})` : agent ? ` (${agent.app}: ${agent.countNote})` : ''}`,
      `  429s:              ${totals.providerRateLimited} answered by the provider, ${totals.limiterRateLimited} seen by the limiter`,
      `  acquire time:      p50 ${fmt(a.p50, ' s')}  p95 ${fmt(a.p95, ' s')}  p99 ${fmt(a.p99, ' s')} (admitted calls; maxWait ${fmt(totals.maxWaitSeconds, ' s')})`,
      `  limiter timeouts:  ${totals.timeouts} (gave up at maxWait)`,
      `  request duration:  p50 ${fmt((summary?.durationMs.p50 ?? 0) / 1000, ' s')}  p95 ${fmt((summary?.durationMs.p95 ?? 0) / 1000, ' s')}`,
      `  alerts fired:      ${totals.alertsFired.length ? totals.alertsFired.join(', ') : 'none'}`,
      'skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison),
      `  run record:        ${join(reportDir, RUN_RECORD_FILE)}`,
      `report: ${reportPath}`,
    ].join('\n'),
  );
  if (failure) {
    console.error(`start: ${failure}`);
    return ALL_FAILED_EXIT_CODE;
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
  const target = await resolveAgentTarget({ agent: flags.agent, tree: flags.tree });
  const tree = flags.tree ?? defaultTreeOf(target);
  // --tree sends every request of a scenario file to that tree too.
  const chosen = flags.scenario ? loadScenario(flags.scenario) : mainScenario(flags, tree);
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

  const running = run(flags, target, scenario, group, reportDir, runId, aborter.signal)
    .catch((e) => {
      if (aborter.signal.aborted) return 130;
      console.error(`[main] failed: ${(e as Error).message}`);
      return 1;
    })
    .finally(() => group.stopAll());
  finished = running;
  return running;
}

