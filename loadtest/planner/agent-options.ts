// The planner's options for counting a real agent tree (`plan --agent FILE[#export]`), as a
// zod schema (the `plan` command's --agent and --tool-turns flags are made from it).
import { z } from 'zod';
import { DEFAULT_TOOL_TURNS } from '../../instrumentation/tree/tree-count.ts';

export const agentPlanOptionsSchema = z.object({
  /** The module and export holding the root agent: `FILE[#export]`, export `rootAgent` by default. */
  agent: z.string().min(1, 'required: FILE[#export]').max(4096),
  /** Extra model calls of an LlmAgent with tools, one per round of tool calls. */
  toolTurns: z.int('must be a whole number').min(0, 'must be >= 0').max(50, 'must be <= 50').default(DEFAULT_TOOL_TURNS),
});
export type AgentPlanOptions = z.infer<typeof agentPlanOptionsSchema>;
