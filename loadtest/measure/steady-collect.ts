// What plan vs measured reads from a finished run: every steady-state figure Prometheus holds
// for the window, decoded from the answers to run-queries.ts's steadyQueries (steadyRunOf,
// pure), and collectSteadyRun, which reads the trees' shapes (GET /v1/agents) and asks those
// queries itself. The comparison (plan-vs-measured.ts) is pure over what this returns.
//
// How calls in flight are measured: as the time average L = (call-seconds spent) / (window),
// i.e. sum(rate(llm_limiter_call_duration_seconds_sum)). That is the integral of the number
// of calls in progress, so it cannot alias. The scraped llm_limiter_permits_in_use gauge
// CAN: k6's arrival-rate executors start requests on an exact period and Prometheus scrapes
// on an exact period, so every scrape may see the same phase of the request cycle (measured
// 5.0 vs a true mean of 4.1 at 120 requests/min with 1 s scrapes). The gauge's scraped mean
// is kept as a diagnostic; a GaugeProbe (random-time samples) gives its unbiased mean.
import { jobs } from '../../dashboards/config.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { type ModelShape, publishedShapes } from './agent-shapes.ts';
import type { GaugeProbe } from './gauge-probe.ts';
import { type Answers, answerQueries } from './prometheus-client.ts';
import { type fleetQueries, type modelQueries, type requestOutcomeQueries, steadyQueries } from './run-queries.ts';
import { type StackParameters, type SteadyFrame, steadyOfRun } from './steady-state.ts';

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
  requests?: WholeRequests;
}

/**
 * Whole requests the door admitted in a window and how it ended them, counted as the forward
 * run counts: served is admitted and not partial, counted when admitted. A deep tree's work in
 * a window (its completions, or a model's calls) also holds what requests admitted before it
 * still had to do, less what those admitted late in it leave: research_pipeline's requests run
 * 80 s, and its flash calls in a 240 s window were 38.4 requests' worth where the door
 * admitted 37 (a flash row 7 % over the plan, the door's count 2 %).
 */
export interface WholeRequests {
  served: number;
  shed: number;
  partial: number;
}

/** The whole requests of request admission's answers, or undefined where no limiter admitted a request (per-call admission). */
function wholeRequestsOf(a: Answers<ReturnType<typeof requestOutcomeQueries>>): WholeRequests | undefined {
  if (!a.admissions) return undefined;
  const partial = a.partial ?? 0;
  return { served: Math.max(0, (a.admitted ?? 0) - partial), shed: a.shed ?? 0, partial };
}

/** A finished run's steady phase, ready to compare: the tree's shape, the window (epoch ms) and what was measured in it. */
export interface SteadyRun extends SteadyFrame {
  /** The random-time samples' mean of the permits in use, when a probe ran. */
  probed: number | undefined;
  /** Requests shed in the window and what came before it; undefined when no limiter admitted a request (per-call admission). */
  steadyRequests: SteadyRequests | undefined;
  /** Per model, for a tree whose every model has its own limiter; else the fleet's. */
  figures:
    | { readonly kind: 'models'; readonly models: readonly ModelShape[]; readonly byModel: ReadonlyMap<string, ModelFigures>; readonly requests?: WholeRequests; readonly seconds: number }
    | { readonly kind: 'fleet'; readonly fleet: FleetFigures };
}

/** One model's steady-state figures from its answers. */
function modelFiguresOf(a: Answers<ReturnType<typeof modelQueries>>): ModelFigures {
  const okCallsPerMinuteByAgent = new Map(a.okCallsByAgent.map((s) => [s.metric.agent ?? 'unknown', (s.value / a.seconds) * 60]));
  return { okCallsPerMinute: [...okCallsPerMinuteByAgent.values()].reduce((x, y) => x + y, 0), okCallsPerMinuteByAgent, callsInFlight: a.callsInFlight ?? 0 };
}

/** The fleet's steady-state figures from its answers (request admission's counts only where a limiter admitted a request). */
export function fleetFiguresOf(a: Answers<ReturnType<typeof fleetQueries>>): FleetFigures {
  const requests = wholeRequestsOf(a);
  const { seconds, callSeconds, permitsInUseScraped } = a;
  return { seconds, completed: a.completed ?? 0, okCalls: a.okCalls ?? 0, callsInFlight: a.callsInFlight ?? 0, callSeconds, permitsInUseScraped, ...(requests ? { requests } : {}) };
}

/** What request admission did in the steady window, beside what came before it. */
export interface SteadyRequests {
  /** Requests shed in the steady window. */
  shed: number;
  /** The arrivals before the steady rate, in words (`the opening burst of 10 users`); undefined when none. */
  before: string | undefined;
}

/** The steady run of `frame` from the answers to its steadyQueries (pure), or why it cannot be compared (Prometheus saw no agent). */
export function steadyRunOf(frame: SteadyFrame, probed: number | undefined, a: Answers<ReturnType<typeof steadyQueries>>, prometheusUrl: string): SteadyRun | { skipped: string } {
  const outcomes = a.kind === 'models' ? a.requests : a.fleet;
  const steadyRequests = outcomes.admissions ? { shed: Math.round(outcomes.shed ?? 0), before: frame.before } : undefined;
  if (a.kind === 'models') {
    const byModel = new Map(a.models.map((m) => [m.model, modelFiguresOf(m)]));
    const requests = wholeRequestsOf(a.requests);
    const seconds = a.models[0]?.seconds ?? (frame.window.end - frame.window.start) / 1000;
    return { ...frame, probed, steadyRequests, figures: { kind: 'models', models: frame.models, byModel, seconds, ...(requests ? { requests } : {}) } };
  }
  const fleet = fleetFiguresOf(a.fleet);
  if (fleet.completed === 0 && fleet.callSeconds === undefined) {
    return { skipped: `Prometheus at ${prometheusUrl} has no agent service metrics for the run: does it scrape the agent (job ${jobs.agent})?` };
  }
  return { ...frame, probed, steadyRequests, figures: { kind: 'fleet', fleet } };
}

/** Everything plan vs measured needs from a finished run's steady phase, or why it cannot be compared. */
export async function collectSteadyRun(r: RunComparisonInput): Promise<SteadyRun | { skipped: string }> {
  const shapes = r.scenario.mock ? undefined : await publishedShapes(r.prometheusUrl, r.agentUrl);
  const { frame } = steadyOfRun(r.scenario, shapes, r.stack.latencySeconds, r.testStartedAt, r.endedAt);
  if ('skipped' in frame) return frame;
  const answers = await answerQueries(r.prometheusUrl, steadyQueries(frame.window, frame.models));
  return steadyRunOf(frame, r.probe?.meanBetween(frame.window.start, frame.window.end), answers, r.prometheusUrl);
}
