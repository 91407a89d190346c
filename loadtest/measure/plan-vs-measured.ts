// Plan vs measured: what the capacity planner predicts for a run's parameters, next to what
// the run measured at steady state, with the relative error. Pure: steady-collect.ts reads
// the run (the shapes and every Prometheus figure) first, and compareSteadyRun compares.
import type { ForwardFigure } from '../planner/forward-plan.ts';
import type { ModelPlan, ModelPlans } from '../planner/model-plans.ts';
import { type Plan, type PlanInput, plan } from '../planner/index.ts';
import type { AgentShape } from './agent-shapes.ts';
import { collectSteadyRun, type FleetFigures, type ModelFigures, type RunComparisonInput, type SteadyRequests, type SteadyRun, type WholeRequests } from './steady-collect.ts';
import { planSteadyPhase, type SteadyPlan } from './steady-plan.ts';
import { limitedModels, type StackParameters, type SteadyPhase } from './steady-state.ts';

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
   * Under request admission, the limiters' own count of whole requests per minute: served
   * (admitted, not partial: WholeRequests), shed and partial; undefined when no limiter
   * admitted a request (per-call admission).
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
  /** The forward run the served figures come from (request admission of a served tree), else the arithmetic's whole windows. */
  forwardRun?: ForwardFigure;
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

/** What the budget sustains for a tree of `shape`: user requests per minute, with the plan that binds (the binding model's, for a tree of several with limiters) and its limiter. */
export function plannedCapacity(shape: AgentShape, phase: SteadyPhase, stack: StackParameters): { perMinute: number; plan: Plan; binding: string; limiter?: string } {
  const planned = planSteadyPhase(phase, shape, limitedModels(shape), stack);
  const plans = planned.models;
  const forward = stack.admission !== 'call' ? stack.forwardRun : undefined;
  if (plans) {
    const binding = plans.models.find((m) => m.model === plans.binding) as ModelPlan;
    const axis = `${binding.plan.binding.axis} of ${binding.model}`;
    if (forward) return { perMinute: forward.servedPerMinute, plan: binding.plan, binding: `${axis}; served as the forward run through the door found`, limiter: binding.limiter };
    return { perMinute: binding.sustainedUserRequestsPerMinute, plan: binding.plan, binding: axis, limiter: binding.limiter };
  }
  const p = plan(planned.input);
  return { perMinute: p.perReplica.userRequestsPerMinuteExact * p.fleet.replicas, plan: p, binding: p.binding.axis };
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
 * fund), at its own call time (`wholeServed`: those whole requests). Call by call: each model
 * serves its own share, and the permits saturate where its budget binds.
 */
export function plannedPerModel(
  plans: ModelPlans,
  admission: Admission,
  permits: number | undefined,
  forward?: ForwardFigure,
): { models: Map<string, PlannedModel>; permits: number; wholeServed: number } {
  const wholeRequests = admission !== 'call';
  // The forward run, where the tree had one, served what the door really admits of it; else whole windows.
  const demand = plans.models[0]?.plan.demand.userRequestsPerMinute ?? 0;
  const wholeServed = forward ? Math.min(demand, forward.servedPerMinute) : Math.min(...plans.models.map((m) => m.plan.admission.servedUserRequestsPerMinute));
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
  return { models, permits: permitsPlanned, wholeServed };
}

/**
 * Plan vs measured per model, for a tree whose models each have their own quota and limiter:
 * each model's share planned against its quota (its calibrated tokens per call when known),
 * beside what was measured. Under request admission, the whole requests the door served, shed
 * and cut partial (each model serves the same requests), then each model's calls in flight.
 * Call by call, each model's own served rate (its calls in whole-request equivalents) and
 * calls in flight. Then permits in use over every limiter.
 */
function compareModels(
  stack: StackParameters,
  plans: ModelPlans,
  figures: { readonly byModel: ReadonlyMap<string, ModelFigures>; readonly requests?: WholeRequests; readonly seconds: number },
  window: { start: number; end: number },
  probed: number | undefined,
): PlanVsMeasured {
  const { byModel, requests } = figures;
  const latencySeconds = stack.latencySeconds;
  const rows: ComparisonRow[] = [];
  let callSecondsSum = 0;
  let callsSum = 0;
  const binding = plans.models.find((m) => m.model === plans.binding);
  const wholeRequests = stack.admission !== 'call';
  const forward = wholeRequests ? stack.forwardRun : undefined;
  const planned = plannedPerModel(plans, stack.admission ?? 'request', stack.permits, forward);
  const demand = binding?.plan.demand.userRequestsPerMinute ?? 0;
  // Whole requests at the door: every model serves the same requests, counted once as the door admitted them.
  const door = wholeRequests && requests ? requests : undefined;
  if (door) {
    const served = planned.wholeServed;
    const perMinute = (n: number) => (n / figures.seconds) * 60;
    rows.push(
      { quantity: 'served requests/min', planned: served, measured: perMinute(door.served), relativeError: 0 },
      { quantity: 'shed requests/min', planned: Math.max(0, demand - served), measured: perMinute(door.shed), relativeError: 0 },
      { quantity: 'partial requests/min', planned: 0, measured: perMinute(door.partial), relativeError: 0 },
    );
  }
  for (const m of plans.models) {
    const p = m.plan;
    const measured = byModel.get(m.model) as ModelFigures;
    const { servedPlanned, inFlight } = planned.models.get(m.model) as PlannedModel;
    if (!door) {
      // Call by call each model serves its own share: its calls in whole-request equivalents.
      const served = wholeRequestsPerMinute(measured.okCallsPerMinuteByAgent, p.tree.callsPerRequest, p.input.inputTokensPerCall, stack.inputTokensPerAgent);
      rows.push({ quantity: `user requests/min ${m.model}`, planned: servedPlanned, measured: served, relativeError: 0 });
    }
    rows.push({ quantity: `calls in flight ${m.model}`, planned: inFlight, measured: measured.callsInFlight, relativeError: 0 });
    callSecondsSum += measured.callsInFlight;
    callsSum += measured.okCallsPerMinute / 60;
  }
  if (probed !== undefined) rows.push({ quantity: 'permits in use', planned: planned.permits, measured: probed, relativeError: 0 });
  // The verdict reads the binding model: it sustains what the whole tree can serve.
  const sustained = forward?.servedPerMinute ?? binding?.sustainedUserRequestsPerMinute ?? 0;
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
    tokens: stack.inputTokensPerModel ? 'calibrated' : 'given',
    ...(forward ? { forwardRun: forward } : {}),
    countedTokens: stack.countedTokens,
    plannedCallSeconds: latencySeconds,
    measuredCallSeconds: callsSum > 0 ? callSecondsSum / callsSum : undefined,
    permitsInUseScraped: undefined,
    window,
    rows: rows.map((row) => ({ ...row, relativeError: relativeError(row.planned, row.measured) })),
  };
}

/**
 * The fleet's steady-state figures as the comparison reads them: served user requests per
 * minute (successful model calls / calls per request), the answered ones from the agent's
 * request counter, and request admission's whole requests, per minute.
 */
export function measuredOf(fleet: FleetFigures, callsPerRequest: number, window: { start: number; end: number }, probed: number | undefined): Measured {
  const perMinute = (n: number) => (n / fleet.seconds) * 60;
  const requests = fleet.requests;
  return {
    userRequestsPerMinute: perMinute(fleet.okCalls / callsPerRequest),
    answeredRequestsPerMinute: perMinute(fleet.completed),
    ...(requests ? { requests: { served: perMinute(requests.served), shed: perMinute(requests.shed), partial: perMinute(requests.partial) } } : {}),
    callsInFlight: fleet.callsInFlight,
    permitsInUseScraped: fleet.permitsInUseScraped,
    callSeconds: fleet.callSeconds,
    window,
    ...(probed === undefined ? {} : { permitsInUseProbed: probed }),
  };
}

/** Plan vs measured over a collected steady phase and its plan (planSteadyPhase's; pure). */
export function compareSteadyRun(run: SteadyRun, stack: StackParameters, planLatency: RunComparisonInput['planLatency'], planned: SteadyPlan): PlanVsMeasured {
  const compared = compareFigures(run, stack, planLatency, planned);
  return run.steadyRequests ? { ...compared, steadyRequests: run.steadyRequests } : compared;
}

function compareFigures(run: SteadyRun, stack: StackParameters, planLatency: RunComparisonInput['planLatency'], planned: SteadyPlan): PlanVsMeasured {
  const { window, probed, figures } = run;
  if (figures.kind === 'models' && planned.models) return compareModels(stack, planned.models, figures, window, probed);
  if (figures.kind === 'models') throw new Error('a steady run measured per model needs its plan per model');
  // A tree planned whole: the stack's latency is the only field of the input that the latency changes.
  const { input } = planned;
  const measured = measuredOf(figures.fleet, plan(input).tree.callsPerRequest, window, probed);
  const latencySeconds = planLatency === 'measured' && measured.callSeconds ? measured.callSeconds : stack.latencySeconds;
  return comparePlan({ ...input, latencySeconds }, measured);
}

/** Plan vs measured over a finished run's steady phase, or why it cannot be compared: collect, then compare. */
export async function compareRun(r: RunComparisonInput): Promise<PlanVsMeasured | { skipped: string }> {
  const run = await collectSteadyRun(r);
  if ('skipped' in run) return run;
  const planned = planSteadyPhase(run.phase, run.shape, run.figures.kind === 'models' ? run.figures.models : [], r.stack);
  return compareSteadyRun(run, r.stack, r.planLatency, planned);
}
