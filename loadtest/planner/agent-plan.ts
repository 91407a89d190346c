// `plan --agent FILE[#export] [--tool-turns N] [planner flags]`: counts the model calls of a
// real ADK agent tree, prints the tree with its calls per node and, given the traffic and
// quota (the planner's flags, or --example), the capacity plan for that many calls per
// request at that peak width. Errors are one line naming the flag, file, export or node,
// exit code 2.
import { LogLevel, setLogLevel } from '@google/adk';
import { AgentModuleError, loadAgentModule } from '../../agent/agent-module.ts';
import { AgentTreeError, walkAgentTree } from '../../agent/tree-walk.ts';
import { splitAgentArgs } from './agent-options.ts';
import { FlagError, parseArgs, usage } from './flags.ts';
import { formatPlan } from './format.ts';
import { type Plan, plan } from './plan.ts';
import { type CountedNode, countModelCalls, shapeOfCount, TreeCountError } from '../../agent/tree-count.ts';
import { formatCountedTree } from './tree-format.ts';

// The classic agents log a deprecation WARN per construction: noise on the planner's output.
setLogLevel(LogLevel.ERROR);

export const AGENT_USAGE = `Usage: plan --agent FILE[#export] [--tool-turns N] [planner flags | --example NAME] [--json]

Counts the model calls per request of the ADK agent exported by FILE (export rootAgent by
default; a BaseAgent or a Workflow) and prints the tree with its calls per node. With the
traffic and quota flags (or --example), also plans the capacity for that tree.
  --tool-turns N   rounds of tool calls an LlmAgent with tools makes (1)`;

export interface AgentPlanResult {
  readonly tree: CountedNode;
  readonly callsPerRequest: number;
  readonly peakWidth: number;
  readonly plan?: Plan;
}

/** The planner flags of a counted tree: its calls, and its shape (the width as the fan-out). */
export function treePlanFlags(tree: CountedNode): string[] {
  const shape = shapeOfCount(tree);
  return [
    '--calls-per-request',
    String(tree.calls),
    '--branches',
    String(shape.parallelBranches),
    '--calls-per-branch',
    String(shape.callsPerBranch),
    '--sequential-steps',
    String(shape.sequentialSteps),
  ];
}

/** Loads, counts and plans; throws FlagError, AgentModuleError, AgentTreeError or TreeCountError. */
export async function planAgent(argv: readonly string[], cwd?: string): Promise<AgentPlanResult> {
  const { options, rest } = splitAgentArgs(argv);
  const module = await loadAgentModule(options.agent, cwd);
  const tree = countModelCalls(walkAgentTree(module.root), { toolTurns: options.toolTurns });
  if (tree.calls < 1) throw new TreeCountError(`"${tree.name}" makes no model calls`);
  const result = { tree, callsPerRequest: tree.calls, peakWidth: tree.width };
  const planFlags = rest.filter((arg) => arg !== '--json');
  if (planFlags.length === 0) return result;
  const args = parseArgs([...planFlags, ...treePlanFlags(tree)]);
  if (args.help) return result;
  return { ...result, plan: plan(args.input) };
}

export async function main(argv: readonly string[], cwd?: string): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${AGENT_USAGE}\n\n${usage()}\n`);
    return 0;
  }
  let result: AgentPlanResult;
  try {
    result = await planAgent(argv, cwd);
  } catch (error) {
    const known = [FlagError, AgentModuleError, AgentTreeError, TreeCountError].some((kind) => error instanceof kind);
    if (!known) throw error;
    const prefix = error instanceof AgentModuleError ? '--agent: ' : '';
    process.stderr.write(`plan: ${prefix}${(error as Error).message}\n`);
    return 2;
  }
  if (argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  const summary = `${result.callsPerRequest} model calls per request, up to ${result.peakWidth} at once`;
  const planned = result.plan
    ? `\n(planned as a fan-out of ${result.peakWidth} + ${result.callsPerRequest - result.peakWidth} calls after it)\n\n${formatPlan(result.plan)}`
    : '';
  process.stdout.write(`${formatCountedTree(result.tree)}\n${summary}\n${planned}`);
  return 0;
}
