// Named inputs the CLI can start from (`--example NAME`); other flags override their fields.
import type { PlanInput } from './input.ts';

/**
 * DESIGN.md's worked example: a SequentialAgent of [ParallelAgent of 4 reviewers, then 1
 * synthesizer] at 40 user requests/min, 5,000 in + 800 out tokens per call, 8 s per call,
 * against 1,000 requests/min and 1,000,000 tokens/min, 90 % budget over 3 replicas.
 */
export const reviewAgentExample = {
  parallelBranches: 4,
  callsPerBranch: 1,
  sequentialSteps: 1,
  userRequestsPerMinute: 40,
  inputTokensPerCall: 5000,
  outputTokensPerCall: 800,
  latencySeconds: 8,
  quotaRequestsPerMinute: 1000,
  quotaTokensPerMinute: 1_000_000,
  budgetFraction: 0.9,
  replicas: 3,
  toleratedWaitSeconds: 20,
  burstUsers: 10,
} as const satisfies PlanInput;

export const examples = { 'review-agent': reviewAgentExample } as const satisfies Record<string, PlanInput>;
export type ExampleName = keyof typeof examples;
