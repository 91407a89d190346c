// Named inputs the CLI can start from (`--example NAME`); other flags override their fields.
import { WORKED_EXAMPLE, WORKED_EXAMPLE_TREE } from '../../agent/worked-example.ts';
import type { PlanInput } from './input.ts';

/** The worked example on the review tree (its fan-out as the agent service counts it). */
export const reviewAgentExample = {
  ...WORKED_EXAMPLE_TREE,
  userRequestsPerMinute: WORKED_EXAMPLE.userRequestsPerMinute,
  inputTokensPerCall: WORKED_EXAMPLE.inputTokensPerCall,
  outputTokensPerCall: WORKED_EXAMPLE.outputTokensPerCall,
  latencySeconds: WORKED_EXAMPLE.callSeconds,
  quotaRequestsPerMinute: WORKED_EXAMPLE.quotaRequestsPerMinute,
  quotaTokensPerMinute: WORKED_EXAMPLE.quotaTokensPerMinute,
  // The worked example states its quota in total tokens (5,800 per call); Gemini's own TPM,
  // and every default elsewhere, counts input tokens.
  countedTokens: 'total',
  budgetFraction: WORKED_EXAMPLE.budgetFraction,
  replicas: WORKED_EXAMPLE.replicas,
  toleratedWaitSeconds: WORKED_EXAMPLE.maxWaitMs / 1000,
  burstUsers: WORKED_EXAMPLE.burstUsers,
} as const satisfies PlanInput;

export const examples = { 'review-agent': reviewAgentExample } as const satisfies Record<string, PlanInput>;
export type ExampleName = keyof typeof examples;
