// The sample trees' published shapes are counted from the trees the service builds (as
// `serve` counts a user's), published only where the count is fixed, valid against the one
// wire schema, and the worked example plans the review tree's counted fan-out.
import { describe, expect, it } from 'vitest';
import { BRANCH_OUTPUTS_PER_STEP, samplePublishedAgents, sampleTreeShapes } from '../../agent/sample-shapes.ts';
import { modelCallsPerRequest, publishedAgentListSchema, TREE_NAMES } from '../../agent/tree-shapes.ts';
import { buildTree } from '../../agent/trees.ts';
import { WORKED_EXAMPLE_TREE } from '../../agent/worked-example.ts';
import { FakeLlm, textResponse } from '../../instrumentation/testing.ts';
import { reviewAgentExample } from '../../loadtest/planner/examples.ts';

const model = new FakeLlm(async function* () {
  yield textResponse('ok', 1);
});

describe('the sample trees, counted', () => {
  it('both review trees count 4 reviewers at once, then the synthesizer; wide and tools are not fixed', () => {
    const shapes = sampleTreeShapes(model);
    expect(shapes['review-workflow']).toEqual({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 });
    expect(shapes.review).toEqual({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1, branchOutputsPerStep: BRANCH_OUTPUTS_PER_STEP.review });
    expect(shapes.wide).toBeNull();
    expect(shapes.tools).toBeNull();
    expect(sampleTreeShapes()).toEqual(shapes); // the count-only model counts the same
  });

  it("a fixed tree's count is its run's call cap", () => {
    const shapes = sampleTreeShapes(model);
    for (const name of TREE_NAMES) {
      const shape = shapes[name];
      if (shape) expect(buildTree(name, model, { branches: 2, width: 2, toolDelayMs: 0 }).maxLlmCalls, name).toBe(modelCallsPerRequest(shape));
    }
  });

  it('what the service publishes parses with the schema the load-test side reads it with', () => {
    const agents = samplePublishedAgents(model);
    expect(publishedAgentListSchema.parse({ agents })).toEqual({ agents });
  });

  it("the worked example plans the review tree's counted fan-out", () => {
    const { branchOutputsPerStep: _tokensNotCalls, ...fanOut } = sampleTreeShapes().review ?? {};
    expect(fanOut).toEqual(WORKED_EXAMPLE_TREE);
    expect(reviewAgentExample).toMatchObject(fanOut);
  });
});
