// A counted tree's shape tells its chain where the flattened shape misstates it, and the
// run's critical path reads it: a deep tree of the suite's own (claims_pipeline: 19 calls, 2
// at once, a chain of 13) flattens to 1 + 17 calls one after another.
import { describe, expect, it } from 'vitest';
import { shapeOfCount } from '../../agent/tree-shapes.ts';
import { countModelCalls, DEFAULT_TOOL_TURNS } from '../../instrumentation/tree/tree-count.ts';
import { walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { criticalPathSeconds } from '../../loadtest/measure/steady-state.ts';
import { buildClaimsPipeline } from '../fixtures/agents/claims_pipeline.ts';

describe('the chain of a counted tree', () => {
  it("is the counted depth where the flattened shape misstates it, and the critical path reads it", () => {
    const counted = countModelCalls(walkAgentTree(buildClaimsPipeline()), { toolTurns: DEFAULT_TOOL_TURNS });
    expect([counted.calls, counted.width, counted.depth]).toEqual([19, 2, 13]);
    const shape = shapeOfCount(counted);
    expect(shape).toEqual({ parallelBranches: 2, callsPerBranch: 1, sequentialSteps: 17, depth: 13 });
    expect(criticalPathSeconds(shape, 8)).toBe(104);
  });

  it('is left out where the flattened shape already tells it (the samples publish the same shape as before)', () => {
    expect(shapeOfCount({ calls: 5, width: 4, depth: 2 })).toEqual({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 });
    expect(criticalPathSeconds({ parallelBranches: 4, callsPerBranch: 1, sequentialSteps: 1 }, 8)).toBe(16);
  });
});
