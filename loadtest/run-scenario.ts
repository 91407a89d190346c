// `quotascope loadtest <scenario>`: one scenario with k6 against a running stack (or an ADK
// API server); with --plan the planner's prediction beside the steady state it measured;
// with a Prometheus, the run record and the report page. With an agent module (--agent) it
// starts its own stack (mock provider, serve for the module, Prometheus) and runs against
// that. A run whose requests all failed exits 1. The flags are cli/loadtest.ts's.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { replaceFile } from '../cli/replace-files.ts';
import { defaultConfig, durationSeconds } from '../dashboards/config.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { redactUrlsIn } from '../instrumentation/redact-url.ts';
import { RunProgress } from './k6/progress.ts';
import { runK6, THRESHOLDS_FAILED } from './k6/runner.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, completionsBetween, providerStatusCounts, UNMEASURED_EXIT_CODE, unmeasuredMessage } from './measure/run-outcome.ts';
import { rateIntervalFor } from './report/collect.ts';
import { type RunRecord, writeRunRecord } from './report/run-record.ts';
import { stackTotals } from './report/summary.ts';
import { runVerdict } from './report/verdict.ts';
import { writeReport } from './report/write.ts';
import type { ScenarioFile } from './scenario/types.ts';
import type { AgentTarget } from './stack/agent-target.ts';
import { LOCAL_STACK_SCRAPE_SECONDS, type LocalStack, startLocalStack } from './stack/local-stack.ts';
import { fetchMockParameters, type MockParameters } from './stack/mock-parameters.ts';
import { ProcessGroup } from './stack/processes.ts';
import { checkTargetsServe } from './stack/served-trees.ts';

/** The compose Prometheus' scrape interval, seconds (what Grafana's datasource is told). */
const COMPOSE_SCRAPE_SECONDS = durationSeconds(defaultConfig.datasource.scrapeInterval) ?? 5;
/** The agent service base URL when no --target is given. */
export const DEFAULT_TARGET = 'http://127.0.0.1:8080';

export interface ScenarioRunOptions {
  /** Agent service base URLs, comma-separated (default DEFAULT_TARGET); not with agent. */
  readonly target?: string;
  /** A resolved agent module (resolveAgentTarget): the run starts its own stack serving it (target and prometheus are then left out). */
  readonly agent?: AgentTarget;
  readonly prometheus?: string;
  readonly mockUrl: string;
  readonly reportDir: string;
  /** Agent replicas sharing the budget, for the plan (default: the number of targets); with agent the serve replicas to start (default 1). */
  readonly replicas?: number;
  readonly budgetFraction: number;
  /** Compare with the planner (needs prometheus). */
  readonly plan: boolean;
  /** What the run was asked for, kept in the run record. */
  readonly parameters: Record<string, unknown>;
}

/** Thrown before anything runs when the options cannot work together. */
export class ScenarioRunError extends Error {
  override name = 'ScenarioRunError';
}

/** Where a run sends its requests and reads its metrics. */
interface RunTargets {
  targets: string[];
  prometheusUrl: string | undefined;
  /** The scrape interval of that Prometheus, seconds. */
  scrapeSeconds: number;
  mockUrl: string;
  /** The mock's quota and latency, for the plan. */
  mock: MockParameters | undefined;
  /** The served app's model calls per request, counted from its tree (agent). */
  counted?: { app: string; calls: number | undefined };
}

/**
 * Runs the (loaded, scaled) scenario; resolves to k6's exit code, or 1 when every request
 * failed. Against given targets it first checks they serve the scenario's trees or app
 * (UnservedTreeError); with an agent it starts and stops its own stack.
 */
export async function runScenario(scenario: ScenarioFile, o: ScenarioRunOptions): Promise<number> {
  const agent = o.agent?.kind === 'serve' ? o.agent : undefined;
  const givenTargets = (o.target ?? DEFAULT_TARGET).split(',').map((t) => t.trim().replace(/\/$/, ''));
  // --plan: fail before the run when the comparison could not be made after it.
  let mock: MockParameters | undefined;
  if (!agent) {
    if (o.plan) {
      if (!o.prometheus) throw new ScenarioRunError('--plan needs --prometheus (the Prometheus that scrapes the agent service)');
      mock = await fetchMockParameters(o.mockUrl);
    }
    await checkTargetsServe(givenTargets, scenario);
  }
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(o.reportDir, runId);
  const aborter = new AbortController();
  process.once('SIGINT', () => aborter.abort());
  process.once('SIGTERM', () => aborter.abort());
  if (!agent) {
    return runAgainst(scenario, o, runId, reportDir, aborter.signal, {
      targets: givenTargets,
      prometheusUrl: o.prometheus,
      scrapeSeconds: COMPOSE_SCRAPE_SECONDS,
      mockUrl: o.mockUrl,
      mock,
    });
  }
  const group = new ProcessGroup(reportDir);
  try {
    mkdirSync(reportDir, { recursive: true });
    const stack: LocalStack = await startLocalStack(group, {
      target: agent,
      limits: { replicas: o.replicas ?? 1 },
      prometheusDir: join(reportDir, 'prometheus'),
      scrapeIntervalSeconds: LOCAL_STACK_SCRAPE_SECONDS,
      say: (line) => console.log(`[loadtest] ${line}`),
    });
    return await runAgainst(scenario, { ...o, plan: true }, runId, reportDir, aborter.signal, {
      targets: stack.agentUrls,
      prometheusUrl: stack.prometheusUrl,
      scrapeSeconds: LOCAL_STACK_SCRAPE_SECONDS,
      mockUrl: stack.mockUrl,
      // The stack is the run's own, so plan vs measured can always be made.
      mock: await fetchMockParameters(stack.mockUrl),
      counted: { app: agent.app, calls: agent.modelCallsPerRequest },
    });
  } finally {
    await group.stopAll();
  }
}

async function runAgainst(scenario: ScenarioFile, o: ScenarioRunOptions, runId: string, reportDir: string, signal: AbortSignal, t: RunTargets): Promise<number> {
  const { targets, prometheusUrl, mock } = t;
  console.log(redactUrlsIn(`[loadtest] ${scenario.name} against ${targets.join(',')}${prometheusUrl ? `, remote write to ${prometheusUrl}` : ''}; report in ${reportDir}`));
  const probe = mock ? new GaugeProbe({ urls: targets.map((u) => `${u}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 }) : undefined;
  probe?.start();
  const progress = new RunProgress({ scenario, prometheusUrl: prometheusUrl });
  await progress.start();
  const result = await runK6({
    scenario,
    target: targets.join(','),
    reportDir,
    runId,
    prometheusUrl: prometheusUrl,
    mockUrl: t.mockUrl,
    onLine: (l) => progress.log(`[k6] ${l}`),
    onProgress: (p) => progress.update(p),
    signal: signal,
  }).finally(async () => {
    await probe?.stop();
    await progress.stop();
  });
  let comparison: Awaited<ReturnType<typeof compareRun>> | undefined;
  // One more scrape of the agent after the last request.
  if (prometheusUrl && !signal.aborted) await new Promise((r) => setTimeout(r, (t.scrapeSeconds + 1) * 1000));
  if (mock && prometheusUrl && !signal.aborted) {
    comparison = await compareRun({
      scenario,
      prometheusUrl: prometheusUrl,
      testStartedAt: result.testStartedAt,
      endedAt: result.endedAt,
      probe,
      agentUrl: targets[0],
      stack: { ...mock, budgetFraction: o.budgetFraction, replicas: o.replicas ?? targets.length },
    });
    replaceFile(join(reportDir, 'plan-vs-measured.json'), JSON.stringify(comparison, null, 2));
  }
  const providerStatuses = prometheusUrl && !signal.aborted ? await providerStatusCounts(prometheusUrl, result.startedAt, Date.now()).catch(() => undefined) : undefined;
  const failure = allFailedMessage(result.summary, providerStatuses);
  // The verdict first, then the figures behind it.
  if (!signal.aborted) {
    const rateLimited = providerStatuses ? (providerStatuses['429'] ?? 0) : undefined;
    console.log(runVerdict({ outcomes: result.summary?.outcomes, providerRateLimited: rateLimited, planVsMeasured: comparison }).line);
  }
  if (comparison) console.log('skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison));
  let unmeasured: string | undefined;
  if (t.counted && prometheusUrl && !signal.aborted) {
    const totals = await stackTotals(prometheusUrl, result.startedAt, Date.now());
    // Its own stack: the limiter's metrics must be there, and a compared steady window must have completions.
    unmeasured = unmeasuredMessage({
      limiterSeries: totals.limiterSeries,
      ...(comparison && 'window' in comparison
        ? { steady: { completions: await completionsBetween(prometheusUrl, comparison.window.start, comparison.window.end), seconds: (comparison.window.end - comparison.window.start) / 1000 } }
        : {}),
    });
    if (totals.alertsActiveAtEnd.length > 0) console.log(`[loadtest] alerts pending or firing at the end: ${totals.alertsActiveAtEnd.join(', ')}`);
    const counted = t.counted.calls === undefined ? '' : ` (${t.counted.calls} per request counted in ${t.counted.app})`;
    console.log(`[loadtest] ${totals.requests} requests served, ${totals.modelCalls} model calls at the provider${counted}, ${totals.providerRateLimited} 429s, ${totals.timeouts} limiter timeouts`);
  }
  if (prometheusUrl && !signal.aborted) {
    const range = { from: result.testStartedAt, to: Date.now() };
    const record: RunRecord = {
      runId,
      scenario: scenario.name,
      flags: { ...o.parameters, plan: o.plan, description: scenario.description },
      range,
      rateInterval: rateIntervalFor(range.from, range.to, t.scrapeSeconds),
      k6ExitCode: result.exitCode,
      failure,
      k6: result.summary,
      planVsMeasured: comparison,
      probeSamples: probe?.samples,
    };
    writeRunRecord(reportDir, record);
    const { path } = await writeReport({
      prometheusUrl: prometheusUrl,
      ...range,
      reportDir,
      runId,
      rateInterval: record.rateInterval,
      probeSamples: probe?.samples,
      parameters: record.flags,
      k6: result.summary,
      planVsMeasured: comparison,
    });
    console.log(`report: ${path}`);
  } else if (!signal.aborted) {
    console.log(`[loadtest] no report: it needs --prometheus (k6's summary is in ${reportDir})`);
  }
  if (failure) {
    console.error(`loadtest: ${failure}`);
    return ALL_FAILED_EXIT_CODE;
  }
  if (unmeasured) {
    console.error(`loadtest: ${unmeasured}`);
    return UNMEASURED_EXIT_CODE;
  }
  if (result.exitCode === THRESHOLDS_FAILED) console.log('[loadtest] thresholds failed (k6 exit 99)');
  return result.exitCode;
}
