// Plan vs measured: what the capacity planner predicts for a run's parameters, next to what
// the run measured at steady state (completed user requests/min from agent_requests_total,
// mean calls in flight from llm_limiter_permits_in_use), with the relative error.
import { limiterMetrics } from '../instrumentation/metrics/definitions.ts';
import type { PlanInput } from './planner/index.ts';
import { plan } from './planner/index.ts';
import { queryScalar } from './prometheus.ts';

export interface Measured {
  userRequestsPerMinute: number;
  callsInFlight: number;
  /** Mean model call time after admission (what to give the planner as latency). */
  callSeconds: number | undefined;
  /** The steady-state window the figures come from, epoch ms. */
  window: { start: number; end: number };
}

export interface ComparisonRow {
  quantity: string;
  planned: number;
  measured: number;
  /** (measured - planned) / planned. */
  relativeError: number;
}

export interface PlanVsMeasured {
  binding: string;
  rows: ComparisonRow[];
}

const relativeError = (planned: number, measured: number): number => (planned === 0 ? (measured === 0 ? 0 : Infinity) : (measured - planned) / planned);

/** The planner's prediction for `input` beside `measured`. */
export function comparePlan(input: PlanInput, measured: Measured): PlanVsMeasured {
  const p = plan(input);
  const replicas = p.fleet.replicas;
  // What the fleet completes: the demand, capped by what the budget sustains.
  const sustained = Math.min(p.demand.userRequestsPerMinute, p.perReplica.userRequestsPerMinuteExact * replicas);
  const inFlight = p.inFlight.perReplica * replicas;
  return {
    binding: p.binding.axis,
    rows: [
      { quantity: 'user requests/min', planned: sustained, measured: measured.userRequestsPerMinute, relativeError: relativeError(sustained, measured.userRequestsPerMinute) },
      { quantity: 'calls in flight', planned: inFlight, measured: measured.callsInFlight, relativeError: relativeError(inFlight, measured.callsInFlight) },
    ],
  };
}

/**
 * Steady-state figures from Prometheus over [start, end] (epoch ms): completed requests per
 * minute from the agent's request counter, and the mean of the permits in use (sampled every
 * second through a subquery), summed over replicas.
 */
export async function measureSteadyState(prometheusUrl: string, start: number, end: number): Promise<Measured> {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const completed = (await queryScalar(prometheusUrl, `sum(increase(agent_requests_total[${seconds}s]))`, end)) ?? 0;
  const inFlight = (await queryScalar(prometheusUrl, `avg_over_time(sum(${limiterMetrics.permitsInUse.name})[${seconds}s:1s])`, end)) ?? 0;
  const d = limiterMetrics.callDuration.name;
  const callSeconds = await queryScalar(prometheusUrl, `sum(increase(${d}_sum[${seconds}s])) / sum(increase(${d}_count[${seconds}s]))`, end);
  return { userRequestsPerMinute: (completed / seconds) * 60, callsInFlight: inFlight, callSeconds, window: { start, end } };
}

export function formatComparison(c: PlanVsMeasured): string {
  const lines = [`plan vs measured (binding quota: ${c.binding})`, `  ${'quantity'.padEnd(20)}${'planned'.padStart(10)}${'measured'.padStart(10)}${'error'.padStart(9)}`];
  for (const r of c.rows) {
    const err = Number.isFinite(r.relativeError) ? `${(r.relativeError * 100).toFixed(1)}%` : 'n/a';
    lines.push(`  ${r.quantity.padEnd(20)}${r.planned.toFixed(1).padStart(10)}${r.measured.toFixed(1).padStart(10)}${err.padStart(9)}`);
  }
  return lines.join('\n');
}
