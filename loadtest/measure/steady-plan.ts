// The plans a steady run is compared with, made before the comparison: the planner's input
// for the whole tree and, for a tree whose models each have their own limiter, each model's
// share planned against its own quota. plan-vs-measured.ts compares against these values.
import { EVERY_OTHER_MODEL, type PerModel, valueForModel } from '../../agent/per-model.ts';
import type { TreeShape } from '../../agent/tree-shapes.ts';
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import { callSecondsFor } from '../planner/call-time.ts';
import type { PlanInput } from '../planner/index.ts';
import { type ModelPlans, planModels } from '../planner/model-plans.ts';
import type { ModelShape } from './agent-shapes.ts';
import type { StackParameters, SteadyPhase } from './steady-state.ts';

/** What a steady phase is planned as: the whole tree's input, and each limited model's plan (none without them). */
export interface SteadyPlan {
  readonly input: PlanInput;
  readonly models?: ModelPlans;
}

/** A quota of `model` (the one for every model when none is named). */
function quotaOf(value: PerModel, model: string | undefined, fallback: number): number {
  return valueForModel(value, model ?? EVERY_OTHER_MODEL, fallback);
}

/**
 * The planner's input for a steady phase on a tree of `shape` (or one model's share of it,
 * `model`: that model's quota, and its calibrated tokens per call when known) and the stack's parameters.
 */
export function steadyPlanInput(phase: SteadyPhase, shape: TreeShape, stack: StackParameters, model?: string): PlanInput {
  const calibrated = model === undefined ? undefined : stack.inputTokensPerModel?.[model];
  const output = model === undefined ? undefined : stack.outputTokensPerModel?.[model];
  const { parallelBranches, callsPerBranch, sequentialSteps, branchOutputsPerStep } = shape;
  return {
    parallelBranches,
    callsPerBranch,
    sequentialSteps,
    ...(branchOutputsPerStep === undefined ? {} : { branchOutputsPerStep }),
    userRequestsPerMinute: phase.arrival.perMinute,
    inputTokensPerCall: calibrated ?? phase.inputTokensPerCall,
    outputTokensPerCall: stack.outputTokensPerCall,
    countedTokens: stack.countedTokens,
    // A model's calls take its own mean time: a tool turn's short answer ends soon after its first token.
    latencySeconds: output !== undefined && stack.callLatency ? callSecondsFor(stack.callLatency, output) : stack.latencySeconds,
    quotaRequestsPerMinute: quotaOf(stack.quotaRequestsPerMinute, model, WORKED_EXAMPLE.quotaRequestsPerMinute),
    quotaTokensPerMinute: quotaOf(stack.quotaTokensPerMinute, model, WORKED_EXAMPLE.quotaTokensPerMinute),
    budgetFraction: stack.budgetFraction,
    replicas: stack.replicas,
    ...(stack.maxWaitSeconds ? { toleratedWaitSeconds: stack.maxWaitSeconds } : {}),
    ...(stack.burstUsers ? { burstUsers: stack.burstUsers } : {}),
  };
}

/**
 * The steady phase on a tree of `shape` planned with the stack's parameters: the whole tree,
 * and each of `models` (the tree's models that each have a limiter) against its own quota.
 */
export function planSteadyPhase(phase: SteadyPhase, shape: TreeShape, models: readonly ModelShape[], stack: StackParameters): SteadyPlan {
  // The whole tree's input first, then each model's share of it.
  const [input, ...perModel] = [{ shape, model: undefined }, ...models.map((m) => ({ shape: m.shape, model: m.model }))].map((m) => steadyPlanInput(phase, m.shape, stack, m.model));
  if (models.length === 0) return { input };
  const shares = models.map((m) => ({ model: m.model, limiter: m.limiter, calls: m.modelCallsPerRequest, width: m.shape.parallelBranches, agents: stack.agentsPerModel?.[m.model] }));
  return { input, models: planModels(shares, perModel) };
}
