// The capacity plan: from an agent tree's fan-out, the peak demand and the provider quota to
// the budget each replica needs, what the fleet can sustain, the burst shape and the fixes.
// Pure arithmetic (Little's law, static quota shares); every figure is explained in README.md.
import { branchCallTokens, completedShare, replicaCallsPerMinute, tokensPerCall as meanTokensPerCall } from './budget.ts';
import { rankFixes } from './fixes.ts';
import type { Fix } from './fixes.ts';
import { parsePlanInput } from './input.ts';
import type { PlanInput, ValidPlanInput } from './input.ts';

export type QuotaAxis = 'requests' | 'tokens';

/** The agent tree's model calls per user request, and the shape used for the burst. */
export interface PlannedTree {
  readonly callsPerRequest: number;
  readonly parallelBranches: number;
  readonly callsPerBranch: number;
  readonly sequentialSteps: number;
  /** 'counted' from a tree description; 'assumed' = only a call count was given, taken as one fan-out. */
  readonly source: 'counted' | 'assumed';
}

export interface BurstWave {
  /** Seconds after the users click (multiples of the call latency). */
  readonly atSeconds: number;
  /** Model calls that start together, across the fleet. */
  readonly calls: number;
  /** 'fan-out' = the parallel branches' calls; 'sequential' = a step after the fan-out. */
  readonly kind: 'fan-out' | 'sequential';
}

export interface Plan {
  readonly input: ValidPlanInput;
  readonly tree: PlannedTree;
  readonly demand: {
    readonly userRequestsPerMinute: number;
    readonly callsPerMinute: number;
    readonly callsPerSecond: number;
    readonly tokensPerCall: number;
    readonly tokensPerMinute: number;
  };
  readonly quota: { readonly requestsPerMinute: number; readonly tokensPerMinute: number };
  /** Demand divided by the quota, per axis (1 = exactly the quota). */
  readonly quotaUse: { readonly requests: number; readonly tokens: number };
  readonly binding: {
    /** The axis with the higher use: the one that limits first. */
    readonly axis: QuotaAxis;
    readonly quotaUse: number;
    readonly overQuota: boolean;
    /** How far the demand is above (positive) or below (negative) the binding quota, as a fraction. */
    readonly overBy: number;
  };
  /** Calls in flight by Little's law (rate × latency). */
  readonly inFlight: {
    /** At full demand across the fleet. */
    readonly fleet: number;
    /** Per replica at the rate it actually serves (demand share, capped by its budget). */
    readonly perReplica: number;
  };
  readonly budget: {
    readonly fraction: number;
    readonly fleetTokensPerMinute: number;
    readonly fleetRequestsPerMinute: number;
  };
  readonly perReplica: {
    readonly tokensPerMinute: number;
    readonly requestsPerMinute: number;
    /** Calls per minute the replica's budget sustains (the tighter axis wins). */
    readonly callsPerMinute: number;
    /** Whole user requests per minute the replica sustains. */
    readonly userRequestsPerMinute: number;
    /** Same, before rounding down to whole requests. */
    readonly userRequestsPerMinuteExact: number;
    /** Concurrency permits: in flight rounded up to whole user requests, at least one fan-out. */
    readonly permits: number;
    /** maxWait for the limiter: the tolerated wait. */
    readonly maxWaitSeconds: number;
  };
  readonly fleet: {
    readonly replicas: number;
    readonly userRequestsPerMinute: number;
    /** Demand minus what the fleet sustains, in user requests per minute (0 when it fits). */
    readonly shortfallUserRequestsPerMinute: number;
    /** The shortfall as a fraction of the demand. */
    readonly shortfallFraction: number;
  };
  /**
   * Request admission (the limiter's default): a request is admitted whole or shed whole at
   * the door, so the fleet serves what the budget sustains, sheds the rest, and leaves no
   * request partial.
   */
  readonly admission: {
    /** User requests per minute served whole: the demand, capped by the whole requests each replica's window holds. */
    readonly servedUserRequestsPerMinute: number;
    /** User requests per minute shed (demand − served). */
    readonly shedUserRequestsPerMinute: number;
    /** User requests per minute with a missing branch: none, since requests are funded whole. */
    readonly partialUserRequestsPerMinute: number;
    /** Shed as a share of the demand. */
    readonly shedFraction: number;
  };
  /** Per-call admission (`--admission call`): what a sustained peak does to the queue when the demand is above the budget. */
  readonly overload: {
    /**
     * Share of the demand's calls completed when the excess is shed as timed-out calls (1 when
     * the demand fits). Above the whole-request rate when a step's prompt carries the branches'
     * outputs: the steps of requests that lost a branch are cheaper.
     */
    readonly completedShare: number;
    /** User requests per minute served, fleet, in whole-request equivalents (completed calls / calls per request). */
    readonly servedUserRequestsPerMinute: number;
    /** Calls per minute above what the fleet admits (0 when it fits). */
    readonly excessCallsPerMinute: number;
    /** Seconds of peak until a new call waits maxWait; null when the queue does not grow. */
    readonly secondsUntilMaxWait: number | null;
    /** Calls per minute that then time out across the fleet (= the excess). */
    readonly timeoutsPerMinute: number;
  };
  readonly burst: {
    readonly users: number;
    readonly waves: readonly BurstWave[];
    /** Calls starting at t = 0 on the busiest replica (users spread evenly, whole users). */
    readonly busiestReplicaCallsAtStart: number;
    /** Of those, calls that queue for a permit. */
    readonly queuedAtStart: number;
    /** How long the last queued call waits: whole call latencies until a permit frees. */
    readonly queuedWaitSeconds: number;
    readonly withinMaxWait: boolean;
    /** Tokens reserved at t = 0 on the busiest replica, against its per-minute token budget. */
    readonly busiestReplicaTokensAtStart: number;
    readonly tokensFitBudget: boolean;
    /** Whether the calls at t = 0 fit the replica's per-minute request budget. */
    readonly requestsFitBudget: boolean;
  };
  /** Ways to close the shortfall, best first; empty when the demand fits. */
  readonly fixes: readonly Fix[];
}

function treeShape(input: ValidPlanInput): PlannedTree {
  if (input.parallelBranches !== undefined) {
    return {
      callsPerRequest: input.parallelBranches * input.callsPerBranch + input.sequentialSteps,
      parallelBranches: input.parallelBranches,
      callsPerBranch: input.callsPerBranch,
      sequentialSteps: input.sequentialSteps,
      source: 'counted',
    };
  }
  // Only a count: assume the worst burst, every call in one fan-out.
  const calls = input.callsPerRequest ?? 1;
  return { callsPerRequest: calls, parallelBranches: calls, callsPerBranch: 1, sequentialSteps: 0, source: 'assumed' };
}

function burstShape(input: ValidPlanInput, tree: PlannedTree, permits: number, replicaBudget: { tokens: number; requests: number }) {
  const waves: BurstWave[] = [];
  for (let step = 0; step < tree.callsPerBranch; step++) {
    waves.push({ atSeconds: step * input.latencySeconds, calls: input.burstUsers * tree.parallelBranches, kind: 'fan-out' });
  }
  for (let step = 0; step < tree.sequentialSteps; step++) {
    const at = (tree.callsPerBranch + step) * input.latencySeconds;
    waves.push({ atSeconds: at, calls: input.burstUsers, kind: 'sequential' });
  }
  const busiestUsers = Math.ceil(input.burstUsers / input.replicas);
  const callsAtStart = busiestUsers * tree.parallelBranches;
  const queued = Math.max(0, callsAtStart - permits);
  const queuedWaitSeconds = Math.ceil(queued / permits) * input.latencySeconds;
  const tokensAtStart = callsAtStart * branchCallTokens(input);
  return {
    users: input.burstUsers,
    waves,
    busiestReplicaCallsAtStart: callsAtStart,
    queuedAtStart: queued,
    queuedWaitSeconds,
    withinMaxWait: queuedWaitSeconds <= input.toleratedWaitSeconds,
    busiestReplicaTokensAtStart: tokensAtStart,
    tokensFitBudget: tokensAtStart <= replicaBudget.tokens,
    requestsFitBudget: callsAtStart <= replicaBudget.requests,
  };
}

/** What the demand asks of the provider: calls and counted tokens per minute. */
function demandOf(input: ValidPlanInput, tree: PlannedTree): Plan['demand'] {
  const tokensPerCall = meanTokensPerCall(input);
  const callsPerMinute = input.userRequestsPerMinute * tree.callsPerRequest;
  return { userRequestsPerMinute: input.userRequestsPerMinute, callsPerMinute, callsPerSecond: callsPerMinute / 60, tokensPerCall, tokensPerMinute: callsPerMinute * tokensPerCall };
}

/** Demand over the quota per axis, and the axis that binds first. */
function bindingOf(input: ValidPlanInput, demand: Plan['demand']): Pick<Plan, 'quotaUse' | 'binding'> {
  const requests = demand.callsPerMinute / input.quotaRequestsPerMinute;
  const tokens = demand.tokensPerMinute / input.quotaTokensPerMinute;
  const quotaUse = Math.max(tokens, requests);
  return {
    quotaUse: { requests, tokens },
    binding: { axis: tokens >= requests ? 'tokens' : 'requests', quotaUse, overQuota: quotaUse > 1, overBy: quotaUse - 1 },
  };
}

/** One replica's static share of the budget, what it sustains, and its calls in flight at the rate it serves. */
function replicaOf(input: ValidPlanInput, tree: PlannedTree, demand: Plan['demand']): { perReplica: Plan['perReplica']; inFlight: number } {
  const replicaCalls = replicaCallsPerMinute(input);
  const userRequestsPerMinuteExact = replicaCalls / tree.callsPerRequest;
  const servedCalls = (demand.callsPerMinute / input.replicas) * completedShare(input);
  const inFlight = (servedCalls / 60) * input.latencySeconds;
  // Round up to whole user requests so a fan-out is admitted whole, never a part of one.
  const wholeRequests = Math.max(1, Math.ceil(inFlight / tree.callsPerRequest - 1e-9));
  const perReplica = {
    tokensPerMinute: (input.quotaTokensPerMinute * input.budgetFraction) / input.replicas,
    requestsPerMinute: (input.quotaRequestsPerMinute * input.budgetFraction) / input.replicas,
    callsPerMinute: replicaCalls,
    userRequestsPerMinute: Math.floor(userRequestsPerMinuteExact + 1e-9),
    userRequestsPerMinuteExact,
    permits: Math.max(wholeRequests * tree.callsPerRequest, tree.parallelBranches),
    maxWaitSeconds: input.toleratedWaitSeconds,
  };
  return { perReplica, inFlight };
}

/**
 * Request admission: the fleet serves whole requests up to what the budget sustains and sheds
 * the rest at the door, none partial. A replica's rolling window holds whole requests only:
 * it serves the whole number of requests its window's tokens hold (9 of the 9.57 a window
 * could hold in the worked example, 5 of 5.33 in the quota bench).
 */
function admissionOf(input: ValidPlanInput, perReplica: Plan['perReplica']): Plan['admission'] {
  const served = Math.min(input.userRequestsPerMinute, perReplica.userRequestsPerMinute * input.replicas);
  const shed = input.userRequestsPerMinute - served;
  return { servedUserRequestsPerMinute: served, shedUserRequestsPerMinute: shed, partialUserRequestsPerMinute: 0, shedFraction: shed / input.userRequestsPerMinute };
}

/** Per-call admission under a sustained peak above the budget: the share completed and the queue's growth. */
function overloadOf(input: ValidPlanInput, demand: Plan['demand'], perReplica: Plan['perReplica']): Plan['overload'] {
  const completed = completedShare(input);
  const excessCalls = Math.max(0, demand.callsPerMinute - perReplica.callsPerMinute * input.replicas);
  const excessPerReplica = excessCalls / input.replicas;
  return {
    completedShare: completed,
    servedUserRequestsPerMinute: input.userRequestsPerMinute * completed,
    excessCallsPerMinute: excessCalls,
    // A queue growing by `excess` calls/min drains at the replica's rate: wait = queue / rate.
    secondsUntilMaxWait: excessPerReplica > 0 ? (input.toleratedWaitSeconds * perReplica.callsPerMinute) / excessPerReplica : null,
    timeoutsPerMinute: excessCalls,
  };
}

/** Plans the capacity for an agent tree; throws a PlanInputError naming the first bad field. */
export function plan(rawInput: PlanInput): Plan {
  const input = parsePlanInput(rawInput);
  const tree = treeShape(input);
  const demand = demandOf(input, tree);
  const { perReplica, inFlight } = replicaOf(input, tree, demand);
  const fleetUsers = perReplica.userRequestsPerMinute * input.replicas;
  const shortfall = Math.max(0, input.userRequestsPerMinute - fleetUsers);
  return {
    input,
    tree,
    demand,
    quota: { requestsPerMinute: input.quotaRequestsPerMinute, tokensPerMinute: input.quotaTokensPerMinute },
    ...bindingOf(input, demand),
    inFlight: { fleet: (demand.callsPerMinute / 60) * input.latencySeconds, perReplica: inFlight },
    budget: {
      fraction: input.budgetFraction,
      fleetTokensPerMinute: input.quotaTokensPerMinute * input.budgetFraction,
      fleetRequestsPerMinute: input.quotaRequestsPerMinute * input.budgetFraction,
    },
    perReplica,
    fleet: {
      replicas: input.replicas,
      userRequestsPerMinute: fleetUsers,
      shortfallUserRequestsPerMinute: shortfall,
      shortfallFraction: shortfall / input.userRequestsPerMinute,
    },
    admission: admissionOf(input, perReplica),
    overload: overloadOf(input, demand, perReplica),
    burst: burstShape(input, tree, perReplica.permits, { tokens: perReplica.tokensPerMinute, requests: perReplica.requestsPerMinute }),
    fixes: shortfall > 0 ? rankFixes(input, tree) : [],
  };
}
