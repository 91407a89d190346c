// Where a run's steady state is, and what the planner is told about it: shared by `npm start`
// and `npm run loadtest -- <scenario> --plan`.
import { DEFAULT_INPUT_TOKENS, DEFAULT_TREE } from './k6/build-options.ts';
import type { ConstantArrival, ScenarioFile } from './k6/scenario-types.ts';
import type { PlanInput } from './planner/index.ts';

/** The review tree's shape: 4 parallel reviewers, then the synthesizer (5 calls). */
export const REVIEW_SHAPE = { parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 } as const;

export interface SteadyPhase {
  arrival: ConstantArrival;
  tree: string;
  inputTokensPerCall: number;
}

/** The scenario's longest constant-rate arrival (the one a steady state forms in), if any. */
export function steadyPhase(s: ScenarioFile): SteadyPhase | undefined {
  const constant = s.arrivals.filter((a): a is ConstantArrival => a.kind === 'constant');
  if (constant.length === 0) return undefined;
  const arrival = constant.reduce((a, b) => (b.duration > a.duration ? b : a));
  return {
    arrival,
    tree: arrival.tree ?? s.defaults?.tree ?? DEFAULT_TREE,
    inputTokensPerCall: arrival.inputTokensPerCall ?? s.defaults?.inputTokensPerCall ?? DEFAULT_INPUT_TOKENS,
  };
}

/**
 * Why the planner cannot be compared with this run, or undefined when it can: the steady
 * phase must call the review tree (the planner knows its shape), and no other arrival may
 * overlap the measuring window (its requests would count as steady-state throughput).
 */
export function whyNoComparison(s: ScenarioFile, phase: SteadyPhase | undefined, window: { from: number; to: number }): string | undefined {
  if (!phase) return 'the scenario has no constant-rate arrival to reach a steady state';
  if (phase.tree !== 'review') return `the planner knows the review tree's shape only (steady phase calls ${phase.tree})`;
  for (const a of s.arrivals) {
    if (a === phase.arrival) continue;
    const spans: [number, number][] =
      a.kind === 'burst'
        ? Array.from({ length: a.repeat?.times ?? 1 }, (_, i) => a.at + i * (a.repeat?.every ?? 0)).map((t) => [t, t])
        : a.kind === 'constant'
          ? [[a.start, a.start + a.duration]]
          : a.kind === 'ramping'
            ? [[a.start, a.start + a.stages.reduce((sum, st) => sum + st.duration, 0)]]
            : [[a.start ?? 0, (a.start ?? 0) + Math.max(0, ...(a.records ?? []).map((r) => r.at))]];
    if (spans.some(([from, to]) => from <= window.to && to >= window.from)) {
      return `another arrival (${a.kind}) overlaps the steady window ${window.from.toFixed(0)}–${window.to.toFixed(0)} s`;
    }
  }
  return undefined;
}

/**
 * The measuring window in scenario seconds: after a warm-up (a third of the phase, at least
 * 4 call times, so queues have filled and earlier arrivals such as the opening burst have
 * drained), until 1 s before the phase ends (completions after it are not steady).
 */
export function steadyWindow(phase: SteadyPhase, callSeconds: number): { from: number; to: number } {
  const a = phase.arrival;
  const warmUp = Math.max(a.duration / 3, 4 * callSeconds);
  return { from: a.start + Math.min(warmUp, a.duration / 2), to: a.start + a.duration - 1 };
}

export interface StackParameters {
  outputTokensPerCall: number;
  latencySeconds: number;
  quotaRequestsPerMinute: number;
  quotaTokensPerMinute: number;
  budgetFraction: number;
  replicas: number;
  maxWaitSeconds?: number;
  burstUsers?: number;
}

/** The planner's input for a steady phase on the review tree and the stack's parameters. */
export function reviewPlanInput(phase: SteadyPhase, stack: StackParameters): PlanInput {
  return {
    ...REVIEW_SHAPE,
    userRequestsPerMinute: phase.arrival.perMinute,
    inputTokensPerCall: phase.inputTokensPerCall,
    outputTokensPerCall: stack.outputTokensPerCall,
    latencySeconds: stack.latencySeconds,
    quotaRequestsPerMinute: stack.quotaRequestsPerMinute,
    quotaTokensPerMinute: stack.quotaTokensPerMinute,
    budgetFraction: stack.budgetFraction,
    replicas: stack.replicas,
    ...(stack.maxWaitSeconds ? { toleratedWaitSeconds: stack.maxWaitSeconds } : {}),
    ...(stack.burstUsers ? { burstUsers: stack.burstUsers } : {}),
  };
}
