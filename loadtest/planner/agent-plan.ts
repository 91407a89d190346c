// `plan --agent FILE[#export]`: counts the model calls of a real ADK agent tree, for the
// tree printout and, given the traffic and quota, the capacity plan for that many calls
// per request at that peak width (the flags are cli/plan.ts's).
import { LogLevel, setLogLevel } from '@google/adk';
import { loadAgentModule } from '../../agent/agent-module.ts';
import { shapeOfCount } from '../../agent/tree-shapes.ts';
import { type CountedNode, countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } from '../../instrumentation/tree/tree-count.ts';
import { walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { formatPlan } from './format.ts';
import type { PlanInput } from './input.ts';
import type { Plan } from './plan.ts';
import { formatCountedTree } from './tree-format.ts';

// The classic agents log a deprecation WARN per construction: noise on the planner's output.
setLogLevel(LogLevel.ERROR);

export interface AgentPlanResult {
  readonly tree: CountedNode;
  readonly callsPerRequest: number;
  readonly peakWidth: number;
  readonly plan?: Plan;
}

/** Loads the module and counts its tree; throws AgentModuleError, AgentTreeError or TreeCountError. */
export async function countAgent(spec: string, toolTurns = DEFAULT_TOOL_TURNS, cwd?: string): Promise<CountedNode> {
  const module = await loadAgentModule(spec, cwd);
  const tree = countModelCalls(walkAgentTree(module.root), { toolTurns });
  if (tree.calls < 1) throw new TreeCountError(`"${tree.name}" makes no model calls`);
  return tree;
}

/** The planner input of a counted tree: its calls, and its shape (the width as the fan-out). */
export function treePlanInput(tree: CountedNode): Required<Pick<PlanInput, 'callsPerRequest' | 'parallelBranches' | 'callsPerBranch' | 'sequentialSteps'>> {
  const shape = shapeOfCount(tree);
  return { callsPerRequest: tree.calls, parallelBranches: shape.parallelBranches, callsPerBranch: shape.callsPerBranch, sequentialSteps: shape.sequentialSteps };
}

/** The tree with its calls per node, the count, and the plan when there is one. */
export function formatAgentPlan(result: AgentPlanResult): string {
  const summary = `${result.callsPerRequest} model calls per request, up to ${result.peakWidth} at once`;
  const planned = result.plan
    ? `\n(planned as a fan-out of ${result.peakWidth} + ${result.callsPerRequest - result.peakWidth} calls after it)\n\n${formatPlan(result.plan)}`
    : '';
  return `${formatCountedTree(result.tree)}\n${summary}\n${planned}`;
}
