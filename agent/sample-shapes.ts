// The sample trees' shapes, counted from the trees the agent service builds with the code
// that counts a user's tree for `serve` (instrumentation/tree). A shape is published only
// where the count is fixed: the same whatever a request asks for (`wide` builds its
// branches from the request) and however many rounds of tool calls the model makes
// (`tools`). The tokens a step's prompt carries are not calls, so the count cannot see
// them: they are the one table here.
import { BaseLlm, type BaseLlmConnection, type LlmResponse, LogLevel, setLogLevel } from '@google/adk';
import { countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } from '../instrumentation/tree/tree-count.ts';
import { walkAgentTree } from '../instrumentation/tree/tree-walk.ts';
import { modelCallsPerRequest, type PublishedAgent, shapeOfCount, TREE_NAMES, type TreeName, type TreeShape } from './tree-shapes.ts';
import { buildTree, type TreeParams } from './trees.ts';

// ParallelAgent/SequentialAgent log a deprecation WARN per construction.
setLogLevel(LogLevel.ERROR);

/**
 * Copies of every branch's output in each sequential step's prompt, per tree: a token
 * multiplier. The classic review tree's synthesizer reads each review twice: ADK fills the
 * `{review_N?}` placeholders of its instruction, and its contents carry the session's
 * earlier events, the reviewers' answers among them. Measured with the mock: 4 reviews of
 * 150 tokens add 1,247 tokens to a 4,970-token reviewer prompt (1,200 + the longer
 * instruction). The Workflow graph hands the reviews to the synthesizer its own way: not
 * measured, so not listed.
 */
export const BRANCH_OUTPUTS_PER_STEP: Readonly<Partial<Record<TreeName, number>>> = { review: 2 };

/** Requests that shape a tree differently (`wide`'s branches and width): a fixed count is the same for each. */
const REQUEST_VARIANTS: readonly Omit<TreeParams, 'toolDelayMs'>[] = [
  { branches: 2, width: 1 },
  { branches: 3, width: 3 },
];
/** Rounds of tool calls the model may make: a fixed count is the same for each. */
const TOOL_TURN_VARIANTS = [DEFAULT_TOOL_TURNS, DEFAULT_TOOL_TURNS + 1];

/** Stands in for the provider model where the trees are built only to be counted: never called. */
class CountOnlyModel extends BaseLlm {
  constructor() {
    super({ model: 'count-only' });
  }
  // biome-ignore lint/correctness/useYield: never called; the trees built with it are only counted
  override async *generateContentAsync(): AsyncGenerator<LlmResponse, void> {
    throw new Error('the count-only model makes no calls');
  }
  override connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error('the count-only model makes no calls'));
  }
}

/** `name`'s shape as the service publishes it, or null where its count is not fixed. */
function countedShape(name: TreeName, model: BaseLlm): TreeShape | null {
  let shapes: TreeShape[];
  try {
    shapes = REQUEST_VARIANTS.flatMap((request) => {
      const walked = walkAgentTree(buildTree(name, model, { ...request, toolDelayMs: 0 }).root);
      return TOOL_TURN_VARIANTS.map((toolTurns) => countModelCalls(walked, { toolTurns })).filter((c) => c.calls > 0).map(shapeOfCount);
    });
  } catch (error) {
    if (error instanceof TreeCountError) return null;
    throw error;
  }
  const [first] = shapes;
  const fixed = shapes.length === REQUEST_VARIANTS.length * TOOL_TURN_VARIANTS.length && shapes.every((s) => JSON.stringify(s) === JSON.stringify(first));
  if (!fixed) return null;
  const outputs = BRANCH_OUTPUTS_PER_STEP[name];
  return outputs === undefined ? first : { ...first, branchOutputsPerStep: outputs };
}

let countedOnce: Readonly<Record<TreeName, TreeShape | null>> | undefined;

/** Each sample tree's shape, or null where its model calls per request are not fixed; counted once per process unless `model` is given. */
export function sampleTreeShapes(model?: BaseLlm): Readonly<Record<TreeName, TreeShape | null>> {
  const count = (m: BaseLlm) => Object.fromEntries(TREE_NAMES.map((name) => [name, countedShape(name, m)])) as Record<TreeName, TreeShape | null>;
  if (model) return count(model);
  countedOnce ??= count(new CountOnlyModel());
  return countedOnce;
}

/** The agent service's entries of GET /v1/agents, counted from its trees built with `model`. */
export function samplePublishedAgents(model?: BaseLlm): PublishedAgent[] {
  const shapes = sampleTreeShapes(model);
  return TREE_NAMES.map((name) => {
    const shape = shapes[name];
    return { name, modelCallsPerRequest: shape ? modelCallsPerRequest(shape) : null, shape };
  });
}
