// The scenario as the agent side runs it: a served module is the only tree (and app), so every
// request goes to it; against the agent service every tree the scenario names must be one of
// its own (a usage error otherwise, found before anything starts).
import { TREE_NAMES } from '../../agent/tree-shapes.ts';
import { scenarioTrees, withTree } from '../scenario/trees.ts';
import type { ScenarioFile } from '../scenario/types.ts';
import { type AgentTarget, AgentTargetError } from './agent-target.ts';
import { checkServed, UnservedTreeError } from './served-trees.ts';

/**
 * The scenario as the target runs it, with every request sent to `tree` first when one is
 * given (--tree): a served module's app takes every request; against the agent service every
 * tree the scenario names must be one of its own.
 */
export function scenarioForTarget(target: AgentTarget, scenario: ScenarioFile, tree?: string): ScenarioFile {
  const chosen = tree === undefined ? scenario : withTree(scenario, tree);
  if (target.kind === 'serve') {
    const sent = withTree(chosen, target.app);
    return sent.protocol === 'adk' && sent.adk ? { ...sent, adk: { ...sent.adk, app: target.app } } : sent;
  }
  if (chosen.protocol === 'adk') throw new AgentTargetError('the scenario uses protocol adk, which the agent service does not speak: serve your agent with --agent FILE');
  const trees = scenarioTrees(chosen);
  try {
    checkServed(trees, TREE_NAMES, 'tree', 'the agent service');
  } catch (error) {
    if (error instanceof UnservedTreeError) throw new AgentTargetError(`${error.message} (or serve your own with --agent FILE)`);
    throw error;
  }
  return chosen;
}
