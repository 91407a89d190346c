// The worked example every default starts from: a review agent (4 parallel reviewers, then
// a synthesizer) on 3 replicas sharing a provider quota of 1,000 requests/min and
// 1,000,000 tokens/min, 90 % of it given to the limiters. Each model call reads 5,000 tokens,
// writes 800 and takes 8 s; users send 40 requests/min, 10 of them at once at the start.
// The agent's defaults, the planner's example, `npm start` and the dashboards read it here.
import { DEFAULT_MAX_WAIT_MS, DEFAULT_PERMITS } from '../instrumentation/defaults.ts';
import { REVIEWERS } from './reviewers.ts';

export const WORKED_EXAMPLE = {
  quotaRequestsPerMinute: 1000,
  quotaTokensPerMinute: 1_000_000,
  /** Share of the provider quota the limiters' token budget may use. */
  budgetFraction: 0.9,
  replicas: 3,
  inputTokensPerCall: 5000,
  outputTokensPerCall: 800,
  callSeconds: 8,
  userRequestsPerMinute: 40,
  burstUsers: 10,
  /** Concurrent model calls per replica. */
  permits: DEFAULT_PERMITS,
  maxWaitMs: DEFAULT_MAX_WAIT_MS,
} as const;

/**
 * The review agent's fan-out as the example plans it: its reviewers at once, then the
 * synthesizer (the counted review tree's; a test holds them equal). Its figures charge every
 * call 5,000 + 800 tokens: the synthesizer's prompt is taken as long as a reviewer's,
 * without the reviews the real tree's synthesizer reads.
 */
export const WORKED_EXAMPLE_TREE = { parallelBranches: REVIEWERS.length, callsPerBranch: 1, sequentialSteps: 1 } as const;

/** The fleet's token budget per minute: the budget fraction of the token quota. */
export const WORKED_EXAMPLE_TOKENS_PER_MINUTE = Math.round(WORKED_EXAMPLE.quotaTokensPerMinute * WORKED_EXAMPLE.budgetFraction);
