// The sweep's search (doubling, bisection, stopping, repeats) against a synthetic service
// curve: a tree that serves what it is offered up to a capacity C and sheds the rest, with
// noise on what it serves. Also the pure parts a step's figures come from.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { kneeCheck } from '../../loadtest/sweep/knee-criteria.ts';
import { planGap } from '../../loadtest/sweep/plan-gap.ts';
import { nextStep, type SearchOptions, type SearchStep } from '../../loadtest/sweep/search.ts';
import { requestFigures, stepRequests } from '../../loadtest/sweep/step-requests.ts';
import { sweepFindings } from '../../loadtest/sweep/sweep-result.ts';

const OPTIONS: SearchOptions = { startPerMinute: 10, maxPerMinute: 1000, minPerMinute: 0.5, resolution: 0.03, maxSearchSteps: 12, repeats: 2, maxLostShare: 0.01 };

/** A tree of capacity `capacity`/min: it serves min(rate, C) × (1 + noise) and loses the excess. */
function service(capacity: number, noise: () => number) {
  return (perMinute: number, repeat: boolean): SearchStep & { lostPercent: number } => {
    const served = Math.min(perMinute, capacity) * (1 + noise());
    const lostPercent = Math.max(0, ((perMinute - capacity) / perMinute) * 100);
    const check = kneeCheck({ started: 100, served: 100, lostPercent, partialPercent: 0, servedP95Seconds: 1, provider429s: 0 }, { maxLostPercent: 1, maxPartialPercent: 1, sloP95Seconds: 60 });
    return { perMinute, ok: check.ok, servedPerMinute: served, lostTooMany: check.lostTooMany, repeat, lostPercent };
  };
}

/** Runs the search to its end against `probe`; returns the steps and the end. */
function sweep(probe: (perMinute: number, repeat: boolean) => SearchStep, o: SearchOptions = OPTIONS) {
  const steps: SearchStep[] = [];
  for (let i = 0; i < 100; i++) {
    const d = nextStep(steps, o);
    if (d.kind === 'done') return { steps, done: d };
    steps.push(probe(d.perMinute, d.phase === 'repeat'));
  }
  throw new Error('the search did not stop in 100 steps');
}

describe('sweep search', () => {
  it('doubles from the start rate until a step fails, then bisects', () => {
    const { steps } = sweep(service(70, () => 0));
    expect(steps.slice(0, 4).map((s) => s.perMinute)).toEqual([10, 20, 40, 80]);
    expect(steps[3]?.ok).toBe(false);
    // 80 shed, serving 70: the bracket is [40, 70.7], bisected from there.
    expect(steps[4]?.perMinute).toBe(55.4);
  });

  it('finds the knee within the resolution of the capacity, under noise, and repeats it', () => {
    fc.assert(
      fc.property(fc.double({ min: 3, max: 400, noNaN: true }), fc.double({ min: 0.5, max: 20, noNaN: true }), fc.integer({ min: 0, max: 2 ** 31 - 1 }), (capacity, start, seed) => {
        let s = seed;
        const noise = () => {
          s = (s * 1103515245 + 12345) % 2 ** 31;
          return ((s / 2 ** 31) * 2 - 1) * 0.02; // ±2 %
        };
        const { steps, done } = sweep(service(capacity, noise), { ...OPTIONS, maxSearchSteps: 20, startPerMinute: start });
        const knee = done.knee as number;
        expect(knee).toBeDefined();
        // Never above what passes (C / 0.99), never far below it: the bracket's cap is what a
        // shedding step served (−2 % at worst) plus 1 %; rates are rounded to 0.1/min.
        expect(knee).toBeLessThanOrEqual(capacity / 0.99 + 0.05);
        expect(knee).toBeGreaterThanOrEqual((capacity * 0.98 * 1.01) / (1 + OPTIONS.resolution) - 0.2);
        // Exactly `repeats` repeats, all at the knee, last.
        const repeats = steps.filter((x) => x.repeat);
        expect(repeats.map((x) => x.perMinute)).toEqual([knee, knee]);
        expect(steps.slice(-2).every((x) => x.repeat)).toBe(true);
        expect(steps.filter((x) => !x.repeat).length).toBeLessThanOrEqual(20);
        // Every probe inside the bounds.
        for (const x of steps) expect(x.perMinute).toBeGreaterThanOrEqual(OPTIONS.minPerMinute);
        for (const x of steps) expect(x.perMinute).toBeLessThanOrEqual(OPTIONS.maxPerMinute);
      }),
      { numRuns: 200 },
    );
  });

  it('stops at the step limit with the best bracket so far', () => {
    const { steps, done } = sweep(service(1000, () => 0), { ...OPTIONS, maxPerMinute: 1e5, maxSearchSteps: 3, repeats: 0 });
    expect(steps.map((s) => s.perMinute)).toEqual([10, 20, 40]);
    expect(done.knee).toBe(40);
    expect(done.reason).toMatch(/no rate failed in 3 steps/);
  });

  it('stops at the ceiling when every rate passes', () => {
    const { steps, done } = sweep(service(1e6, () => 0), { ...OPTIONS, maxPerMinute: 50, repeats: 1 });
    expect(steps.map((s) => s.perMinute)).toEqual([10, 20, 40, 50, 50]);
    expect(done.knee).toBe(50);
  });

  it('has no knee when even the floor fails', () => {
    const { steps, done } = sweep(() => ({ perMinute: 0, ok: false, servedPerMinute: 0, lostTooMany: true, repeat: false }), OPTIONS);
    expect(done.knee).toBeUndefined();
    expect(steps.length).toBeGreaterThan(0);
  });

  it('below a failing first step, halves what it served and bisects up from there', () => {
    const { steps, done } = sweep(service(3, () => 0), { ...OPTIONS, repeats: 0 });
    // 10 served 3: nothing above 3.03 can pass, so 1.5, then up between 1.5 and 3.0.
    expect(steps.slice(0, 3).map((s) => s.perMinute)).toEqual([10, 1.5, 2.3]);
    expect(done.knee).toBeGreaterThanOrEqual(2.9);
  });

  it('gives the knee a ± from its repeats and the saturated rate from the shedding steps', () => {
    const steps = [
      { perMinute: 10, servedPerMinute: 10, check: { ok: true, lostTooMany: false } },
      { perMinute: 20, servedPerMinute: 14, check: { ok: false, lostTooMany: true } },
      { perMinute: 14, servedPerMinute: 13.5, check: { ok: true, lostTooMany: false } },
      { perMinute: 14, servedPerMinute: 14.5, check: { ok: true, lostTooMany: false } },
    ];
    const f = sweepFindings(steps, { kind: 'done', knee: 14, bracket: { low: 14, high: 14.1 }, reason: 'x' });
    expect(f.knee?.servedPerMinute).toBe(14);
    expect(f.knee?.plusMinus).toBeCloseTo(Math.SQRT1_2, 6);
    expect(f.saturatedPerMinute).toBe(14);
  });
});

describe('a sweep step', () => {
  const point = (metric: string, time: number, vu: number, iter: number, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      type: 'Point',
      metric,
      data: { time: new Date(time).toISOString(), value: extra.value ?? 1, tags: { scenario: 's', ...((extra.tags as object) ?? {}) }, metadata: { vu: String(vu), iter: String(iter) } },
    });

  it("pairs a request's samples by VU and iteration and counts the window's starts", () => {
    const t = Date.parse('2026-01-01T00:00:00Z');
    const lines = [
      point('qs_requests_started', t + 1000, 1, 0),
      point('qs_request_duration', t + 3000, 1, 0, { value: 2000 }),
      point('qs_request_outcome', t + 3000, 1, 0, { tags: { outcome: 'served' } }),
      point('qs_requests_started', t + 2000, 2, 0),
      point('qs_request_outcome', t + 2100, 2, 0, { tags: { outcome: 'shed' } }),
      point('qs_requests_started', t + 3000, 1, 1), // cut off: no outcome
      point('qs_requests_started', t + 500, 3, 0), // before the window
      point('qs_request_outcome', t + 900, 3, 0, { tags: { outcome: 'served' } }),
      '{"type":"Metric","metric":"qs_requests_started","data":{}}',
    ].join('\n');
    const requests = stepRequests(lines);
    expect(requests).toHaveLength(4);
    const f = requestFigures(requests, t + 1000, t + 61_000);
    expect(f).toMatchObject({ started: 3, served: 1, shed: 1, unfinished: 1, partial: 0, servedP95Seconds: 2 });
    expect(f.lostPercent).toBeCloseTo(200 / 3, 6);
    expect(f.servedPerMinute).toBeCloseTo(1, 6);
    // Given the offered rate: that rate × the share served.
    expect(requestFigures(requests, t + 1000, t + 61_000, 30).servedPerMinute).toBeCloseTo(10, 6);
  });

  it('fails the knee criteria one by one, and names each', () => {
    const base = { started: 100, served: 100, lostPercent: 0, partialPercent: 0, servedP95Seconds: 5, provider429s: 0 };
    const c = { maxLostPercent: 1, maxPartialPercent: 1, sloP95Seconds: 10 };
    expect(kneeCheck(base, c).ok).toBe(true);
    expect(kneeCheck({ ...base, lostPercent: 1.5 }, c)).toMatchObject({ ok: false, lostTooMany: true });
    expect(kneeCheck({ ...base, partialPercent: 2 }, c).why[0]).toMatch(/partial/);
    expect(kneeCheck({ ...base, servedP95Seconds: 11 }, c).why[0]).toMatch(/SLO/);
    expect(kneeCheck({ ...base, provider429s: 1 }, c).why[0]).toMatch(/429/);
  });

  it('sets the knee beside the plan and names the planned quantity that was off', () => {
    const planned = { tokensPerCall: 5000, callSeconds: 2, callsPerRequest: 5 };
    const close = planGap(27, 26.4, 0.5, planned, { tokensPerCall: 5050, callSeconds: 2.1, callsPerRequest: 5 }, 0.05);
    expect(close.line).toBe('plan 27.0/min, measured 26.4 ± 0.5/min (−2.2 %)');
    expect(close.differs).toBe(false);
    const off = planGap(36, 30, 0.4, planned, { tokensPerCall: 6000, callSeconds: 2.02, callsPerRequest: 5 }, 0.05);
    expect(off.differs).toBe(true);
    expect(off.off.map((o) => o.quantity)).toEqual(['tokens per call']);
    expect(off.why).toMatch(/tokens per call: planned 5000, measured 6000 \(\+20\.0 %\)/);
  });
});
