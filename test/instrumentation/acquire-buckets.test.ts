// Acquire-time buckets derived from maxWait: today's shape below it, maxWait itself, and one
// bound just above it, so no quantile can interpolate far past maxWait.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ACQUIRE_SECONDS_BUCKETS, acquireSecondsBuckets, MAX_WAIT_SECONDS_LIMIT } from '../../instrumentation/metrics/definitions.ts';

const maxWait = fc.double({ min: 0.001, max: MAX_WAIT_SECONDS_LIMIT, noNaN: true });

describe('acquireSecondsBuckets', () => {
  it('for the worked example (20 s) keeps the default bounds up to 20 and ends at 21', () => {
    expect(acquireSecondsBuckets(20)).toEqual([...ACQUIRE_SECONDS_BUCKETS.filter((b) => b < 20), 20, 21]);
    expect(acquireSecondsBuckets(5)).toEqual([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 5, 5.25]);
  });

  it('is strictly increasing, holds maxWait, and its last bound is at most 5 % above maxWait', () => {
    fc.assert(
      fc.property(maxWait, (m) => {
        const buckets = acquireSecondsBuckets(m);
        for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThan(buckets[i - 1]);
        expect(buckets).toContain(m);
        const last = buckets[buckets.length - 1];
        expect(last).toBeGreaterThan(m);
        // 5 % above, rounded to 6 significant digits.
        expect(last).toBeLessThanOrEqual(m * 1.05 * (1 + 1e-5));
      }),
    );
  });

  it('below maxWait it is the default shape, extended by doubling past 60 s, with no gap wider than doubling', () => {
    fc.assert(
      fc.property(maxWait, (m) => {
        const below = acquireSecondsBuckets(m).filter((b) => b < m);
        const defaults = ACQUIRE_SECONDS_BUCKETS.filter((b) => b < m);
        expect(below.slice(0, defaults.length)).toEqual(defaults);
        for (let i = 1; i < below.length; i++) expect(below[i]).toBeLessThanOrEqual(below[i - 1] * 2.5);
        if (below.length > 0) expect(m).toBeLessThanOrEqual(below[below.length - 1] * 2);
      }),
    );
  });

  it('refuses a maxWait outside its bounds', () => {
    for (const bad of [0, -1, 0.0001, MAX_WAIT_SECONDS_LIMIT + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => acquireSecondsBuckets(bad)).toThrow(RangeError);
    }
  });
});
