// What a request is funded at, per agent, from what its limiter learned and the prior it was given.
import { describe, expect, it } from 'vitest';
import { CallCostModel } from '../../instrumentation/admission/call-cost.ts';

describe('CallCostModel.fundRequest', () => {
  const calls = new Map([
    ['critic', 6],
    ['writer', 2],
  ]);

  it("with a prior, agents not seen yet share what the seen ones leave of the prior's total (a late writer reads every branch)", () => {
    // The prior is the calibration's mean per call on the model: 6 critics of 8,000 and 2 writers of 16,000.
    const cost = new CallCostModel({ tokensPerCall: 10_000 });
    cost.observe('critic', 8_000, 1_000);
    const funded = cost.fundRequest(calls);
    expect(funded?.get('critic')).toBe(8_000);
    // The mean of those seen (8,000) would leave the request 16,000 short: each writer call takes its half.
    expect(funded?.get('writer')).toBe(16_000);
    cost.observe('writer', 16_000, 1_000);
    expect(cost.fundRequest(calls)).toEqual(new Map([['critic', 8_000], ['writer', 16_000]]));
  });

  it('without a prior, an agent not seen yet takes the mean of those seen; the mean or the most of its calls once seen', () => {
    const cost = new CallCostModel();
    expect(cost.fundRequest(calls)).toBeUndefined();
    cost.observe('critic', 6_000, 1_000);
    cost.observe('critic', 10_000, 1_000);
    expect(cost.fundRequest(calls, 100)).toEqual(new Map([['critic', 10_100], ['writer', 8_100]]));
    expect(cost.fundRequest(calls, 100, 'mean')).toEqual(new Map([['critic', 8_100], ['writer', 8_100]]));
  });

  it('seen agents that already fund the prior total leave the unseen ones at the mean of those seen', () => {
    const cost = new CallCostModel({ tokensPerCall: 1_000 });
    cost.observe('critic', 5_000, 1_000);
    expect(cost.fundRequest(calls)).toEqual(new Map([['critic', 5_000], ['writer', 5_000]]));
  });
});

describe('CallCostModel per call', () => {
  it("funds an agent whose calls do not carry the request's message (an AgentTool's) at what they used, the others beyond their message plus this one's", () => {
    const cost = new CallCostModel();
    cost.observe('critic', 9_000, 1_000, { messageTokens: 8_000, carriesMessage: true });
    cost.observe('checker', 800, 1_000, { messageTokens: 8_000, carriesMessage: false });
    // A request with a 2,000-token message: the critic carries it, the checker does not.
    expect(cost.fundRequest(new Map([['critic', 1], ['checker', 1]]), 2_000, 'mean')).toEqual(
      new Map([
        ['critic', 3_000],
        ['checker', 800],
      ]),
    );
  });
});

describe('CallCostModel start offsets', () => {
  it("learns each agent's first, second, ... call in a request apart: a later call is held from its own start, not its agent's first", () => {
    const cost = new CallCostModel();
    expect(cost.startOffsetMs('writer', 0)).toBeUndefined();
    cost.observeStart('writer', 10_000, 0);
    cost.observeStart('writer', 18_000, 1);
    cost.observeStart('writer', 12_000, 0);
    cost.observeStart('writer', 19_000, 1);
    expect(cost.startOffsetMs('writer', 0)).toBe(10_000);
    expect(cost.startOffsetMs('writer', 1)).toBe(18_000);
    // A call not seen at that place yet: the earliest of the agent's calls.
    expect(cost.startOffsetMs('writer', 2)).toBe(10_000);
    expect(cost.startOffsetMs('writer')).toBe(10_000);
  });

  it('holds from a low quantile of the starts, not the earliest: one early outlier does not idle every request', () => {
    const cost = new CallCostModel();
    cost.observeStart('writer', 1_000);
    for (let i = 0; i < 9; i++) cost.observeStart('writer', 40_000 + i * 1_000);
    // 10 samples: the 20th percentile is the second smallest.
    expect(cost.startOffsetMs('writer')).toBe(40_000);
  });
});
