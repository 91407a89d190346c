// The trees' fan-out as the capacity planner counts it, published at GET /v1/agents. Pure
// data (no ADK imports) so the load-test side can read the same table.
import type { CountedNode } from '../instrumentation/tree/tree-count.ts';
import { REVIEWERS } from './reviewers.ts';

export const TREE_NAMES = ['review', 'review-workflow', 'wide', 'tools'] as const;
export type TreeName = (typeof TREE_NAMES)[number];

/** Per request: `parallelBranches` branches of `callsPerBranch` calls each, then `sequentialSteps` calls one after another. */
export interface TreeShape {
  parallelBranches: number;
  callsPerBranch: number;
  sequentialSteps: number;
  /** Copies of every branch's output in each sequential step's prompt (0 when unset). */
  branchOutputsPerStep?: number;
}

/** The review tree: the reviewers in parallel, then the synthesizer. */
const REVIEW_FAN_OUT: TreeShape = { parallelBranches: REVIEWERS.length, callsPerBranch: 1, sequentialSteps: 1 };

/**
 * The classic review tree's synthesizer reads each review twice: ADK fills the `{review_N?}`
 * placeholders of its instruction, and its contents carry the session's earlier events, the
 * reviewers' answers among them. Measured with the mock: 4 reviews of 150 tokens add 1,247
 * tokens to a 4,970-token reviewer prompt (1,200 + the longer instruction).
 */
const REVIEW_SHAPE: TreeShape = { ...REVIEW_FAN_OUT, branchOutputsPerStep: 2 };

/**
 * Each tree's shape, or null where the model calls per request are not fixed: `wide`
 * depends on the request's branches, `tools` on how often the model calls its tools.
 */
export const TREE_SHAPES: Readonly<Record<TreeName, TreeShape | null>> = {
  review: REVIEW_SHAPE,
  // The Workflow graph hands the reviews to the synthesizer its own way: not measured, so not counted.
  'review-workflow': REVIEW_FAN_OUT,
  wide: null,
  tools: null,
};

/**
 * A counted tree as the planner's shape: its width as the fan-out, one call per branch,
 * the rest of its calls after it (exact for the total, the burst's worst first wave).
 */
export function shapeOfCount(tree: CountedNode): TreeShape {
  const width = Math.max(1, Math.min(tree.width, tree.calls));
  return { parallelBranches: width, callsPerBranch: 1, sequentialSteps: tree.calls - width };
}

export const modelCallsPerRequest = (s: TreeShape): number => s.parallelBranches * s.callsPerBranch + s.sequentialSteps;

/** One entry of GET /v1/agents. */
export interface PublishedAgent {
  name: string;
  /** Null where the count is not fixed (see TREE_SHAPES). */
  modelCallsPerRequest: number | null;
  shape: TreeShape | null;
}

export function publishedAgents(): PublishedAgent[] {
  return TREE_NAMES.map((name) => {
    const shape = TREE_SHAPES[name];
    return { name, modelCallsPerRequest: shape ? modelCallsPerRequest(shape) : null, shape };
  });
}
