// `quotascope loadtest <scenario>`: one scenario with k6 against a running stack (or an ADK
// API server); with --plan the planner's prediction beside the steady state it measured;
// with a Prometheus, the run record and the report page. The flags are cli/loadtest.ts's.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultConfig, durationSeconds } from '../dashboards/config.ts';
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import { RunProgress } from './k6/progress.ts';
import { runK6, THRESHOLDS_FAILED } from './k6/runner.ts';
import { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, formatComparison } from './measure/plan-vs-measured.ts';
import { rateIntervalFor } from './report/collect.ts';
import { type RunRecord, writeRunRecord } from './report/run-record.ts';
import { writeReport } from './report/write.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { fetchMockParameters, type MockParameters } from './stack/mock-parameters.ts';

/** The compose Prometheus' scrape interval, seconds (what Grafana's datasource is told). */
const COMPOSE_SCRAPE_SECONDS = durationSeconds(defaultConfig.datasource.scrapeInterval) ?? 5;
/** Seconds to wait after k6 so Prometheus scrapes the agent once more. */
const LAST_SCRAPE_WAIT_MS = (COMPOSE_SCRAPE_SECONDS + 1) * 1000;

export interface ScenarioRunOptions {
  /** Agent service base URLs, comma-separated. */
  readonly target: string;
  readonly prometheus?: string;
  readonly mockUrl: string;
  readonly reportDir: string;
  /** Agent replicas sharing the budget, for the plan (default: the number of targets). */
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

/** Runs the (loaded, scaled) scenario; resolves to k6's exit code. */
export async function runScenario(scenario: ScenarioFile, o: ScenarioRunOptions): Promise<number> {
  const targets = o.target.split(',').map((t) => t.trim().replace(/\/$/, ''));
  // --plan: fail before the run when the comparison could not be made after it.
  let mock: MockParameters | undefined;
  if (o.plan) {
    if (!o.prometheus) throw new ScenarioRunError('--plan needs --prometheus (the Prometheus that scrapes the agent service)');
    mock = await fetchMockParameters(o.mockUrl);
  }
  const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${scenario.name}`;
  const reportDir = resolve(o.reportDir, runId);
  console.log(`[loadtest] ${scenario.name} against ${o.target}${o.prometheus ? `, remote write to ${o.prometheus}` : ''}; report in ${reportDir}`);
  const aborter = new AbortController();
  process.once('SIGINT', () => aborter.abort());
  process.once('SIGTERM', () => aborter.abort());
  const probe = mock ? new GaugeProbe({ urls: targets.map((t) => `${t}/metrics`), metric: limiterMetrics.permitsInUse.name, meanIntervalMs: 200 }) : undefined;
  probe?.start();
  const progress = new RunProgress({ scenario, prometheusUrl: o.prometheus });
  await progress.start();
  const result = await runK6({
    scenario,
    target: o.target,
    reportDir,
    runId,
    prometheusUrl: o.prometheus,
    mockUrl: o.mockUrl,
    onLine: (l) => progress.log(`[k6] ${l}`),
    onProgress: (p) => progress.update(p),
    signal: aborter.signal,
  }).finally(async () => {
    await probe?.stop();
    await progress.stop();
  });
  let comparison: Awaited<ReturnType<typeof compareRun>> | undefined;
  if (o.prometheus && !aborter.signal.aborted) await new Promise((r) => setTimeout(r, LAST_SCRAPE_WAIT_MS));
  if (mock && o.prometheus && !aborter.signal.aborted) {
    comparison = await compareRun({
      scenario,
      prometheusUrl: o.prometheus,
      testStartedAt: result.testStartedAt,
      endedAt: result.endedAt,
      probe,
      agentUrl: targets[0],
      stack: { ...mock, budgetFraction: o.budgetFraction, replicas: o.replicas ?? targets.length },
    });
    writeFileSync(join(reportDir, 'plan-vs-measured.json'), JSON.stringify(comparison, null, 2));
    console.log('skipped' in comparison ? `plan vs measured: skipped (${comparison.skipped})` : formatComparison(comparison));
  }
  if (o.prometheus && !aborter.signal.aborted) {
    const range = { from: result.testStartedAt, to: Date.now() };
    const record: RunRecord = {
      runId,
      scenario: scenario.name,
      flags: { ...o.parameters, plan: o.plan, description: scenario.description },
      range,
      rateInterval: rateIntervalFor(range.from, range.to, COMPOSE_SCRAPE_SECONDS),
      k6ExitCode: result.exitCode,
      k6: result.summary,
      planVsMeasured: comparison,
      probeSamples: probe?.samples,
    };
    writeRunRecord(reportDir, record);
    const { path } = await writeReport({
      prometheusUrl: o.prometheus,
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
  } else if (!aborter.signal.aborted) {
    console.log(`[loadtest] no report: it needs --prometheus (k6's summary is in ${reportDir})`);
  }
  if (result.exitCode === THRESHOLDS_FAILED) console.log('[loadtest] thresholds failed (k6 exit 99)');
  return result.exitCode;
}
