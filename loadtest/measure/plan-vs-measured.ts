// Plan vs measured: what the capacity planner predicts for a run's parameters, next to what
// the run measured at steady state, with the relative error.
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
import type { TreeShape } from '../../agent/tree-shapes.ts';
import { type ModelPlan, type ModelPlans, planModels } from '../planner/model-plans.ts';
import { type Plan, type PlanInput, plan } from '../planner/index.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { type AgentShape, type AgentShapes, fetchAgentShapes, type ModelShape, scrapedAgentUrl } from './agent-shapes.ts';
import type { GaugeProbe } from './gauge-probe.ts';
import { query, queryScalar } from './prometheus-client.ts';
import { type StackParameters, type SteadyPhase, steadyPhase, steadyPlanInput, steadyWindow, whyNoComparison } from './steady-state.ts';

/** How the limiters admitted the run's work: whole requests (the default) or each call on its own. */
export type Admission = 'request' | 'call';

/** User requests per minute by how request admission ended them (llm_limiter_requests_total). */
export interface RequestRates {
  served: number;
  shed: number;
  partial: number;
}

export interface Measured {
  /**
   * User requests served per minute, in whole-request equivalents: successful model calls per
   * minute / calls per request. Under per-call admission requests still answer (with missing
   * branches), so the answered count would show the demand, not what the quota sustains.
   */
  userRequestsPerMinute: number;
  /**
   * Under request admission, the limiters' own count of whole requests per minute: completed
   * (served), shed and partial; undefined when no limiter admitted a request (per-call admission).
   */
  requests?: RequestRates;
  /** HTTP requests the agent service answered per minute (diagnostic: includes partial ones). */
  answeredRequestsPerMinute: number;
  /** Time-averaged model calls in progress (call-seconds per second), summed over replicas. */
  callsInFlight: number;
  /** Mean of the permits-in-use gauge as Prometheus scraped it (periodic: may alias). */
  permitsInUseScraped: number | undefined;
  /** Mean of the permits-in-use gauge sampled at random times, when a probe ran. */
  permitsInUseProbed?: number;
  /** Mean model call time after admission. */
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

/** The plan's answer at the tested demand, for the run's verdict. */
export interface PlannedOutcome {
  demandUserRequestsPerMinute: number;
  /** What the budget sustains, user requests per minute (fleet). */
  sustainedUserRequestsPerMinute: number;
  /** Whether the demand fits the budget. */
  fits: boolean;
  /** The planner's best fix when it does not fit. */
  bestFix?: string;
}

export interface PlanVsMeasured {
  /** The binding quota axis (and, for a tree of several models, the binding model). */
  binding: string;
  /** Per model, for a tree of several: each model planned against its own quota. */
  models?: { model: string; limiter: string; sustainedUserRequestsPerMinute: number; wholeUserRequestsPerMinute: number; binding: boolean }[];
  /** What the plan's input tokens per call came from. */
  tokens?: 'calibrated' | 'given';
  /** How the limiters admitted work in the run (request: the rows compare served, shed and partial). */
  admission: Admission;
  planned: PlannedOutcome;
  /** Which tokens the plan, the budget and the quota counted. */
  countedTokens: string;
  /** The latency the planner was given, s (compare with measured.callSeconds). */
  plannedCallSeconds: number;
  measuredCallSeconds: number | undefined;
  /** Diagnostic: the scraped gauge's mean (aliases with periodic arrivals; not compared). */
  permitsInUseScraped: number | undefined;
  window: { start: number; end: number };
  rows: ComparisonRow[];
  /**
   * Whole requests the limiters shed in the steady window (each limiter counts a request once:
   * the busiest limiter's count), and what arrived before the steady rate (an opening burst),
   * so the verdict tells the sheds of a cold start or a burst from the steady rate's.
   */
  steadyRequests?: SteadyRequests;
}

/** What request admission did in the steady window, beside what came before it. */
export interface SteadyRequests {
  /** Requests shed in the steady window. */
  shed: number;
  /** The arrivals before the steady rate, in words (`the opening burst of 10 users`); undefined when none. */
  before: string | undefined;
}

const relativeError = (planned: number, measured: number): number =>
  planned === 0 ? (measured === 0 ? 0 : Number.POSITIVE_INFINITY) : (measured - planned) / planned;

/** The planner's prediction for `input` beside `measured`. */
export function comparePlan(input: PlanInput, measured: Measured): PlanVsMeasured {
  const p = plan(input);
  const replicas = p.fleet.replicas;
  const requests = measured.requests;
  const admission: Admission = requests ? 'request' : 'call';
  const row = (quantity: string, planned: number, value: number): ComparisonRow => ({
    quantity,
    planned,
    measured: value,
    relativeError: relativeError(planned, value),
  });
  const rows: ComparisonRow[] = [];
  let inFlight: number;
  let permitsHeld: number;
  if (requests) {
    // Request admission: what the budget sustains is served whole, the rest shed at the door.
    const a = p.admission;
    rows.push(
      row('served requests/min', a.servedUserRequestsPerMinute, requests.served),
      row('shed requests/min', a.shedUserRequestsPerMinute, requests.shed),
      row('partial requests/min', a.partialUserRequestsPerMinute, requests.partial),
    );
    // Admitted requests are funded before they take a permit: permits are held only by calls.
    inFlight = ((a.servedUserRequestsPerMinute * p.tree.callsPerRequest) / 60) * p.input.latencySeconds;
    permitsHeld = inFlight;
  } else {
    // Per-call admission: what the fleet completes is the demand, or under overload the share
    // the budget lets through, in whole-request equivalents.
    rows.push(row('served requests/min', p.overload.servedUserRequestsPerMinute, measured.userRequestsPerMinute));
    inFlight = p.inFlight.perReplica * replicas;
    // The wrapper holds a permit while it waits for token budget, so once the budget binds
    // (demand above what it sustains) every permit ends up held: the permits saturate.
    const overloaded = p.demand.userRequestsPerMinute > p.perReplica.userRequestsPerMinuteExact * replicas;
    permitsHeld = overloaded ? p.perReplica.permits * replicas : inFlight;
  }
  rows.push(row('calls in flight', inFlight, measured.callsInFlight));
  if (measured.permitsInUseProbed !== undefined) rows.push(row('permits in use', permitsHeld, measured.permitsInUseProbed));
  const sustained = p.perReplica.userRequestsPerMinuteExact * replicas;
  const best = p.fixes[0];
  return {
    binding: p.binding.axis,
    admission,
    planned: {
      demandUserRequestsPerMinute: p.demand.userRequestsPerMinute,
      sustainedUserRequestsPerMinute: sustained,
      fits: p.demand.userRequestsPerMinute <= sustained + 1e-9,
      ...(best && p.demand.userRequestsPerMinute > sustained + 1e-9 ? { bestFix: best.summary } : {}),
    },
    countedTokens: p.input.countedTokens,
    plannedCallSeconds: p.input.latencySeconds,
    measuredCallSeconds: measured.callSeconds,
    permitsInUseScraped: measured.permitsInUseScraped,
    window: measured.window,
    rows,
  };
}

/** Each model's share of the tree planned against its own quota (its calibrated tokens per call when known). */
export function planPerModel(models: readonly ModelShape[], phase: SteadyPhase, stack: StackParameters): ModelPlans {
  return planModels(
    models.map((m) => ({ model: m.model, limiter: m.limiter, calls: m.modelCallsPerRequest, width: m.shape.parallelBranches, agents: stack.agentsPerModel?.[m.model] })),
    (share) => steadyPlanInput(phase, models.find((m) => m.model === share.model)?.shape as TreeShape, stack, share.model),
  );
}

/** What the budget sustains for a tree of `shape`: user requests per minute, with the plan that binds (the binding model's, for a tree of several with limiters) and its limiter. */
export function plannedCapacity(shape: AgentShape, phase: SteadyPhase, stack: StackParameters): { perMinute: number; plan: Plan; binding: string; limiter?: string } {
  const models = shape.models?.filter((m) => m.limiter !== undefined) ?? [];
  if (models.length > 0 && models.length === shape.models?.length) {
    const plans = planPerModel(models, phase, stack);
    const binding = plans.models.find((m) => m.model === plans.binding) as ModelPlan;
    return { perMinute: binding.sustainedUserRequestsPerMinute, plan: binding.plan, binding: `${binding.plan.binding.axis} of ${binding.model}`, limiter: binding.limiter };
  }
  const p = plan(steadyPlanInput(phase, shape, stack));
  return { perMinute: p.perReplica.userRequestsPerMinuteExact * p.fleet.replicas, plan: p, binding: p.binding.axis };
}

/** One model's steady-state figures: its limiter's successful calls (per agent too) and calls in flight. */
async function measureModel(
  prometheusUrl: string,
  start: number,
  end: number,
  limiter: string,
): Promise<{ okCallsPerMinute: number; okCallsPerMinuteByAgent: Map<string, number>; callsInFlight: number }> {
  const seconds = Math.max(1, Math.round((end - start) / 1000));
  const w = `[${seconds}s]`;
  const l = `limiter=${JSON.stringify(limiter)}`;
  const byAgent = await query(prometheusUrl, `sum by (agent) (increase(${limiterMetrics.calls.name}{outcome="ok",${l}}${w}))`, end);
  const okCallsPerMinuteByAgent = new Map(byAgent.map((s) => [s.metric.agent ?? 'unknown', (s.value / seconds) * 60]));
  const callsInFlight = (await queryScalar(prometheusUrl, `sum(rate(${limiterMetrics.callDuration.name}_sum{${l}}${w}))`, end)) ?? 0;
  return { okCallsPerMinute: [...okCallsPerMinuteByAgent.values()].reduce((a, b) => a + b, 0), okCallsPerMinuteByAgent, callsInFlight };
}

/**
 * A model's completed work in whole-request equivalents per minute: its successful calls,
 * each weighted by its agent's calibrated tokens per call, over a request's tokens on that
 * model (a call counts for what it costs the budget: a shed request's cheap calls are not a
 * whole request). Without calibration, calls over calls per request.
 */
function wholeRequestsPerMinute(okByAgent: ReadonlyMap<string, number>, callsPerRequest: number, tokensPerCall: number, tokensOfAgent?: Readonly<Record<string, number>>): number {
  const calls = [...okByAgent.values()].reduce((a, b) => a + b, 0);
  if (!tokensOfAgent || [...okByAgent.keys()].some((agent) => tokensOfAgent[agent] === undefined)) return calls / callsPerRequest;
  const tokens = [...okByAgent].reduce((sum, [agent, perMinute]) => sum + perMinute * (tokensOfAgent[agent] as number), 0);
  return tokens / (tokensPerCall * callsPerRequest);
}

/** One model's planned figures in a run. */
export interface PlannedModel {
  /** User requests per minute whose calls on this model complete. */
  servedPlanned: number;
  /** Its calls in flight (Little's law at its own call time). */
  inFlight: number;
}

/**
 * What each model of a tree is planned to serve and hold in flight. Whole requests at the door
 * (request admission): a request is funded on every limiter or shed, and each replica's
 * window on each limiter holds whole requests only, so every model serves the whole requests
 * the tightest one holds (the plan's served figure, not the fraction its tokens alone would
 * fund), at its own call time. Call by call: each model serves its own share, and the permits
 * saturate where its budget binds.
 */
export function plannedPerModel(plans: ModelPlans, admission: Admission, permits: number | undefined): { models: Map<string, PlannedModel>; permits: number } {
  const wholeRequests = admission !== 'call';
  const wholeServed = Math.min(...plans.models.map((m) => m.plan.admission.servedUserRequestsPerMinute));
  const models = new Map<string, PlannedModel>();
  let permitsPlanned = 0;
  for (const m of plans.models) {
    const p = m.plan;
    const replicas = p.fleet.replicas;
    const servedPlanned = wholeRequests ? wholeServed : p.overload.servedUserRequestsPerMinute;
    const inFlight = wholeRequests ? ((servedPlanned * p.tree.callsPerRequest) / 60) * p.input.latencySeconds : p.inFlight.perReplica * replicas;
    const overloaded = p.demand.userRequestsPerMinute > p.perReplica.userRequestsPerMinuteExact * replicas;
    permitsPlanned += !wholeRequests && overloaded && permits ? permits * replicas : inFlight;
    models.set(m.model, { servedPlanned, inFlight });
  }
  return { models, permits: permitsPlanned };
}

/**
 * Plan vs measured per model, for a tree whose models each have their own quota and limiter:
 * each model's share planned against its quota (its calibrated tokens per call when known),
 * beside what its limiter completed: user requests per minute in whole-request equivalents of
 * that model's calls, and its calls in flight; permits in use over every limiter.
 */
async function compareModels(
  r: RunComparisonInput,
  phase: NonNullable<ReturnType<typeof steadyPhase>>,
  models: readonly ModelShape[],
  window: { start: number; end: number },
  probed: number | undefined,
): Promise<PlanVsMeasured> {
  const latencySeconds = r.stack.latencySeconds;
  const plans = planPerModel(models, phase, r.stack);
  const rows: ComparisonRow[] = [];
  let callSecondsSum = 0;
  let callsSum = 0;
  const binding = plans.models.find((m) => m.model === plans.binding);
  const wholeRequests = r.stack.admission !== 'call';
  const planned = plannedPerModel(plans, r.stack.admission ?? 'request', r.stack.permits);
  for (const m of plans.models) {
    const p = m.plan;
    const measured = await measureModel(r.prometheusUrl, window.start, window.end, m.limiter as string);
    const { servedPlanned, inFlight } = planned.models.get(m.model) as PlannedModel;
    const served = wholeRequestsPerMinute(measured.okCallsPerMinuteByAgent, p.tree.callsPerRequest, p.input.inputTokensPerCall, r.stack.inputTokensPerAgent);
    rows.push({ quantity: `user requests/min ${m.model}`, planned: servedPlanned, measured: served, relativeError: 0 });
    rows.push({ quantity: `calls in flight ${m.model}`, planned: inFlight, measured: measured.callsInFlight, relativeError: 0 });
    callSecondsSum += measured.callsInFlight;
    callsSum += measured.okCallsPerMinute / 60;
  }
  if (probed !== undefined) rows.push({ quantity: 'permits in use', planned: planned.permits, measured: probed, relativeError: 0 });
  // The verdict reads the binding model: it sustains what the whole tree can serve.
  const demand = binding?.plan.demand.userRequestsPerMinute ?? 0;
  const sustained = binding?.sustainedUserRequestsPerMinute ?? 0;
  const fits = demand <= sustained + 1e-9;
  const bestFix = binding?.plan.fixes[0]?.summary;
  return {
    binding: `${binding?.plan.binding.axis ?? 'tokens'} of ${plans.binding}`,
    admission: wholeRequests ? 'request' : 'call',
    planned: { demandUserRequestsPerMinute: demand, sustainedUserRequestsPerMinute: sustained, fits, ...(!fits && bestFix ? { bestFix } : {}) },
    models: plans.models.map((m) => ({
      model: m.model,
      limiter: m.limiter as string,
      sustainedUserRequestsPerMinute: m.sustainedUserRequestsPerMinute,
      wholeUserRequestsPerMinute: m.wholeUserRequestsPerMinute,
      binding: m.model === plans.binding,
    })),
    tokens: r.stack.inputTokensPerModel ? 'calibrated' : 'given',
    countedTokens: r.stack.countedTokens,
    plannedCallSeconds: latencySeconds,
    measuredCallSeconds: callsSum > 0 ? callSecondsSum / callsSum : undefined,
    permitsInUseScraped: undefined,
    window,
    rows: rows.map((row) => ({ ...row, relativeError: relativeError(row.planned, row.measured) })),
  };
}

/**
 * Steady-state figures from Prometheus over [start, end] (epoch ms), summed over replicas:
 * served user requests per minute (successful model calls / calls per request) and the
 * answered ones from the agent's request counter, the time-averaged calls in
 * flight and the mean call time from the limiter's call-duration histogram, and the scraped
 * permits-in-use gauge's mean (diagnostic).
 */
export async function measureSteadyState(prometheusUrl: string, start: number, end: number, callsPerRequest: number): Promise<Measured> {
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
  const perMinute = (n: number) => (n / seconds) * 60;
  const requests = admissions
    ? { served: perMinute(await byOutcome('completed')), shed: perMinute(await byOutcome('shed')), partial: perMinute(await byOutcome('partial')) }
    : undefined;
  return {
    userRequestsPerMinute: perMinute(okCalls / callsPerRequest),
    answeredRequestsPerMinute: perMinute(completed),
    ...(requests ? { requests } : {}),
    callsInFlight,
    permitsInUseScraped,
    callSeconds,
    window: { start, end },
  };
}

export function formatComparison(c: PlanVsMeasured): string {
  const width = Math.max(20, ...c.rows.map((r) => r.quantity.length + 2));
  const seconds = Math.round((c.window.end - c.window.start) / 1000);
  const call = c.measuredCallSeconds === undefined ? '-' : `${c.measuredCallSeconds.toFixed(3)} s`;
  const models = c.models && c.models.length > 0 ? `; each model planned against its own quota, ${c.tokens === 'calibrated' ? 'input tokens per call calibrated from the tree' : 'input tokens per call as given'}` : '';
  const lines = [
    `plan vs measured (binding quota: ${c.binding}, ${c.countedTokens} tokens counted${models}; ${c.admission === 'request' ? 'request admission' : 'per-call admission'}; steady window ${seconds} s; call time planned ${c.plannedCallSeconds.toFixed(3)} s, measured ${call})`,
    `  ${'quantity'.padEnd(width)}${'planned'.padStart(10)}${'measured'.padStart(10)}${'error'.padStart(9)}`,
  ];
  for (const r of c.rows) {
    const err = Number.isFinite(r.relativeError) ? `${r.relativeError >= 0 ? '+' : ''}${(r.relativeError * 100).toFixed(1)}%` : 'n/a';
    lines.push(`  ${r.quantity.padEnd(width)}${r.planned.toFixed(1).padStart(10)}${r.measured.toFixed(1).padStart(10)}${err.padStart(9)}`);
  }
  return lines.join('\n');
}

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

/** Plan vs measured over a finished run's steady phase, or why it cannot be compared. */
/** The published shapes of the agent service the run called, or why they cannot be read. */
async function agentShapes(r: RunComparisonInput): Promise<AgentShapes | { skipped: string }> {
  try {
    const url = r.agentUrl ?? (await scrapedAgentUrl(r.prometheusUrl, jobs.agent));
    if (!url) return { skipped: `Prometheus at ${r.prometheusUrl} scrapes no agent service (job ${jobs.agent}) to read the trees' shapes from` };
    return await fetchAgentShapes(url);
  } catch (e) {
    return { skipped: `cannot read the agent service's trees: ${(e as Error).message}` };
  }
}

/** Plan vs measured over a finished run's steady phase, or why it cannot be compared. */
export async function compareRun(r: RunComparisonInput): Promise<PlanVsMeasured | { skipped: string }> {
  const phase = steadyPhase(r.scenario);
  const window = phase ? steadyWindow(phase, r.stack.latencySeconds) : { from: 0, to: 0 };
  if (r.scenario.mock) return { skipped: "the scenario changes the mock provider's settings (quota, throttling) mid-run: the plan knows only those at the start" };
  const shapes = await agentShapes(r);
  if ('skipped' in shapes) return shapes as { skipped: string };
  const why = whyNoComparison(r.scenario, phase, window, shapes);
  const shape = phase && shapes[phase.tree];
  if (why || !phase || !shape) return { skipped: why ?? 'no steady phase' };
  const from = r.testStartedAt + window.from * 1000;
  const to = Math.min(r.testStartedAt + window.to * 1000, r.endedAt);
  if (to - from < 3000) return { skipped: `the steady window is too short (${((to - from) / 1000).toFixed(1)} s): lengthen the steady phase` };
  const steadyRequests = await steadyRequestsIn(r, phase, from, to);
  const models = shape.models?.filter((m) => m.limiter !== undefined) ?? [];
  if (models.length > 0 && models.length === shape.models?.length) {
    return withSteady(await compareModels(r, phase, models, { start: from, end: to }, r.probe?.meanBetween(from, to)), steadyRequests);
  }
  const input = steadyPlanInput(phase, shape, r.stack);
  const callsPerRequest = plan(input).tree.callsPerRequest;
  const measured = await measureSteadyState(r.prometheusUrl, from, to, callsPerRequest);
  if (measured.answeredRequestsPerMinute === 0 && measured.callSeconds === undefined) {
    return { skipped: `Prometheus at ${r.prometheusUrl} has no agent service metrics for the run: does it scrape the agent (job ${jobs.agent})?` };
  }
  measured.permitsInUseProbed = r.probe?.meanBetween(from, to);
  const latencySeconds = r.planLatency === 'measured' && measured.callSeconds ? measured.callSeconds : r.stack.latencySeconds;
  return withSteady(comparePlan(steadyPlanInput(phase, shape, { ...r.stack, latencySeconds }), measured), steadyRequests);
}

const withSteady = (c: PlanVsMeasured, steady: SteadyRequests | undefined): PlanVsMeasured => (steady ? { ...c, steadyRequests: steady } : c);

/**
 * Requests shed in the steady window [from, to] (epoch ms), by the limiters' own count, and
 * the arrivals that came before the steady phase; undefined when no limiter admitted a request.
 */
async function steadyRequestsIn(r: RunComparisonInput, phase: SteadyPhase, from: number, to: number): Promise<SteadyRequests | undefined> {
  const seconds = Math.max(1, Math.round((to - from) / 1000));
  const name = limiterMetrics.requests.name;
  const admissions = await queryScalar(r.prometheusUrl, `sum(increase(${name}[${seconds}s]))`, to).catch(() => undefined);
  if (!admissions) return undefined;
  const shed = (await queryScalar(r.prometheusUrl, `max(sum by (limiter) (increase(${name}{outcome="shed"}[${seconds}s])))`, to).catch(() => undefined)) ?? 0;
  return { shed: Math.round(shed), before: arrivalsBefore(r.scenario, phase) };
}

/** The arrivals that start before the steady phase, in words; undefined when none. */
export function arrivalsBefore(scenario: ScenarioFile, phase: SteadyPhase): string | undefined {
  const before = scenario.arrivals.filter((a) => a !== phase.arrival && a.kind === 'burst' && a.at < phase.arrival.start);
  if (before.length === 0) return undefined;
  const users = before.reduce((n, a) => n + (a.kind === 'burst' ? a.users * (a.repeat?.times ?? 1) : 0), 0);
  return before.length === 1 ? `the opening burst of ${users} users` : `${before.length} bursts of ${users} users before it`;
}
