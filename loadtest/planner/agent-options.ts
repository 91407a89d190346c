// The planner's options for counting a real agent tree (`plan --agent FILE[#export]`), as a
// zod schema; the other planner flags (traffic, tokens, quota) pass through to flags.ts.
import { z } from 'zod';
import { DEFAULT_TOOL_TURNS } from '../../agent/tree-count.ts';
import { FlagError } from './flags.ts';

export const agentPlanOptionsSchema = z.object({
  /** The module and export holding the root agent: `FILE[#export]`, export `rootAgent` by default. */
  agent: z.string().min(1, 'required: FILE[#export]').max(4096),
  /** Extra model calls of an LlmAgent with tools, one per round of tool calls. */
  toolTurns: z.int('must be a whole number').min(0, 'must be >= 0').max(50, 'must be <= 50').default(DEFAULT_TOOL_TURNS),
});
export type AgentPlanOptions = z.infer<typeof agentPlanOptionsSchema>;

const FLAGS = { '--agent': 'agent', '--tool-turns': 'toolTurns' } as const;
type OwnFlag = keyof typeof FLAGS;

/** The tree flags an agent's count replaces. */
export const TREE_FLAGS = ['--tree', '--branches', '--calls-per-branch', '--sequential-steps', '--calls-per-request'] as const;

/** Takes --agent and --tool-turns out of argv; the rest is for the planner's own flags. Throws FlagError. */
export function splitAgentArgs(argv: readonly string[]): { options: AgentPlanOptions; rest: string[] } {
  const raw: Record<string, unknown> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!Object.hasOwn(FLAGS, name)) {
      if ((TREE_FLAGS as readonly string[]).includes(name)) {
        throw new FlagError(`${name}: the tree is counted from --agent; give one or the other`);
      }
      rest.push(arg);
      continue;
    }
    const value: string | undefined = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new FlagError(`${name}: missing value`);
    const key = FLAGS[name as OwnFlag];
    if (key === 'toolTurns') {
      const n = value.trim() === '' ? Number.NaN : Number(value);
      if (!Number.isFinite(n)) throw new FlagError(`${name}: '${value}' is not a number`);
      raw[key] = n;
    } else {
      raw[key] = value;
    }
  }
  const parsed = agentPlanOptionsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const flag = Object.entries(FLAGS).find(([, key]) => key === issue.path[0])?.[0] ?? '--agent';
    throw new FlagError(`${flag}: ${issue.message}`);
  }
  return { options: parsed.data, rest };
}
