// The planner's command-line flags: each numeric flag sets one PlanInput field. Parsing
// never exits; it throws a FlagError whose message is the one line the CLI prints.
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import { examples } from './examples.ts';
import type { ExampleName } from './examples.ts';
import { parsePlanInput, planInputIssues } from './input.ts';
import type { PlanInputField, ValidPlanInput } from './input.ts';

/** Flag → input field, with the help line each flag shows. */
export const numericFlags = {
  '--calls-per-request': { field: 'callsPerRequest', help: 'model calls per user request (instead of the tree flags)' },
  '--branches': { field: 'parallelBranches', help: 'tree: parallel branches in the fan-out' },
  '--calls-per-branch': { field: 'callsPerBranch', help: 'tree: sequential model calls inside each branch (1)' },
  '--sequential-steps': { field: 'sequentialSteps', help: 'tree: model calls after the fan-out, e.g. a synthesizer (0)' },
  '--users-per-minute': { field: 'userRequestsPerMinute', help: 'peak user requests per minute, whole fleet' },
  '--input-tokens': { field: 'inputTokensPerCall', help: 'average input tokens per model call' },
  '--output-tokens': { field: 'outputTokensPerCall', help: 'average output tokens per model call' },
  '--branch-outputs-per-step': { field: 'branchOutputsPerStep', help: "copies of every branch's output in a sequential step's prompt (0; ADK's synthesizer: 2)" },
  '--latency': { field: 'latencySeconds', help: 'average model call latency, seconds' },
  '--quota-rpm': { field: 'quotaRequestsPerMinute', help: 'provider quota, requests per minute' },
  '--quota-tpm': { field: 'quotaTokensPerMinute', help: 'provider quota, tokens per minute' },
  '--budget-fraction': { field: 'budgetFraction', help: `share of the quota the limiters may use (${WORKED_EXAMPLE.budgetFraction})` },
  '--replicas': { field: 'replicas', help: 'agent service replicas sharing the budget equally (1)' },
  '--tolerated-wait': { field: 'toleratedWaitSeconds', help: `longest wait for admission = maxWait, seconds (${WORKED_EXAMPLE.maxWaitMs / 1000})` },
  '--burst-users': { field: 'burstUsers', help: `users clicking at the same moment, for the burst shape (${WORKED_EXAMPLE.burstUsers})` },
} as const satisfies Record<string, { field: PlanInputField; help: string }>;

type NumericFlag = keyof typeof numericFlags;

export interface CliOptions {
  readonly input: ValidPlanInput;
  readonly json: boolean;
}

export type ParsedArgs = { readonly help: true } | ({ readonly help: false } & CliOptions);

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

const treeFlags = ['--branches', '--calls-per-branch', '--sequential-steps'] as const;

/** "4x1+1" = 4 parallel branches × 1 call each + 1 sequential step; "8x2" has no step after. */
export function parseTree(text: string): Pick<ValidPlanInput, 'parallelBranches' | 'callsPerBranch' | 'sequentialSteps'> {
  const match = /^\s*(\d+)\s*x\s*(\d+)\s*(?:\+\s*(\d+)\s*)?$/i.exec(text);
  if (!match) {
    throw new FlagError(`--tree: '${text}' is not BRANCHESxCALLS[+STEPS], e.g. 4x1+1 (4 parallel branches × 1 call + 1 step)`);
  }
  return { parallelBranches: Number(match[1]), callsPerBranch: Number(match[2]), sequentialSteps: Number(match[3] ?? 0) };
}

function isNumericFlag(name: string): name is NumericFlag {
  return Object.hasOwn(numericFlags, name);
}

function flagOf(field: string): string {
  const entry = Object.entries(numericFlags).find(([, spec]) => spec.field === field);
  return entry ? entry[0] : field;
}

/** Parses argv (without node and the script); throws a FlagError naming the bad flag. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values: Partial<Record<PlanInputField, number | string>> = {};
  let example: ExampleName | undefined;
  let json = false;
  let treeGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : undefined;
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`${name}: missing value`);
      i++;
      return next;
    };
    if (name === '--help' || name === '-h') return { help: true };
    if (name === '--json') {
      json = true;
    } else if (name === '--tree') {
      Object.assign(values, parseTree(takeValue()));
      treeGiven = true;
    } else if (name === '--counted-tokens') {
      values.countedTokens = takeValue();
    } else if (name === '--example') {
      const value = takeValue();
      if (!Object.hasOwn(examples, value)) {
        throw new FlagError(`--example: unknown example '${value}' (known: ${Object.keys(examples).join(', ')})`);
      }
      example = value as ExampleName;
    } else if (isNumericFlag(name)) {
      const raw = takeValue();
      const value = raw.trim() === '' ? Number.NaN : Number(raw);
      if (!Number.isFinite(value)) throw new FlagError(`${name}: '${raw}' is not a number`);
      values[numericFlags[name].field] = value;
    } else {
      throw new FlagError(`${name}: unknown flag (see --help)`);
    }
  }
  if (treeGiven && argv.some((arg) => treeFlags.some((flag) => arg === flag || arg.startsWith(`${flag}=`)))) {
    throw new FlagError(`--tree: give either --tree or ${treeFlags.join('/')}, not both`);
  }
  const base = example ? examples[example] : {};
  const merged = { ...base, ...values };
  const issues = planInputIssues(merged);
  if (issues.length > 0) {
    // A value the user typed is the likelier mistake than a flag left out: report it first.
    const issue = issues.find((i) => i.field in values) ?? issues[0];
    const given = values[issue.field as PlanInputField];
    const fromTree = treeGiven && ['parallelBranches', 'callsPerBranch', 'sequentialSteps'].includes(issue.field);
    const flag = fromTree ? '--tree' : issue.field === 'countedTokens' ? '--counted-tokens' : flagOf(issue.field);
    throw new FlagError(`${flag}: ${issue.message}${given === undefined ? '' : ` (got ${given})`}`);
  }
  return { help: false, json, input: parsePlanInput(merged) };
}

export function usage(): string {
  const width = Math.max(...Object.keys(numericFlags).map((flag) => flag.length)) + 2;
  const lines = Object.entries(numericFlags).map(([flag, spec]) => `  ${flag.padEnd(width)}${spec.help}`);
  return [
    'Usage: npm run plan -- [--example review-agent] [flags] [--json]',
    '',
    'Sizes the limiter of an agent tree that fans out model calls against a provider quota.',
    'Give the calls per request, or the tree: parallel branches × calls per branch + sequential steps.',
    '',
    ...lines,
    `  ${'--counted-tokens K'.padEnd(width)}which tokens the quota counts: input (Gemini's TPM, default) or total`,
    `  ${'--tree BxC[+S]'.padEnd(width)}the tree in one flag: B parallel branches × C calls + S sequential steps (4x1+1)`,
    `  ${'--example NAME'.padEnd(width)}start from a named example (${Object.keys(examples).join(', ')}); flags override it`,
    `  ${'--json'.padEnd(width)}print the plan as JSON`,
    '',
    'Bad flags print one line naming the flag and exit with code 2.',
  ].join('\n');
}
