// `plan --agent FILE[#export]`: counts the model calls of a real ADK agent tree, for the
// tree printout and, given the traffic and quota, the capacity plan for that many calls
// per request at that peak width (the flags are cli/plan.ts's).
import { type BaseAgent, type LlmAgent, LogLevel, setLogLevel } from '@google/adk';
import { type LoadedAgentModule, loadAgentModule } from '../../agent/agent-module.ts';
import { lendProviderKey, PLACEHOLDER_PROVIDER_KEY } from '../../agent/provider-model.ts';
import { checkModelsResolve } from '../../agent/serve/server.ts';
import { shapeOfCount } from '../../agent/tree-shapes.ts';
import { type CountedNode, countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } from '../../instrumentation/tree/tree-count.ts';
import { type AgentTreeNode, llmAgentsOf, walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { documentForTokens } from '../scenario/document.ts';
import { type Calibration, calibrateTree, tokensNote } from './calibrate.ts';
import { formatPlan } from './format.ts';
import type { PlanInput } from './input.ts';
import { formatModelPlans, type ModelPlans } from './model-plans.ts';
import type { Plan } from './plan.ts';
import { formatCountedTree } from './tree-format.ts';

// The classic agents log a deprecation WARN per construction: noise on the planner's output.
setLogLevel(LogLevel.ERROR);

export interface AgentPlanResult {
  readonly tree: CountedNode;
  readonly callsPerRequest: number;
  readonly peakWidth: number;
  /** The binding model's plan. */
  readonly plan?: Plan;
  /** Every model's plan against its own quota, and which one binds. */
  readonly models?: ModelPlans;
  /** The request that measured each agent's input tokens (absent when --input-tokens was given). */
  readonly calibration?: Calibration;
}

/** A loaded module, its walked tree, its LLM agents and its count. */
export interface CountedAgent {
  readonly module: LoadedAgentModule;
  readonly walked: AgentTreeNode;
  /** The tree's LLM agents (llmAgentsOf the walked tree). */
  readonly agents: readonly LlmAgent[];
  readonly tree: CountedNode;
}

/**
 * Loads the module and counts its tree; throws AgentModuleError, AgentTreeError,
 * TreeCountError, or AgentConfigError for an agent with no model to call (as serve does).
 */
export async function countAgent(spec: string, toolTurns = DEFAULT_TOOL_TURNS, cwd?: string): Promise<CountedAgent> {
  // Counting and planning make no provider call: a module that needs a key to load gets a placeholder.
  lendProviderKey(PLACEHOLDER_PROVIDER_KEY);
  const module = await loadAgentModule(spec, cwd);
  const walked = walkAgentTree(module.root);
  const agents = llmAgentsOf(walked);
  checkModelsResolve(agents);
  const tree = countModelCalls(walked, { toolTurns });
  if (tree.calls < 1) throw new TreeCountError(`"${tree.name}" makes no model calls`);
  return { module, walked, agents, tree };
}

/** One request through the counted tree with a user message of `messageTokens` tokens (as the load test sends it). */
export function calibrateAgent(agent: Pick<CountedAgent, 'module' | 'agents'>, options: { messageTokens: number; outputTokensPerCall: number }): Promise<Calibration> {
  const message = documentForTokens(options.messageTokens, options.messageTokens);
  return calibrateTree(agent.module.root as BaseAgent, agent.agents, { message, outputTokensPerCall: options.outputTokensPerCall });
}

/** The planner input of a counted tree: its calls, and its shape (the width as the fan-out). */
export function treePlanInput(tree: CountedNode): Required<Pick<PlanInput, 'callsPerRequest' | 'parallelBranches' | 'callsPerBranch' | 'sequentialSteps'>> {
  const shape = shapeOfCount(tree);
  return { callsPerRequest: tree.calls, parallelBranches: shape.parallelBranches, callsPerBranch: shape.callsPerBranch, sequentialSteps: shape.sequentialSteps };
}

/** The tree with its calls per node, the count, and the plans when there are: every model's line, then the binding model's plan. */
export function formatAgentPlan(result: AgentPlanResult): string {
  const summary = `${result.callsPerRequest} model calls per request, up to ${result.peakWidth} at once`;
  const binding = result.models?.models.find((m) => m.model === result.models?.binding);
  const planned =
    result.models && binding
      ? `\n${formatModelPlans(result.models, tokensNote(result.calibration))}\n\n` +
        `Binding model ${binding.model}: ${binding.plan.tree.callsPerRequest} of its calls per request, planned as a fan-out of ${binding.plan.tree.parallelBranches} + ${binding.plan.tree.sequentialSteps} after it\n\n${formatPlan(binding.plan)}`
      : result.plan
        ? `\n(planned as a fan-out of ${result.peakWidth} + ${result.callsPerRequest - result.peakWidth} calls after it)\n\n${formatPlan(result.plan)}`
        : '';
  return `${formatCountedTree(result.tree)}\n${summary}\n${planned}`;
}
