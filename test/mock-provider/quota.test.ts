// Window invariants, checked on random request sequences (fast-check).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FixedWindow, MINUTE_MS, RefillingBucket, SlidingWindow } from '../../mock-provider/quota.ts';
import { protobufDuration } from '../../mock-provider/gemini.ts';
import { openAiDuration } from '../../mock-provider/openai.ts';

/** Random arrivals: increasing times over a few minutes, each with a cost. */
const arrivals = fc
  .array(fc.record({ gap: fc.integer({ min: 0, max: 5_000 }), cost: fc.integer({ min: 1, max: 30 }) }), { maxLength: 300 })
  .map((steps) => {
    let t = 0;
    return steps.map((s) => {
      t += s.gap;
      return { t, cost: s.cost };
    });
  });

function admitted(window: FixedWindow | SlidingWindow | RefillingBucket, limit: number, requests: { t: number; cost: number }[]) {
  const out: { t: number; cost: number }[] = [];
  for (const r of requests) {
    const wait = window.waitMs(r.t, r.cost, limit);
    if (wait === 0) {
      window.add(r.t, r.cost);
      out.push(r);
    } else {
      expect(wait).toBeGreaterThan(0);
    }
  }
  return out;
}

describe('quota windows', () => {
  it('sliding: no 60 s interval ever holds more than the limit', () => {
    fc.assert(
      fc.property(arrivals, fc.integer({ min: 30, max: 200 }), (requests, limit) => {
        const ok = admitted(new SlidingWindow(MINUTE_MS), limit, requests);
        for (const start of ok) {
          const inWindow = ok.filter((r) => r.t >= start.t && r.t < start.t + MINUTE_MS);
          expect(inWindow.reduce((sum, r) => sum + r.cost, 0)).toBeLessThanOrEqual(limit);
        }
      }),
    );
  });

  it('fixed: no clock-aligned minute holds more than the limit', () => {
    fc.assert(
      fc.property(arrivals, fc.integer({ min: 30, max: 200 }), (requests, limit) => {
        const ok = admitted(new FixedWindow(MINUTE_MS), limit, requests);
        const perMinute = new Map<number, number>();
        for (const r of ok) perMinute.set(Math.floor(r.t / MINUTE_MS), (perMinute.get(Math.floor(r.t / MINUTE_MS)) ?? 0) + r.cost);
        for (const used of perMinute.values()) expect(used).toBeLessThanOrEqual(limit);
      }),
    );
  });

  it('bucket: admitted cost never exceeds the limit plus what refilled since the start', () => {
    fc.assert(
      fc.property(arrivals, fc.integer({ min: 30, max: 200 }), (requests, limit) => {
        const ok = admitted(new RefillingBucket(MINUTE_MS), limit, requests);
        let total = 0;
        for (const r of ok) {
          total += r.cost;
          expect(total).toBeLessThanOrEqual(limit + (r.t * limit) / MINUTE_MS + 1e-9);
        }
      }),
    );
  });
});

describe('retry delay formats', () => {
  it('protobuf duration: 0, 3, 6 or 9 fractional digits, round-trips to the ns', () => {
    expect(protobufDuration(45_837.906927)).toBe('45.837906927s');
    expect(protobufDuration(2000)).toBe('2s');
    expect(protobufDuration(1500)).toBe('1.500s');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3_600_000_000_000 }), (nanos) => {
        const text = protobufDuration(nanos / 1e6);
        expect(text).toMatch(/^\d+(\.(\d{3}|\d{6}|\d{9}))?s$/);
        expect(Math.round(Number(text.slice(0, -1)) * 1e9)).toBeCloseTo(nanos, -1);
      }),
    );
  });

  it('OpenAI reset format', () => {
    expect(openAiDuration(20)).toBe('20ms');
    expect(openAiDuration(1000)).toBe('1s');
    expect(openAiDuration(360_000)).toBe('6m0s');
    expect(openAiDuration(17_500)).toBe('17.5s');
  });
});
