// What a finished run measured, from what collectRun (run-collect.ts) read: plan vs measured,
// the verdict, and why the run fails as a whole (every request failed, or its own stack
// measured nothing the verdict needs). Pure: no query, no file.
import type { K6Summary } from './k6/summary.ts';
import { compareSteadyRun, type PlanVsMeasured } from './measure/plan-vs-measured.ts';
import { runProblem } from './measure/run-outcome.ts';
import type { SteadyRun } from './measure/steady-collect.ts';
import { planSteadyPhase } from './measure/steady-plan.ts';
import type { StackParameters } from './measure/steady-state.ts';
import { quotaChangesSince } from './report/markers.ts';
import type { StackTotals } from './report/summary.ts';
import { runVerdict, type Verdict } from './report/verdict.ts';
import type { Driven, MeasureInput, RunFigures } from './run-collect.ts';

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

/** Plan vs measured over the collected steady phase: planned first, then compared (or why it cannot be). */
function comparisonOf(steady: SteadyRun | { skipped: string }, stack: StackParameters): PlanVsMeasured | { skipped: string } {
  if ('skipped' in steady) return steady;
  const planned = planSteadyPhase(steady.phase, steady.shape, steady.figures.kind === 'models' ? steady.figures.models : [], stack);
  return compareSteadyRun(steady, stack, undefined, planned);
}

/** Plan vs measured, the verdict and the run's problem, from what collectRun read (pure). */
export function measureRun(s: MeasureInput, driven: Driven, figures: RunFigures): Measured {
  const { steady, statuses, totals } = figures;
  const comparison = steady && s.plan ? comparisonOf(steady, s.plan) : undefined;
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
