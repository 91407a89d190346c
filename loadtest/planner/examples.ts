// Named inputs the CLI can start from (`--example NAME`); other flags override their fields.
import { TREE_SHAPES, type TreeShape } from '../../agent/tree-shapes.ts';
import { WORKED_EXAMPLE } from '../../agent/worked-example.ts';
import type { PlanInput } from './input.ts';

// The worked example's figures charge every call 5,000 + 800 tokens: its synthesizer's prompt is
// taken as long as a reviewer's, without the reviews the real tree's synthesizer reads.
const { branchOutputsPerStep: _reviewsInTheSynthesizer, ...reviewFanOut } = TREE_SHAPES.review as TreeShape;

/** The worked example on the review tree (its shape as the agent service publishes it). */
export const reviewAgentExample = {
  ...reviewFanOut,
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
