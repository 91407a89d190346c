// What a finished run holds in the Prometheus that saw it, read in one pass after one more
// scrape: the completions in the steady window, the steady phase plan vs measured compares,
// the provider's answers, the totals of a stack the run started, and the report's charts,
// alerts and markers. Nothing after this step queries: run-measure.ts judges, run-report.ts writes.
import type { K6Summary } from './k6/summary.ts';
import { shapesAt } from './measure/agent-shapes.ts';
import type { GaugeProbe } from './measure/gauge-probe.ts';
import { answerQueries } from './measure/prometheus-client.ts';
import { providerStatusCountsOf } from './measure/run-outcome.ts';
import { rateIntervalFor, runQueries } from './measure/run-queries.ts';
import { type SteadyRun, steadyRunOf } from './measure/steady-collect.ts';
import { type StackParameters, steadyOfRun } from './measure/steady-state.ts';
import { reportFiguresOf } from './report/collect.ts';
import { markersOf } from './report/markers.ts';
import { type StackTotals, stackTotalsOf } from './report/summary.ts';
import type { ReportFigures } from './report/write.ts';
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

/**
 * Every figure the comparison, the verdict, the summary and the report need, read after one
 * more scrape of the agent side: the trees' shapes from the agent (the steady window's
 * queries depend on them), then every query in one pass, then each figure decoded from its answers.
 */
export async function collectRun(s: MeasureInput, driven: Driven): Promise<RunFigures> {
  const { prometheusUrl } = s;
  if (!prometheusUrl) return {};
  await new Promise((r) => setTimeout(r, (s.scrapeSeconds + 1) * 1000));
  const shapes = s.plan && !s.scenario.mock ? await shapesAt(s.targets[0]) : undefined;
  const steady = s.plan ? steadyOfRun(s.scenario, shapes, s.plan.latencySeconds, driven.testStartedAt, driven.endedAt) : undefined;
  const frame = steady && !('skipped' in steady.frame) ? steady.frame : undefined;
  // The steady window's completions (a stack of its own): the verdict needs them even where plan vs measured is skipped.
  const window = s.own ? steady?.window : undefined;
  const now = Date.now();
  const range = { from: driven.testStartedAt, to: now };
  const rateInterval = rateIntervalFor(range.from, range.to, s.scrapeSeconds);
  const answers = await answerQueries(
    prometheusUrl,
    runQueries({
      steady: frame && { window: frame.window, models: frame.models },
      completions: window && window.end > window.start ? window : undefined,
      run: { start: driven.startedAt, end: now },
      totals: s.own,
      report: { ...range, rateInterval },
    }),
  );
  const probed = frame && driven.probe?.meanBetween(frame.window.start, frame.window.end);
  const steadyRun = steady && (frame && answers.steady ? steadyRunOf(frame, probed, answers.steady, prometheusUrl) : (steady.frame as { skipped: string }));
  const statuses = providerStatusCountsOf(answers.statuses);
  const totals = answers.totals && stackTotalsOf(answers.totals);
  const reachable = typeof answers.report.alertRules === 'number';
  const markers = reachable ? markersOf({ ...answers.report.markers, from: range.from, stepMs: answers.report.markers.step * 1000 }) : [];
  const figures = reportFiguresOf(answers.report, markers, { ...range, probeSamples: driven.probe?.samples });
  return {
    steady: steadyRun,
    statuses,
    totals,
    steadyCompletions: window && { completions: Math.round(answers.completions ?? 0), seconds: Math.max(0, window.end - window.start) / 1000 },
    report: { range, rateInterval, figures },
  };
}
