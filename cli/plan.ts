// `quotascope plan`: prints the capacity plan as a table, or as JSON with --json. Each
// numeric flag sets one planner input field; an --example gives the rest.
import { Command } from 'commander';
import { z } from 'zod';
import { isPerModel, type PerModel, perModelSchema, valueForModel } from '../agent/per-model.ts';
import { type ExampleName, examples } from '../loadtest/planner/examples.ts';
import { formatPlan } from '../loadtest/planner/format.ts';
import { agentPlanOptionsSchema } from '../loadtest/planner/agent-options.ts';
import type { AgentPlanResult } from '../loadtest/planner/agent-plan.ts';
import { type PlanInputField, parsePlanInput, planInputIssues, planInputSchema, type ValidPlanInput } from '../loadtest/planner/input.ts';
import { plan } from '../loadtest/planner/plan.ts';
import { decimalNumber } from './decimal-number.ts';
import { UsageError, withStdoutOnStderr } from './errors.ts';
import { FlagSet, type FlagSpec, parsePerModel } from './flags.ts';

const field = planInputSchema.shape;

function number(text: string): number {
  const value = decimalNumber(text);
  if (!Number.isFinite(value)) throw new Error(`'${text}' is not a number`);
  return value;
}

/** "4x1+1" = 4 parallel branches × 1 call each + 1 sequential step; "8x2" has no step after. */
export function parseTree(text: string): Pick<ValidPlanInput, 'parallelBranches' | 'callsPerBranch' | 'sequentialSteps'> {
  const match = /^\s*(\d+)\s*x\s*(\d+)\s*(?:\+\s*(\d+)\s*)?$/i.exec(text);
  if (!match) throw new Error(`'${text}' is not BRANCHESxCALLS[+STEPS], e.g. 4x1+1 (4 parallel branches × 1 call + 1 step)`);
  return { parallelBranches: Number(match[1]), callsPerBranch: Number(match[2]), sequentialSteps: Number(match[3] ?? 0) };
}

const numeric = (flag: string, help: string, schema: z.ZodType): FlagSpec => ({ flag, help, schema, value: 'n', parse: number });
/** A quota each model has its own of: N for every model, or MODEL=N,… (with --agent, whose tree names the models). */
const perModelFlag = (flag: string, help: string): FlagSpec => ({
  flag,
  help: `${help} of each model: N, or MODEL=N,MODEL=N (N,MODEL=N: N for the others; with --agent)`,
  schema: perModelSchema(z.number().positive('must be > 0').max(1e12, 'must be <= 1e12')),
  value: 'n|model=n,…',
  parse: parsePerModel,
});
const QUOTA_KEYS = ['quotaRequestsPerMinute', 'quotaTokensPerMinute'] as const;

/** Flag → planner input field; the field's schema bounds it and gives its default. */
const INPUT_FLAGS = {
  callsPerRequest: numeric('calls-per-request', 'model calls per user request (instead of the tree flags)', field.callsPerRequest),
  parallelBranches: numeric('branches', 'tree: parallel branches in the fan-out', field.parallelBranches),
  callsPerBranch: numeric('calls-per-branch', 'tree: sequential model calls inside each branch', field.callsPerBranch),
  sequentialSteps: numeric('sequential-steps', 'tree: model calls after the fan-out, e.g. a synthesizer', field.sequentialSteps),
  branchOutputsPerStep: numeric('branch-outputs-per-step', "copies of every branch's output in a sequential step's prompt (ADK's synthesizer: 2)", field.branchOutputsPerStep),
  userRequestsPerMinute: numeric('users-per-minute', 'peak user requests per minute, whole fleet', field.userRequestsPerMinute),
  inputTokensPerCall: numeric('input-tokens', 'average input tokens per model call', field.inputTokensPerCall),
  outputTokensPerCall: numeric('output-tokens', 'average output tokens per model call', field.outputTokensPerCall),
  latencySeconds: numeric('latency', 'average model call latency, seconds', field.latencySeconds),
  quotaRequestsPerMinute: perModelFlag('quota-rpm', 'provider quota, requests per minute'),
  quotaTokensPerMinute: perModelFlag('quota-tpm', 'provider quota, tokens per minute'),
  countedTokens: { flag: 'counted-tokens', value: 'kind', help: "which tokens the quota counts: input (Gemini's TPM) or total", schema: field.countedTokens },
  budgetFraction: numeric('budget-fraction', 'share of the quota the limiters may use', field.budgetFraction),
  replicas: numeric('replicas', 'agent service replicas sharing the budget equally', field.replicas),
  toleratedWaitSeconds: numeric('tolerated-wait', 'longest wait for admission = maxWait, seconds', field.toleratedWaitSeconds),
  burstUsers: numeric('burst-users', 'users clicking at the same moment, for the burst shape', field.burstUsers),
} as const satisfies Record<PlanInputField, FlagSpec>;

const exampleNames = Object.keys(examples) as ExampleName[];

const agentField = agentPlanOptionsSchema.shape;

const FLAGS = {
  ...INPUT_FLAGS,
  agent: {
    flag: 'agent',
    value: 'file[#export]',
    help: 'count the model calls of the ADK agent this module exports (a BaseAgent or a Workflow; export rootAgent by default) instead of the tree flags',
    schema: agentField.agent.optional(),
  },
  toolTurns: { flag: 'tool-turns', value: 'n', help: 'with --agent: rounds of tool calls an LlmAgent with tools makes', schema: agentField.toolTurns, parse: number },
  messageTokens: {
    flag: 'message-tokens',
    value: 'n',
    help: "with --agent: tokens of the user message the calibration request sends (each agent's input tokens are measured from it; --input-tokens instead plans every call at that size)",
    schema: agentField.messageTokens,
    parse: number,
  },
  tree: { flag: 'tree', value: 'BxC[+S]', help: 'the tree in one flag: B parallel branches × C calls + S sequential steps, e.g. 4x1+1', parse: parseTree },
  example: {
    flag: 'example',
    value: 'name',
    help: `start from a named example (${exampleNames.join(', ')}); flags override its fields`,
    parse: (name: string) => {
      if (!Object.hasOwn(examples, name)) throw new Error(`unknown example '${name}' (known: ${exampleNames.join(', ')})`);
      return name;
    },
  },
} as const satisfies Record<string, FlagSpec>;

type Key = keyof typeof FLAGS;
const TREE_KEYS = ['parallelBranches', 'callsPerBranch', 'sequentialSteps'] as const;

/** The validated planner input the flags describe (over a counted agent's tree); throws UsageError naming the flag. */
function inputFrom(flags: FlagSet<Key>, counted: Partial<Record<PlanInputField, number | string>> = {}): ValidPlanInput {
  const {
    tree,
    example,
    agent: _agent,
    toolTurns: _toolTurns,
    messageTokens: _messageTokens,
    ...values
  } = flags.given() as Partial<Record<PlanInputField, number | string>> & {
    tree?: ReturnType<typeof parseTree>;
    example?: ExampleName;
    agent?: string;
    toolTurns?: number;
    messageTokens?: number;
  };
  for (const key of QUOTA_KEYS) {
    const value = values[key] as PerModel | undefined;
    if (value === undefined || !isPerModel(value)) continue;
    if (!(key in counted)) throw new UsageError(`${flags.nameOf(key)}: per-model values need --agent (its tree names the models)`);
    delete values[key]; // the counted model's own value is in `counted`
  }
  if (tree && TREE_KEYS.some((key) => flags.isGiven(key))) {
    throw new UsageError(`--tree: give either --tree or ${TREE_KEYS.map((k) => `--${INPUT_FLAGS[k].flag}`).join('/')}, not both`);
  }
  const typed = { ...values, ...tree };
  const merged = { ...(example ? examples[example] : {}), ...typed, ...counted };
  const issues = planInputIssues(merged);
  if (issues.length > 0) {
    // A value the user typed is the likelier mistake than a flag left out: report it first.
    const issue = issues.find((i) => i.field in typed) ?? issues[0];
    const fieldName = issue.field as PlanInputField;
    const name = tree && (TREE_KEYS as readonly string[]).includes(fieldName) ? '--tree' : Object.hasOwn(INPUT_FLAGS, fieldName) ? flags.nameOf(fieldName) : issue.field;
    const given = typed[fieldName];
    throw new UsageError(`${name}: ${issue.message}${given === undefined ? '' : ` (got ${given})`}`);
  }
  return parsePlanInput(merged);
}

/** The tree flags an agent's count replaces. */
const COUNTED_KEYS = ['tree', 'callsPerRequest', ...TREE_KEYS] as const;

/** The planner input fields the flags (or the example) give, before a tree is counted. */
function typedValue(flags: FlagSet<Key>, key: PlanInputField): unknown {
  const example = flags.values().example as ExampleName | undefined;
  return flags.isGiven(key) ? flags.values()[key] : example ? (examples[example] as Partial<Record<PlanInputField, unknown>>)[key] : undefined;
}

/** A quota of one model: its own value, else the one for every model (`*` or a number). */
function quotaFor(flags: FlagSet<Key>, key: (typeof QUOTA_KEYS)[number], model: string): number | undefined {
  const value = typedValue(flags, key) as PerModel | undefined;
  if (value === undefined) return undefined;
  const quota = valueForModel(value, model, Number.NaN);
  if (Number.isNaN(quota)) throw new UsageError(`${flags.nameOf(key)}: no quota for model ${model} (give ${model}=N, or N for every other model)`);
  return quota;
}

/** Counts the agent's tree; plans it per model too when traffic, quota or an example is given (calibrating the tokens per call from the tree). */
async function planAgent(flags: FlagSet<Key>, agent: string): Promise<AgentPlanResult> {
  const typedTree = COUNTED_KEYS.find((key) => flags.isGiven(key));
  if (typedTree) throw new UsageError(`${flags.nameOf(typedTree)}: the tree is counted from --agent; give one or the other`);
  const [{ countAgent, calibrateAgent, treePlanInput }, { AgentModuleError }, { AgentTreeError }, { TreeCountError, modelShares }, { AgentConfigError }, { CalibrationError, inputTokensPerModel, outputTokensPerModel }, { planModels }, { callSecondsFor, latencyOfFullAnswer }, { agentsByModel }] =
    await Promise.all([
      import('../loadtest/planner/agent-plan.ts'),
      import('../agent/agent-module.ts'),
      import('../instrumentation/tree/tree-walk.ts'),
      import('../instrumentation/tree/tree-count.ts'),
      import('../agent/config.ts'),
      import('../loadtest/planner/calibrate.ts'),
      import('../loadtest/planner/model-plans.ts'),
      import('../loadtest/planner/call-time.ts'),
      import('../loadtest/planner/model-agents.ts'),
    ]);
  let counted: Awaited<ReturnType<typeof countAgent>>;
  try {
    counted = await countAgent(agent, flags.values().toolTurns as number);
  } catch (error) {
    if (error instanceof AgentModuleError) throw new UsageError(`${flags.nameOf('agent')}: ${error.message}`);
    if (error instanceof AgentTreeError || error instanceof TreeCountError || error instanceof AgentConfigError) throw new UsageError(error.message);
    throw error;
  }
  const { tree } = counted;
  const result = { tree, callsPerRequest: tree.calls, peakWidth: tree.width };
  const planFlags = [...(Object.keys(INPUT_FLAGS) as Key[]), 'example' as const];
  if (!planFlags.some((key) => flags.isGiven(key))) return result;
  // --input-tokens plans every call at that size; otherwise one request measures each agent's.
  let calibration: AgentPlanResult['calibration'];
  let tokensOf: (model: string) => number | undefined = () => undefined;
  let outputOf: (model: string) => number | undefined = () => undefined;
  if (!flags.isGiven('inputTokensPerCall')) {
    const outputTokens = typedValue(flags, 'outputTokensPerCall');
    if (typeof outputTokens !== 'number') throw new UsageError(`${flags.nameOf('outputTokensPerCall')}: output tokens per call is required (the calibration request answers with that many)`);
    try {
      calibration = await calibrateAgent(counted, { messageTokens: flags.values().messageTokens as number, outputTokensPerCall: outputTokens });
    } catch (error) {
      if (error instanceof CalibrationError) throw new UsageError(`--agent: cannot calibrate the tokens per call (${error.message}): give --input-tokens N to plan every call at N tokens`);
      throw error;
    }
    const perModel = inputTokensPerModel(calibration);
    tokensOf = (model) => perModel.get(model);
    const outputPerModel = outputTokensPerModel(calibration);
    outputOf = (model) => outputPerModel.get(model);
  }
  const agents = agentsByModel(tree);
  const shares = modelShares(tree).map((share) => ({ ...share, agents: agents[share.model] ?? [] }));
  const inputOf = (share: (typeof shares)[number]): ValidPlanInput => {
    const input = inputFrom(flags, {
      ...treePlanInput(tree),
      ...Object.fromEntries(QUOTA_KEYS.flatMap((key) => (quotaFor(flags, key, share.model) === undefined ? [] : [[key, quotaFor(flags, key, share.model) as number]]))),
      ...(tokensOf(share.model) === undefined ? {} : { inputTokensPerCall: Math.round(tokensOf(share.model) as number) }),
    });
    // --latency is a full answer's; a model whose calls include tool turns (short answers) takes less per call.
    const output = outputOf(share.model);
    return output === undefined ? input : { ...input, latencySeconds: callSecondsFor(latencyOfFullAnswer(input.latencySeconds, input.outputTokensPerCall), output) };
  };
  const models = planModels(shares, shares.map(inputOf));
  const binding = models.models.find((m) => m.model === models.binding);
  return { ...result, plan: binding?.plan, models, calibration };
}

export function planCommand(): Command {
  const command = new Command('plan')
    .description('size the limiter of an agent tree that fans out model calls against a provider quota')
    .option('--json', 'print the plan as JSON')
    .addHelpText('after', '\nGive the calls per request, or the tree: parallel branches × calls per branch + sequential steps.');
  const flags = new FlagSet(command, FLAGS, { formerEnvPrefix: 'PLAN_' });
  command.action(async (options: { json?: boolean }) => {
    const agent = flags.values().agent as string | undefined;
    if (agent === undefined) {
      const result = plan(inputFrom(flags));
      process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : formatPlan(result));
      return;
    }
    // A module's own ADK copy may log to stdout while it loads and runs: only the plan goes there.
    const result = await withStdoutOnStderr(() => planAgent(flags, agent));
    const { formatAgentPlan } = await import('../loadtest/planner/agent-plan.ts');
    process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : formatAgentPlan(result));
  });
  return command;
}
