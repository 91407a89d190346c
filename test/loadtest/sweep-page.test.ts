// The sweep's page from a record: the knee and the plan line first, the chart with the plan's
// line, the SLO and the knee marked, a row per step, and nothing loaded from elsewhere.
import { describe, expect, it } from 'vitest';
import type { SweepRecord } from '../../loadtest/sweep/run-sweep.ts';
import type { StepResult } from '../../loadtest/sweep/step.ts';
import { sweepPage } from '../../loadtest/sweep/sweep-report.ts';

const step = (index: number, perMinute: number, servedPerMinute: number, ok: boolean): StepResult => ({
  index,
  phase: index === 4 ? 'repeat' : 'double',
  perMinute,
  started: 30,
  served: 30,
  partial: 0,
  shed: ok ? 0 : 10,
  failed: 0,
  unfinished: 0,
  servedPerMinute,
  shedPerMinute: ok ? 0 : perMinute - servedPerMinute,
  partialPercent: 0,
  lostPercent: ok ? 0 : 30,
  servedP95Seconds: 4.5,
  provider429s: 0,
  doorWaitP95Seconds: 0.2,
  okCalls: 150,
  countedTokens: 750_000,
  callSeconds: 2.05,
  completedRequests: 30,
  window: { from: 0, to: 60_000 },
  check: ok ? { ok, lostTooMany: false, why: [] } : { ok, lostTooMany: true, why: ['30.0 % not served > 1 %'] },
  testStartedAt: 0,
  endedAt: 90_000,
  k6ExitCode: 0,
});

const record: SweepRecord = {
  runId: 'r1',
  tree: 'review',
  parameters: { callSeconds: 2 },
  criteria: { maxLostPercent: 1, maxPartialPercent: 1, sloP95Seconds: 15 },
  timing: { warmUpSeconds: 21, windowSeconds: 60 },
  plan: { perMinute: 28.7, binding: 'tokens', quantities: { tokensPerCall: 6280, callSeconds: 2, callsPerRequest: 5 } },
  steps: [step(1, 14.3, 14, true), step(2, 28.6, 28.4, true), step(3, 57.2, 29.1, false), step(4, 28.6, 28.8, true)],
  findings: { knee: { perMinute: 28.6, servedPerMinute: 28.6, plusMinus: 0.3, steps: 2, passed: 2 }, saturatedPerMinute: 29.1, bracket: { low: 28.6, high: 29.4 }, reason: 'bracketed within 3 %' },
  gap: { plannedPerMinute: 28.7, measuredPerMinute: 28.6, plusMinus: 0.3, relativeError: -0.0035, differs: false, off: [], line: 'plan 28.7/min, measured 28.6 ± 0.3/min (−0.3 %)' },
  wallSeconds: 400,
};

describe('sweep page', () => {
  const html = sweepPage(record);
  it('opens with the knee and the plan beside it', () => {
    expect(html).toContain('Knee: 28.6 user requests/min offered, 28.6 ± 0.3/min served (2 of 2 steps at it passed); no rate from 29.4/min up can pass.');
    expect(html).toContain('Saturated: 29.1/min served at most while shedding.');
    expect(html).toContain('plan 28.7/min, measured 28.6 ± 0.3/min (−0.3 %)');
  });
  it('draws the plan, the knee, the SLO and a dot per step', () => {
    expect(html).toMatch(/<line class="plan" [^>]*\/>/);
    expect(html).toContain('knee 28.6/min');
    expect(html).toMatch(/<line class="slo" [^>]*\/>/);
    expect(html.match(/<circle class="step pass"/g)).toHaveLength(3);
    expect(html.match(/<circle class="step fail"/g)).toHaveLength(1);
  });
  it('lists every step and loads nothing', () => {
    expect(html.match(/<tr><td>\d+<\/td>/g)).toHaveLength(4);
    expect(html).toContain('30.0 % not served &#62; 1 %');
    expect(html).toContain("default-src 'none'");
    expect(html).not.toMatch(/<(script|link|img)\b/);
  });
});
