// What a finished run holds in the Prometheus that saw it, read in one pass after one more
// scrape: the completions in the steady window, the steady phase plan vs measured compares,
// the provider's answers, the totals of a stack the run started, and the report's charts,
// alerts and markers. Nothing after this step queries: run-measure.ts judges, run-report.ts writes.
import type { K6Summary } from './k6/summary.ts';
import type { GaugeProbe } from './measure/gauge-probe.ts';
import { completionsBetween, providerStatusCounts } from './measure/run-outcome.ts';
import { collectSteadyRun, type SteadyRun } from './measure/steady-collect.ts';
import { type StackParameters, steadyPhase, steadyWindow } from './measure/steady-state.ts';
import { rateIntervalFor } from './report/collect.ts';
import { type StackTotals, stackTotals } from './report/summary.ts';
import { collectReport, type ReportFigures } from './report/write.ts';
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

/** The report's figures, over the run's range (from time 0 of the scenario) with the panels' rate interval. */
export interface CollectedReport {
  range: { from: number; to: number };
  rateInterval: string;
  figures: ReportFigures;
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
  /** The report's figures. */
  report?: CollectedReport;
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
  // The steady window's completions first (a stack of its own): the verdict needs them even where plan vs measured is skipped.
  const completions = s.own ? await steadyCompletions({ ...s, prometheusUrl }, driven) : undefined;
  const steady = s.plan
    ? await collectSteadyRun({ scenario: s.scenario, prometheusUrl, testStartedAt: driven.testStartedAt, endedAt: driven.endedAt, probe: driven.probe, agentUrl: s.targets[0], stack: s.plan })
    : undefined;
  const statuses = await providerStatusCounts(prometheusUrl, driven.startedAt, Date.now()).catch(() => undefined);
  const totals = s.own ? await stackTotals(prometheusUrl, driven.startedAt, Date.now()) : undefined;
  const range = { from: driven.testStartedAt, to: Date.now() };
  const rateInterval = rateIntervalFor(range.from, range.to, s.scrapeSeconds);
  const report = { range, rateInterval, figures: await collectReport({ prometheusUrl, ...range, rateInterval, probeSamples: driven.probe?.samples }) };
  return { steady, statuses, totals, steadyCompletions: completions, report };
}
