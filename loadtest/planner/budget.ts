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

/** Counted tokens of one call of a sequential step (its prompt may carry the branches' outputs). */
export function stepCallTokens(input: ValidPlanInput): number {
  return (input.stepInputTokensPerCall ?? input.inputTokensPerCall) + countedOutputTokens(input);
}

/** Mean counted tokens per model call over one user request's calls. */
export function tokensPerCall(input: ValidPlanInput): number {
  const steps = input.parallelBranches === undefined ? 0 : input.sequentialSteps;
  const branchCalls = input.parallelBranches === undefined ? (input.callsPerRequest ?? 1) : input.parallelBranches * input.callsPerBranch;
  return (branchCalls * branchCallTokens(input) + steps * stepCallTokens(input)) / (branchCalls + steps);
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
