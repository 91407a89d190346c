// A tree's shape as GET /v1/agents publishes it (the agent service and `serve`) and as the
// load-test side reads it back: one zod schema for both ends. No ADK imports, so the
// reader stays light; the sample trees are counted in sample-shapes.ts.
import { z } from 'zod';
import type { CountedNode } from '../instrumentation/tree/tree-count.ts';

export const TREE_NAMES = ['review', 'review-workflow', 'wide', 'tools'] as const;
export type TreeName = (typeof TREE_NAMES)[number];

/** Model calls of one tree per request: bounded so a published figure cannot blow up a plan. */
const callCount = z.number().int().min(0).max(10_000);

/** Per request: `parallelBranches` branches of `callsPerBranch` calls each, then `sequentialSteps` calls one after another. */
export const treeShapeSchema = z.object({
  parallelBranches: callCount,
  callsPerBranch: callCount,
  sequentialSteps: callCount,
  /** Copies of every branch's output in each sequential step's prompt (0 when unset). */
  branchOutputsPerStep: z.number().min(0).max(100).optional(),
  /** Calls one after another on the tree's longest chain (steps, loop iterations, AgentTool turns), where it was counted. */
  depth: callCount.optional(),
});
export type TreeShape = z.infer<typeof treeShapeSchema>;

/** One model's share of a published tree: its calls per request, their shape, and the limiter they go through. */
export const publishedModelSchema = z.object({
  model: z.string().min(1).max(200),
  /** The `limiter` label of that model's llm_limiter_* metrics; absent when the model is not wrapped. */
  limiter: z.string().min(1).max(200).optional(),
  modelCallsPerRequest: callCount,
  shape: treeShapeSchema,
});
export type PublishedModel = z.infer<typeof publishedModelSchema>;

/** One entry of GET /v1/agents. */
export const publishedAgentSchema = z.object({
  name: z.string().min(1),
  /** Null where the count is not fixed. */
  modelCallsPerRequest: callCount.nullable(),
  shape: treeShapeSchema.nullable(),
  /** Per model, when the tree's count is fixed (each model has its own quota and limiter). */
  models: z.array(publishedModelSchema).max(1000).optional(),
});
export type PublishedAgent = z.infer<typeof publishedAgentSchema>;

/** The body of GET /v1/agents as a reader needs it (the listed tree names are `agents[].name`). */
export const publishedAgentListSchema = z.object({ agents: z.array(publishedAgentSchema) });

/**
 * A counted tree as the planner's shape: its width as the fan-out, one call per branch,
 * the rest of its calls after it (exact for the total, the burst's worst first wave).
 */
export function shapeOfCount(tree: Pick<CountedNode, 'calls' | 'width'> & { readonly depth?: number }): TreeShape {
  const width = Math.max(1, Math.min(tree.width, tree.calls));
  const shape = { parallelBranches: width, callsPerBranch: 1, sequentialSteps: tree.calls - width };
  // The chain is told only where the flattened shape misstates it (a deep tree's branches run side by side).
  return tree.depth === undefined || tree.depth === 1 + shape.sequentialSteps ? shape : { ...shape, depth: tree.depth };
}

export const modelCallsPerRequest = (s: TreeShape): number => s.parallelBranches * s.callsPerBranch + s.sequentialSteps;
