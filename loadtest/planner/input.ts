// What the capacity planner needs to know, validated with zod. Field names are the module's;
// the CLI maps each to a flag (see flags.ts) so an error can name the flag the user typed.
import { z } from 'zod';
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import { COUNTED_TOKEN_KINDS } from '../../instrumentation/counted-tokens.ts';

// A missing field and a non-number get different messages, so the CLI can say "required".
const number = (what: string) =>
  z.number({ error: (issue) => (issue.input === undefined ? `${what} is required` : `${what} must be a number`) });
const positive = (what: string) => number(what).positive(`${what} must be > 0`);
const positiveInt = (what: string) => number(what).int(`${what} must be a whole number`).positive(`${what} must be > 0`);

export const planInputSchema = z
  .object({
    /** Model calls per user request, given directly (the tree's shape is then unknown). */
    callsPerRequest: positiveInt('calls per request').optional(),
    /** Agent-tree description: parallel branches of the fan-out … */
    parallelBranches: positiveInt('parallel branches').optional(),
    /** … sequential model calls inside each branch … */
    callsPerBranch: positiveInt('calls per branch').default(1),
    /** … and sequential steps after the fan-out (e.g. a synthesizer). */
    sequentialSteps: number('sequential steps')
      .int('sequential steps must be a whole number')
      .min(0, 'sequential steps must be >= 0')
      .default(0),
    /** Peak user requests per minute across the fleet. */
    userRequestsPerMinute: positive('user requests per minute'),
    /** Average input (prompt) tokens per model call. */
    inputTokensPerCall: positive('input tokens per call'),
    /**
     * Copies of every branch's output in each sequential step's prompt (default 0). ADK's
     * review synthesizer has 2: its instruction's {review_N?} placeholders and the session
     * history it inherits. Only the branches that answered add theirs.
     */
    branchOutputsPerStep: number('branch outputs per step').min(0, 'branch outputs per step must be >= 0').max(100, 'branch outputs per step must be <= 100').default(0),
    /** Average output tokens per model call. */
    outputTokensPerCall: number('output tokens per call')
      .min(0, 'output tokens per call must be >= 0'),
    /** Average model call latency in seconds. */
    latencySeconds: positive('latency'),
    /** Provider quota: requests per minute. */
    quotaRequestsPerMinute: positive('quota requests per minute'),
    /** Provider quota: tokens per minute, of the kind countedTokens says. */
    quotaTokensPerMinute: positive('quota tokens per minute'),
    /** Which tokens the quota counts: input (Gemini's TPM, the default) or total (input + output). */
    countedTokens: z.enum(COUNTED_TOKEN_KINDS, { error: 'counted tokens must be input or total' }).default('input'),
    /** Share of the quota the limiters may use, leaving headroom for estimate errors. */
    budgetFraction: positive('budget fraction').max(1, 'budget fraction must be <= 1').default(WORKED_EXAMPLE.budgetFraction),
    /** Agent service replicas; each gets an equal static share of the budget. */
    replicas: positiveInt('replicas').default(1),
    /** The longest a call may wait for admission before it is recorded as a timeout (maxWait). */
    toleratedWaitSeconds: positive('tolerated wait').default(WORKED_EXAMPLE.maxWaitMs / 1000),
    /** Users clicking at the same moment, for the burst shape. */
    burstUsers: positiveInt('burst users').default(WORKED_EXAMPLE.burstUsers),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.callsPerRequest === undefined && input.parallelBranches === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['callsPerRequest'],
        message: 'give the calls per request, or the tree (parallel branches, calls per branch, sequential steps)',
      });
      return;
    }
    if (input.callsPerRequest !== undefined && input.parallelBranches !== undefined) {
      const counted = input.parallelBranches * input.callsPerBranch + input.sequentialSteps;
      if (counted !== input.callsPerRequest) {
        ctx.addIssue({
          code: 'custom',
          path: ['callsPerRequest'],
          message: `calls per request ${input.callsPerRequest} disagrees with the tree (${input.parallelBranches} × ${input.callsPerBranch} + ${input.sequentialSteps} = ${counted})`,
        });
      }
    }
  });

/** What a caller passes to plan(): defaults may be left out. */
export type PlanInput = z.input<typeof planInputSchema>;
/** The input after validation, every default filled in. */
export type ValidPlanInput = z.output<typeof planInputSchema>;
export type PlanInputField = keyof ValidPlanInput;

/** Bad planner input; `field` names the offending input field. */
export class PlanInputError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'PlanInputError';
    this.field = field;
  }
}

export interface PlanInputIssue {
  readonly field: string;
  readonly message: string;
}

/** Every problem with the input, in field order (empty when it is valid). */
export function planInputIssues(input: unknown): PlanInputIssue[] {
  const result = planInputSchema.safeParse(input);
  if (result.success) return [];
  return result.error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: key, message: `unknown input field ${key}` }));
    }
    return [{ field: issue.path.length > 0 ? issue.path.map(String).join('.') : 'input', message: issue.message }];
  });
}

/** Validates the input; throws a PlanInputError naming the first bad field. */
export function parsePlanInput(input: unknown): ValidPlanInput {
  const result = planInputSchema.safeParse(input);
  if (result.success) return result.data;
  const [first] = planInputIssues(input);
  throw new PlanInputError(first.field, first.message);
}
