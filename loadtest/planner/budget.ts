// A replica's static share of the budget, the counted tokens of a call, and the rate each
// replica must serve: the quantities both the plan and its fixes are sized against.
import type { ValidPlanInput } from './input.ts';

/** Output tokens a call is charged: none when the quota counts input tokens only. */
export function countedOutputTokens(input: ValidPlanInput): number {
  return input.countedTokens === 'total' ? input.outputTokensPerCall : 0;
}

/** Counted tokens of one fan-out call. */
export function branchCallTokens(input: ValidPlanInput): number {
  return input.inputTokensPerCall + countedOutputTokens(input);
}

/** The request's fan-out calls, the branches that answer with an output, and the sequential steps. */
function callCounts(input: ValidPlanInput): { branchCalls: number; branches: number; steps: number } {
  if (input.parallelBranches === undefined) return { branchCalls: input.callsPerRequest ?? 1, branches: input.callsPerRequest ?? 1, steps: 0 };
  return { branchCalls: input.parallelBranches * input.callsPerBranch, branches: input.parallelBranches, steps: input.sequentialSteps };
}

/**
 * Counted tokens of one call of a sequential step: its input, the branches' outputs its
 * prompt carries (`completed`: the share of branches that answered), and its output if counted.
 */
export function stepCallTokens(input: ValidPlanInput, completed = 1): number {
  const { branches } = callCounts(input);
  return input.inputTokensPerCall + input.branchOutputsPerStep * branches * input.outputTokensPerCall * completed + countedOutputTokens(input);
}

/** Mean counted tokens per model call over one user request's calls (every branch answering). */
export function tokensPerCall(input: ValidPlanInput): number {
  const { branchCalls, steps } = callCounts(input);
  return (branchCalls * branchCallTokens(input) + steps * stepCallTokens(input)) / (branchCalls + steps);
}

/**
 * The share of the demand's calls one replica completes when its budget binds and the excess
 * is shed as timed-out calls, spread over the requests: a solution g in (0, 1] of
 *   demand × g × (branch tokens + steps × step tokens(g)) = budget
 * (a step's prompt carries only the outputs of the branches that answered, so shedding makes
 * the surviving steps cheaper), capped by the request budget. 1 when the demand fits.
 */
export function completedShare(input: ValidPlanInput): number {
  const { branchCalls, branches, steps } = callCounts(input);
  const demand = input.userRequestsPerMinute / input.replicas;
  const tokens = (input.quotaTokensPerMinute * input.budgetFraction) / input.replicas;
  const requests = (input.quotaRequestsPerMinute * input.budgetFraction) / input.replicas;
  const stepBase = input.inputTokensPerCall + countedOutputTokens(input);
  const a = demand * steps * input.branchOutputsPerStep * branches * input.outputTokensPerCall;
  const b = demand * (branchCalls * branchCallTokens(input) + steps * stepBase);
  const byTokens = a > 0 ? (-b + Math.sqrt(b * b + 4 * a * tokens)) / (2 * a) : tokens / b;
  const byRequests = requests / (demand * (branchCalls + steps));
  return Math.min(1, byTokens, byRequests);
}

/** Calls per minute one replica's static share of the budget sustains (the tighter axis wins). */
export function replicaCallsPerMinute(input: ValidPlanInput): number {
  const tokens = (input.quotaTokensPerMinute * input.budgetFraction) / input.replicas;
  const requests = (input.quotaRequestsPerMinute * input.budgetFraction) / input.replicas;
  return Math.min(tokens / tokensPerCall(input), requests);
}

/** Whole user requests per minute each replica must serve for the fleet to meet the demand. */
export function requiredUserRequestsPerReplica(input: ValidPlanInput): number {
  return Math.ceil(input.userRequestsPerMinute / input.replicas - 1e-9);
}
