// What a finished run measured, in two steps. collectRun reads every figure from the
// Prometheus that saw the run in one pass, after one more scrape: the steady phase plan vs
// measured compares, the provider's answers, the totals of a stack the run started, and the
// completions in the steady window. measureRun is pure over them: plan vs measured, the
// verdict, and why the run fails as a whole (every request failed, or its own stack measured
// nothing the verdict needs).
import type { K6Summary } from './k6/summary.ts';
import type { GaugeProbe } from './measure/gauge-probe.ts';
import { compareSteadyRun, type PlanVsMeasured } from './measure/plan-vs-measured.ts';
import { completionsBetween, providerStatusCounts, runProblem } from './measure/run-outcome.ts';
import { collectSteadyRun, type SteadyRun } from './measure/steady-collect.ts';
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
}

/** What Prometheus holds about the run (nothing without a Prometheus). */
export interface RunFigures {
  /** The steady phase plan vs measured compares, or why it cannot (with a plan). */
  steady?: SteadyRun | { skipped: string };
  /** The provider's answers by HTTP status (undefined when they could not be read). */
  statuses?: Record<string, number>;
  /** The totals of a stack the run started. */
  totals?: StackTotals;
  /** Requests answered 2xx inside the steady window, and its length (a stack of its own, with a plan and a steady phase). */
  steadyCompletions?: { completions: number; seconds: number };
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

/** Requests the run's own stack completed in the steady window, and the window's length; undefined without a plan or a steady phase. */
async function steadyCompletions(s: MeasureInput & { prometheusUrl: string }, driven: Driven): Promise<RunFigures['steadyCompletions']> {
  const phase = steadyPhase(s.scenario);
  const window = phase && s.plan ? steadyWindow(phase, s.plan.latencySeconds) : undefined;
  if (!window) return undefined;
  const from = driven.testStartedAt + window.from * 1000;
  const to = Math.min(driven.testStartedAt + window.to * 1000, driven.endedAt);
  return { completions: to > from ? await completionsBetween(s.prometheusUrl, from, to) : 0, seconds: Math.max(0, to - from) / 1000 };
}

/** Every figure the comparison, the verdict and the summary need, read after one more scrape of the agent side. */
export async function collectRun(s: MeasureInput, driven: Driven): Promise<RunFigures> {
  const { prometheusUrl } = s;
  if (!prometheusUrl) return {};
  await new Promise((r) => setTimeout(r, (s.scrapeSeconds + 1) * 1000));
  const steady = s.plan
    ? await collectSteadyRun({ scenario: s.scenario, prometheusUrl, testStartedAt: driven.testStartedAt, endedAt: driven.endedAt, probe: driven.probe, agentUrl: s.targets[0], stack: s.plan })
    : undefined;
  const statuses = await providerStatusCounts(prometheusUrl, driven.startedAt, Date.now()).catch(() => undefined);
  const totals = s.own ? await stackTotals(prometheusUrl, driven.startedAt, Date.now()) : undefined;
  const completions = totals ? await steadyCompletions({ ...s, prometheusUrl }, driven) : undefined;
  return { steady, statuses, totals, steadyCompletions: completions };
}

/** Plan vs measured, the verdict and the run's problem, from what collectRun read (pure). */
export function measureRun(s: MeasureInput, driven: Driven, figures: RunFigures): Measured {
  const { steady, statuses, totals } = figures;
  const comparison = steady && s.plan ? ('skipped' in steady ? steady : compareSteadyRun(steady, s.plan, undefined)) : undefined;
  const evidence = totals ? { limiterSeries: totals.limiterSeries, ...(figures.steadyCompletions ? { steady: figures.steadyCompletions } : {}) } : undefined;
  const { failure, problem } = runProblem(driven.summary, statuses, evidence);
  const summary = driven.summary;
  const verdict = runVerdict({
    outcomes: summary?.outcomes,
    providerRateLimited: totals?.providerRateLimited ?? (statuses ? (statuses['429'] ?? 0) : undefined),
    planVsMeasured: comparison,
    quotaChanges: totals?.quotaChanges && quotaChangesSince(totals.quotaChanges, driven.testStartedAt),
    // Without a Prometheus the run knows no limiter timeouts, so it names no cause.
    causes: s.prometheusUrl ? { timeoutsByReason: totals?.timeoutsByReason, branchOutcomes: summary?.branchOutcomesByKind, statusCodes: summary?.statusCodes } : undefined,
  });
  return { summary, comparison, totals, verdict, failure, problem };
}
