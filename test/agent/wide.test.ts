// `wide` with N = 20 and k = 4: one request never has more than 4 calls in flight, even
// with permits to spare.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastMock, ProviderProbe, type Stack, startStack } from './stack.ts';

describe('wide tree', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(fastMock(60), { permits: 20 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('N = 20, k = 4: 21 calls, never more than 4 in flight', async () => {
    const { status, body } = await stack.run('wide', { document: 'a wide document', branches: 20, width: 4 });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.modelCalls).toBe(21);
    expect(body.branches).toHaveLength(21);
    expect(body.missingBranches).toEqual([]);
    const calls = stack.probe.calls;
    expect(calls).toHaveLength(21);
    expect(ProviderProbe.peakOverlap(calls)).toBe(4);
    expect(stack.probe.peakInFlight).toBe(4);
    expect(calls.at(-1)?.agent).toBe('synthesizer');
  });
});
