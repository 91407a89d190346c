// `tools`: reviewers call a slow function tool and an AgentTool whose inner agent uses the
// same limited model. With ONE permit (and a mock that allows one concurrent call) it
// still completes: the permit is held for the model call only, not while tools run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastMock, type Stack, startStack } from './stack.ts';

describe('tools tree', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(40, { maxConcurrent: 1 }), { permits: 1, maxWaitMs: 20_000, toolDelayMs: 150 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('AgentTool with maxConcurrent 1 completes (no deadlock)', async () => {
    const { status, body } = await stack.run('tools', { document: 'const x = eval(input);' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.missingBranches).toEqual([]);
    expect(body.branches.map((b) => b.name)).toEqual(['security', 'tests', 'synthesizer']);
    const agents = stack.probe.calls.map((c) => c.agent);
    // Per reviewer: a call that asks for the tools, the inner explainer, the answer.
    expect(agents.filter((a) => a === 'explainer')).toHaveLength(2);
    expect(agents.filter((a) => a === 'security')).toHaveLength(2);
    expect(agents.filter((a) => a === 'tests')).toHaveLength(2);
    expect(agents.at(-1)).toBe('synthesizer');
    expect(body.modelCalls).toBe(7);
    expect(stack.probe.peakInFlight).toBe(1);
    expect(stack.agent.limiter.snapshot().permitsInUse).toBe(0);
  });
});
