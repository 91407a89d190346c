// What plan vs measured reads from a finished run, in one pass: the trees' shapes (GET
// /v1/agents) and every steady-state figure Prometheus holds for the window. The comparison
// itself (plan-vs-measured.ts) is pure over what this returns.
//
// How calls in flight are measured: as the time average L = (call-seconds spent) / (window),
// i.e. sum(rate(llm_limiter_call_duration_seconds_sum)). That is the integral of the number
// of calls in progress, so it cannot alias. The scraped llm_limiter_permits_in_use gauge
// CAN: k6's arrival-rate executors start requests on an exact period and Prometheus scrapes
// on an exact period, so every scrape may see the same phase of the request cycle (measured
// 5.0 vs a true mean of 4.1 at 120 requests/min with 1 s scrapes). The gauge's scraped mean
// is kept as a diagnostic; a GaugeProbe (random-time samples) gives its unbiased mean.
import { agentMetrics } from '../../agent/metrics.ts';
import { jobs } from '../../dashboards/config.ts';
import { limiterMetrics } from '../../instrumentation/metrics/definitions.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { type AgentShape, type ModelShape, publishedShapes } from './agent-shapes.ts';
import type { GaugeProbe } from './gauge-probe.ts';
import { query, queryScalar } from './prometheus-client.ts';
import { type StackParameters, type SteadyFrame, steadyFrame } from './steady-state.ts';

export interface RunComparisonInput {
  scenario: ScenarioFile;
  prometheusUrl: string;
  /** Time 0 of the scenario (K6Result.testStartedAt) and the end of the run, epoch ms. */
  testStartedAt: number;
  endedAt: number;
  stack: StackParameters;
  /** Random-time samples of the permits in use during the run. */
  probe?: GaugeProbe;
  /**
   * An agent replica's base URL, to read its trees' shapes (GET /v1/agents). Default: a
   * replica that Prometheus scrapes under the agent job.
   */
  agentUrl?: string;
  /**
   * The latency the planner is given: the stack's configured one (default; what a user plans
   * with, so client overhead shows as error), or the mean call time the limiter measured in
   * the window (checks the planner's model itself, whatever the machine's load adds per call).
   */
  planLatency?: 'configured' | 'measured';
}

/** One model's steady-state figures: its limiter's successful calls (per agent too) and calls in flight. */
export interface ModelFigures {
  okCallsPerMinute: number;
  okCallsPerMinuteByAgent: ReadonlyMap<string, number>;
  callsInFlight: number;
}

/**
 * The fleet's steady-state figures over the window, summed over replicas: counts over
 * `seconds` (the agent's answered requests, the limiters' successful calls, and under
 * request admission their whole requests by outcome), the time-averaged calls in flight, the
 * mean call time, and the scraped permits-in-use gauge's mean (diagnostic).
 */
export interface FleetFigures {
  seconds: number;
  completed: number;
  okCalls: number;
  callsInFlight: number;
  callSeconds: number | undefined;
  permitsInUseScraped: number | undefined;
  /** Whole requests by how request admission ended them; undefined when no limiter admitted a request (per-call admission). */
  requests?: { served: number; shed: number; partial: number };
}

/** A finished run's steady phase, ready to compare: the tree's shape, the window (epoch ms) and what was measured in it. */
export interface SteadyRun extends SteadyFrame {
  /** The random-time samples' mean of the permits in use, when a probe ran. */
  probed: number | undefined;
  /** Per model, for a tree whose every model has its own limiter; else the fleet's. */
  figures: { readonly kind: 'models'; readonly models: readonly ModelShape[]; readonly byModel: ReadonlyMap<string, ModelFigures> } | { readonly kind: 'fleet'; readonly fleet: FleetFigures };
}

/** The models of a tree that each go through a limiter of their own: all of them, or none when one has no limiter. */
export function limitedModels(shape: AgentShape): readonly ModelShape[] {
  const models = shape.models?.filter((m) => m.limiter !== undefined) ?? [];
  return models.length > 0 && models.length === shape.models?.length ? models : [];
}

/** One model's steady-state figures: its limiter's successful calls (per agent too) and calls in flight. */
async function modelFigures(prometheusUrl: string, start: number, end: number, limiter: string): Promise<ModelFigures> {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const w = `[${seconds}s]`;
  const l = `limiter=${JSON.stringify(limiter)}`;
  const byAgent = await query(prometheusUrl, `sum by (agent) (increase(${limiterMetrics.calls.name}{outcome="ok",${l}}${w}))`, end);
  const okCallsPerMinuteByAgent = new Map(byAgent.map((s) => [s.metric.agent ?? 'unknown', (s.value / seconds) * 60]));
  const callsInFlight = (await queryScalar(prometheusUrl, `sum(rate(${limiterMetrics.callDuration.name}_sum{${l}}${w}))`, end)) ?? 0;
  return { okCallsPerMinute: [...okCallsPerMinuteByAgent.values()].reduce((a, b) => a + b, 0), okCallsPerMinuteByAgent, callsInFlight };
}

/** The fleet's steady-state figures from Prometheus over [start, end] (epoch ms). */
export async function fleetFigures(prometheusUrl: string, start: number, end: number): Promise<FleetFigures> {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const w = `[${seconds}s]`;
  const d = limiterMetrics.callDuration.name;
  const completed = (await queryScalar(prometheusUrl, `sum(increase(${agentMetrics.requests.name}${w}))`, end)) ?? 0;
  const okCalls = (await queryScalar(prometheusUrl, `sum(increase(${limiterMetrics.calls.name}{outcome="ok"}${w}))`, end)) ?? 0;
  const callsInFlight = (await queryScalar(prometheusUrl, `sum(rate(${d}_sum${w}))`, end)) ?? 0;
  const callSeconds = await queryScalar(prometheusUrl, `sum(increase(${d}_sum${w})) / sum(increase(${d}_count${w}))`, end);
  const permitsInUseScraped = await queryScalar(prometheusUrl, `avg_over_time(sum(${limiterMetrics.permitsInUse.name})[${seconds}s:1s])`, end);
  // Every limiter a request draws on counts it once: the busiest limiter counts them all.
  const byOutcome = async (outcome: string) =>
    (await queryScalar(prometheusUrl, `max(sum by (limiter) (increase(${limiterMetrics.requests.name}{outcome="${outcome}"}${w})))`, end)) ?? 0;
  const admissions = await queryScalar(prometheusUrl, `sum(increase(${limiterMetrics.requests.name}{outcome=~"admitted|shed"}${w}))`, end);
  const requests = admissions ? { served: await byOutcome('completed'), shed: await byOutcome('shed'), partial: await byOutcome('partial') } : undefined;
  return { seconds, completed, okCalls, callsInFlight, callSeconds, permitsInUseScraped, ...(requests ? { requests } : {}) };
}

/** Everything plan vs measured needs from a finished run's steady phase, or why it cannot be compared. */
export async function collectSteadyRun(r: RunComparisonInput): Promise<SteadyRun | { skipped: string }> {
  if (r.scenario.mock) return { skipped: "the scenario changes the mock provider's settings (quota, throttling) mid-run: the plan knows only those at the start" };
  const shapes = await publishedShapes(r.prometheusUrl, r.agentUrl);
  if ('skipped' in shapes) return shapes as { skipped: string };
  const frame = steadyFrame(r.scenario, shapes, r.stack.latencySeconds, r.testStartedAt, r.endedAt);
  if ('skipped' in frame) return frame;
  const { start, end } = frame.window;
  const probed = r.probe?.meanBetween(start, end);
  const models = limitedModels(frame.shape);
  if (models.length > 0) {
    const byModel = new Map<string, ModelFigures>();
    for (const m of models) byModel.set(m.model, await modelFigures(r.prometheusUrl, start, end, m.limiter as string));
    return { ...frame, probed, figures: { kind: 'models', models, byModel } };
  }
  const fleet = await fleetFigures(r.prometheusUrl, start, end);
  if (fleet.completed === 0 && fleet.callSeconds === undefined) {
    return { skipped: `Prometheus at ${r.prometheusUrl} has no agent service metrics for the run: does it scrape the agent (job ${jobs.agent})?` };
  }
  return { ...frame, probed, figures: { kind: 'fleet', fleet } };
}
