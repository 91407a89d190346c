// A replica's static share of the budget, and the rate each replica must serve: the two
// quantities both the plan and its fixes are sized against.
import type { ValidPlanInput } from './input.ts';

/** Calls per minute one replica's static share of the budget sustains (the tighter axis wins). */
export function replicaCallsPerMinute(input: ValidPlanInput): number {
  const tokensPerCall = input.inputTokensPerCall + input.outputTokensPerCall;
  const tokens = (input.quotaTokensPerMinute * input.budgetFraction) / input.replicas;
  const requests = (input.quotaRequestsPerMinute * input.budgetFraction) / input.replicas;
  return Math.min(tokens / tokensPerCall, requests);
}

/** Whole user requests per minute each replica must serve for the fleet to meet the demand. */
export function requiredUserRequestsPerReplica(input: ValidPlanInput): number {
  return Math.ceil(input.userRequestsPerMinute / input.replicas - 1e-9);
}
