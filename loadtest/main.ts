// `npm start` (`quotascope start`): the embedded main job. Starts the mock provider, the agent service and
// Prometheus on loopback, replays a fan-out burst then steady traffic with k6 (or a small
// Node driver where k6 is missing), prints a summary and writes reports/<run-id>/.
import { mkdirSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { runNodeDriver } from './k6/node-driver.ts';
import { RunProgress } from './k6/progress.ts';
import { type K6Summary, runK6 } from './k6/runner.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { RUN_RECORD_FILE, type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { writeReport } from './report/write.ts';
import { loadScenario } from './scenario/schema.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { putMockConfig } from './stack/mock-admin.ts';
import { MOCK_COUNTED_TOKENS } from './stack/mock-parameters.ts';
import { freePort, ProcessGroup, waitForHealthy } from './stack/processes.ts';
import { AGENT_JOB, MOCK_JOB, startPrometheus, waitForFirstScrape } from './stack/prometheus.ts';
import { findTool } from './stack/tools.ts';
import type { StartOptions } from './start-options.ts';

/** The `quotascope` bin of this package (source .ts, or the built .js beside this module's own). */
const QUOTASCOPE_BIN = fileURLToPath(new URL(`../cli/quotascope${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

type Flags = StartOptions;

const OUTPUT_TOKENS = EX.outputTokensPerCall;
const BUDGET_FRACTION = EX.budgetFraction;
/** This run's Prometheus scrape interval, seconds. */
const SCRAPE_SECONDS = 2;
/** The panels' $__rate_interval: four scrape intervals. */
const RATE_INTERVAL = `${4 * SCRAPE_SECONDS}s`;
/** Share of a call's time the mock spends streaming output after the first token. */
const STREAMING_SHARE = 0.9;

/** The default run: the worked example's burst of 10 users, then steady traffic. */
function mainScenario(f: Flags): ScenarioFile {
  const burstGap = f.burstUsers > 0 ? Math.max(10, f.callSeconds * 3) : 0;
  return {
    name: 'main',
    description: `burst of ${f.burstUsers} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree: f.tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f.burstUsers > 0 ? [{ kind: 'burst' as const, at: 0, users: f.burstUsers }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.max(60, (f.maxWaitMs / 1000 + f.callSeconds) * 4),
    gracefulStop: Math.max(10, f.callSeconds * 4),
  };
}

const fmt = (v: number | undefined, unit = ''): string => (v === undefined ? '-' : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit}`);

async function run(flags: Flags, scenario: ScenarioFile, group: ProcessGroup, reportDir: string, runId: string, signal: AbortSignal): Promise<number> {
  console.log(`[main] run ${runId}: report in ${reportDir}`);
  const node = process.execPath;
  const mockPort = await freePort();
  const mockUrl = `http://127.0.0.1:${mockPort}`;
  group.start('mock-provider', node, [QUOTASCOPE_BIN, 'mock-provider', '--port', String(mockPort), '--host', '127.0.0.1']);
  await waitForHealthy('mock provider', `${mockUrl}/healthz`, 30_000, () => group.assertRunning());
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
  await putMockConfig(mockUrl, mockConfig);
  console.log(`[main] mock provider on ${mockUrl} (quota ${flags.quotaRpm} req/min, ${flags.quotaTpm} ${flags.countedTokens} tokens/min, ~${flags.callSeconds} s per call)`);

  const agentPort = await freePort();
  group.start('agent', node, [
    QUOTASCOPE_BIN,
    'agent',
    '--port', String(agentPort),
    '--provider-url', mockUrl,
    '--replicas', String(flags.replicas),
    '--permits', String(flags.permits),
    '--tokens-per-minute', String(Math.round(flags.quotaTpm * BUDGET_FRACTION)),
    '--max-wait-ms', String(flags.maxWaitMs),
    '--counted-tokens', flags.countedTokens,
  ]);
  const agentUrls = Array.from({ length: flags.replicas }, (_, i) => `http://127.0.0.1:${agentPort + i}`);
  for (const url of agentUrls) await waitForHealthy('agent service', `${url}/healthz`, 60_000, () => group.assertRunning());
  console.log(`[main] agent service: ${flags.replicas} replica(s) at ${agentUrls.join(', ')}`);

  const prometheusUrl = await startPrometheus(group, {
    jobs: { [AGENT_JOB]: agentUrls.map((u) => u.replace('http://', '')), [MOCK_JOB]: [`127.0.0.1:${mockPort}`] },
    dataDir: join(reportDir, 'prometheus'),
    scrapeIntervalSeconds: SCRAPE_SECONDS,
  });
  await waitForFirstScrape(prometheusUrl, agentUrls.length + 1);
  console.log(`[main] prometheus on ${prometheusUrl}`);
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
    range: { from: testStartedAt, to: Date.now() },
    rateInterval: RATE_INTERVAL,
    k6ExitCode: exitCode,
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
      `  user requests:     ${totals.requests} (client saw ${summary?.requests ?? 0}, failed ${fmt((summary?.failedRate ?? 0) * 100, '%')}, with missing branches ${fmt((summary?.missingBranchesRate ?? 0) * 100, '%')})`,
      `  model calls:       ${totals.modelCalls} at the provider`,
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
  // A failed threshold is the run's verdict (exit 99); anything else but 0 is an error.
  return exitCode;
}

/** The whole run; resolves to the exit code (throws ScenarioError for a bad --scenario before starting anything). */
export async function runStart(flags: StartOptions): Promise<number> {
  const scenario = flags.scenario ? loadScenario(flags.scenario) : mainScenario(flags);
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

  const running = run(flags, scenario, group, reportDir, runId, aborter.signal)
    .catch((e) => {
      if (aborter.signal.aborted) return 130;
      console.error(`[main] failed: ${(e as Error).message}`);
      return 1;
    })
    .finally(() => group.stopAll());
  finished = running;
  return running;
}

