// What a finished run measured: one more scrape after the last request, plan vs measured
// (kept as plan-vs-measured.json), the provider's answers, the totals of a stack the run
// started, the verdict, and why the run fails as a whole (every request failed, or its own
// stack measured nothing the verdict needs).
import { join } from 'node:path';
import { replaceFile } from '../shared/replace-files.ts';
import type { K6Summary } from './k6/summary.ts';
import type { GaugeProbe } from './measure/gauge-probe.ts';
import { compareRun, type PlanVsMeasured } from './measure/plan-vs-measured.ts';
import { ALL_FAILED_EXIT_CODE, allFailedMessage, completionsBetween, providerStatusCounts, UNMEASURED_EXIT_CODE, unmeasuredMessage } from './measure/run-outcome.ts';
import { type StackParameters, steadyPhase, steadyWindow } from './measure/steady-state.ts';
import { type StackTotals, stackTotals } from './report/summary.ts';
import { quotaChangesSince } from './report/markers.ts';
import { runVerdict, type Verdict } from './report/verdict.ts';
import type { ScenarioFile } from './scenario/types.ts';

/** The traffic's outcome (K6Result's fields; the Node driver gives the same). */
export interface Driven {
  exitCode: number;
  summary: K6Summary | undefined;
  /** When the driver started and ended, and time 0 of the scenario, epoch ms. */
  startedAt: number;
  testStartedAt: number;
  endedAt: number;
  probe?: GaugeProbe;
}

export interface MeasureInput {
  scenario: ScenarioFile;
  targets: readonly string[];
  prometheusUrl: string | undefined;
  scrapeSeconds: number;
  /** The run started the stack: its totals are the run's, and its limiter metrics must be there. */
  own: boolean;
  plan: StackParameters | undefined;
  reportDir: string;
}

export interface Measured {
  /** The client's summary (k6's, or the Node driver's). */
  summary: K6Summary | undefined;
  comparison?: PlanVsMeasured | { skipped: string };
  totals?: StackTotals;
  verdict: Verdict;
  /** Why every request failed (also kept in the run record). */
  failure?: string;
  /** Why the run fails as a whole (one line) and its exit code. */
  problem?: { message: string; exitCode: number };
}

/** Why the run's own stack measured nothing the verdict needs: no limiter series, or no completion in the steady window. */
async function unmeasured(s: MeasureInput & { prometheusUrl: string }, driven: Driven, totals: StackTotals): Promise<string | undefined> {
  const phase = steadyPhase(s.scenario);
  const window = phase && s.plan ? steadyWindow(phase, s.plan.latencySeconds) : undefined;
  const from = window ? driven.testStartedAt + window.from * 1000 : 0;
  const to = window ? Math.min(driven.testStartedAt + window.to * 1000, driven.endedAt) : 0;
  return unmeasuredMessage({
    limiterSeries: totals.limiterSeries,
    ...(window ? { steady: { completions: to > from ? await completionsBetween(s.prometheusUrl, from, to) : 0, seconds: Math.max(0, to - from) / 1000 } } : {}),
  });
}

export async function measureRun(s: MeasureInput, driven: Driven): Promise<Measured> {
  const { prometheusUrl, scenario } = s;
  if (!prometheusUrl) {
    const failure = allFailedMessage(driven.summary);
    const verdict = runVerdict({ outcomes: driven.summary?.outcomes, providerRateLimited: undefined, planVsMeasured: undefined });
    return { summary: driven.summary, verdict, failure, problem: failure ? { message: failure, exitCode: ALL_FAILED_EXIT_CODE } : undefined };
  }
  // One more scrape of the agent side after the last request.
  await new Promise((r) => setTimeout(r, (s.scrapeSeconds + 1) * 1000));
  const comparison = s.plan
    ? await compareRun({ scenario, prometheusUrl, testStartedAt: driven.testStartedAt, endedAt: driven.endedAt, probe: driven.probe, agentUrl: s.targets[0], stack: s.plan })
    : undefined;
  if (comparison) replaceFile(join(s.reportDir, 'plan-vs-measured.json'), JSON.stringify(comparison, null, 2));
  const statuses = await providerStatusCounts(prometheusUrl, driven.startedAt, Date.now()).catch(() => undefined);
  const totals = s.own ? await stackTotals(prometheusUrl, driven.startedAt, Date.now()) : undefined;
  const failure = allFailedMessage(driven.summary, statuses);
  const providerRateLimited = totals?.providerRateLimited ?? (statuses ? (statuses['429'] ?? 0) : undefined);
  const quotaChanges = totals?.quotaChanges && quotaChangesSince(totals.quotaChanges, driven.testStartedAt);
  const causes = { timeoutsByReason: totals?.timeoutsByReason, branchOutcomes: driven.summary?.branchOutcomesByKind, statusCodes: driven.summary?.statusCodes };
  const verdict = runVerdict({ outcomes: driven.summary?.outcomes, providerRateLimited, planVsMeasured: comparison, quotaChanges, causes });
  const why = totals && !failure ? await unmeasured({ ...s, prometheusUrl }, driven, totals) : undefined;
  const problem = failure ? { message: failure, exitCode: ALL_FAILED_EXIT_CODE } : why ? { message: why, exitCode: UNMEASURED_EXIT_CODE } : undefined;
  return { summary: driven.summary, comparison, totals, verdict, failure, problem };
}
