// The window rule's TS module on its own: the outlook's peak and earliest fitting time against
// a brute force over every whole ms, and the helpers the budgets build on it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { drawFromHolds, excessNow, fitsNow, type Hold, heldTokens, leavesInMs, partsOf, slotsAfter, WindowOutlook } from '../../instrumentation/budget/window-rule.ts';

type Leaving = [number, number][];
type Part = { afterMs: number; tokens: number };

/** What the window holds at time t were `parts` admitted at `at`: slots not left, holds due by t (overdue from `at`), parts due by t. */
function heldAt(t: number, at: number, leaving: Leaving, holds: readonly Hold[], parts: readonly Part[]): number {
  let sum = 0;
  for (const [leaveAt, tokens] of leaving) if (leaveAt > t) sum += tokens;
  for (const hold of holds) if (hold.dueAt <= t) sum += hold.tokens;
  for (const part of parts) if (at + part.afterMs <= t) sum += part.tokens;
  return sum;
}

/** The most the window holds at any whole ms from `at` until everything has fallen due and left. */
function brutePeak(at: number, leaving: Leaving, holds: readonly Hold[], parts: readonly Part[]): number {
  const end = Math.max(at, ...leaving.map(([t]) => t), ...holds.map((h) => h.dueAt), ...parts.map((p) => at + p.afterMs)) + 1;
  let peak = Number.NEGATIVE_INFINITY;
  for (let t = at; t <= end; t++) peak = Math.max(peak, heldAt(t, at, leaving, holds, parts));
  return peak;
}

const leavingArb = fc
  .array(fc.tuple(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 1, max: 300 })), { maxLength: 8 })
  .map((slots) => slots.sort(([a], [b]) => a - b) as Leaving);
const holdsArb = fc.array(fc.record({ dueAt: fc.integer({ min: -20, max: 150 }), tokens: fc.integer({ min: 1, max: 200 }) }), { maxLength: 4 });
const partsArb = fc.array(fc.record({ afterMs: fc.integer({ min: 0, max: 80 }), tokens: fc.integer({ min: 1, max: 300 }) }), { minLength: 1, maxLength: 3 });

describe('WindowOutlook', () => {
  it('property: the peak is the most the window holds at any later time', () => {
    fc.assert(
      fc.property(leavingArb, holdsArb, partsArb, fc.integer({ min: 0, max: 100 }), (leaving, holds, parts, at) => {
        expect(new WindowOutlook(leaving, holds).peak(at, parts)).toBe(brutePeak(at, leaving, holds, parts));
      }),
    );
  });

  // With a part due at admission (a request's first calls), as partsOf gives a whole request.
  // Were every part due later, a window over the limit by its own slots answers undefined even
  // where admitting when a slot leaves would fit: the times tried are when a slot leaves less
  // each part's offset (the caller then looks again after a slot).
  it('property: fitsInMs is the earliest whole ms at which the peak fits the limit; undefined when no slot leaving makes room', () => {
    const firstAtZero = partsArb.map(([first, ...rest]) => [{ ...first, afterMs: 0 }, ...rest]);
    fc.assert(
      fc.property(leavingArb, holdsArb, firstAtZero, fc.integer({ min: 0, max: 50 }), fc.integer({ min: 100, max: 1_500 }), (leaving, holds, parts, now, limit) => {
        const end = Math.max(now, ...leaving.map(([t]) => t)) + 1;
        let earliest: number | undefined;
        for (let t = now; t <= end && earliest === undefined; t++) if (brutePeak(t, leaving, holds, parts) <= limit) earliest = t - now;
        expect(new WindowOutlook(leaving, holds).fitsInMs(now, parts, limit)).toBe(earliest);
      }),
    );
  });

  it('a later part lets the window take tokens that leave before it falls due', () => {
    // 600 leave at 50; a part of 500 due at 60 fits beside them, the same 500 now does not.
    const outlook = new WindowOutlook([[50, 600]], []);
    expect(outlook.peak(0, [{ afterMs: 60, tokens: 500 }])).toBe(600);
    expect(outlook.peak(0, [{ afterMs: 0, tokens: 500 }])).toBe(1_100);
    expect(outlook.fitsInMs(0, [{ afterMs: 0, tokens: 500 }], 1_000)).toBe(50);
    // A hold due later counts from its time on, and is taken to stay.
    expect(new WindowOutlook([], [{ dueAt: 30, tokens: 700 }]).fitsInMs(0, [{ afterMs: 0, tokens: 400 }], 1_000)).toBeUndefined();
  });
});

describe('the window rule', () => {
  it('excessNow: everything counted now; more than the limit fits only an empty window with no holds', () => {
    expect(excessNow(300, 200, 400, 1_000)).toBe(-100);
    expect(excessNow(0, 0, 1_500, 1_000)).toBe(0);
    expect(excessNow(0, 1, 1_500, 1_000)).toBe(1);
  });

  it('fitsNow: a reservation counted at once needs room for all of it now; one with parts needs room for each from its time', () => {
    const window = { counted: 600, held: 0, outlook: () => new WindowOutlook([[50, 600]], []) };
    expect(fitsNow(window, 0, 500, undefined, 1_000)).toBe(false);
    expect(fitsNow(window, 0, 500, [{ afterMs: 60, tokens: 500 }], 1_000)).toBe(true);
    expect(fitsNow(window, 0, 500, [{ afterMs: 10, tokens: 500 }], 1_000)).toBe(false);
    // More than the limit never fits through the outlook.
    expect(fitsNow(window, 0, 1_200, [{ afterMs: 60, tokens: 1_200 }], 1_000)).toBe(false);
  });

  it('leavesInMs: until enough has left, or undefined', () => {
    const leaving: Leaving = [
      [10, 100],
      [20, 200],
    ];
    expect(leavesInMs(leaving, 5, 100)).toBe(5);
    expect(leavesInMs(leaving, 5, 250)).toBe(15);
    expect(leavesInMs(leaving, 5, 301)).toBeUndefined();
  });

  it('slotsAfter rounds the ms, then floors to whole slots', () => {
    expect([slotsAfter(0, 600), slotsAfter(599.4, 600), slotsAfter(599.6, 600), slotsAfter(1_250, 600)]).toEqual([0, 0, 1, 2]);
  });

  it('property: partsOf scales a schedule to the tokens, and all at once without one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.array(fc.record({ afterMs: fc.integer({ min: -5, max: 100 }), tokens: fc.integer({ min: 0, max: 50 }) }), { maxLength: 4 }), (tokens, schedule) => {
        const parts = partsOf(tokens, true, schedule);
        expect(parts.reduce((sum, part) => sum + part.tokens, 0)).toBeCloseTo(tokens, 6);
        for (const part of parts) expect(part.afterMs).toBeGreaterThanOrEqual(0);
        expect(partsOf(tokens, false, schedule)).toEqual([{ afterMs: 0, tokens }]);
      }),
    );
  });

  it('drawFromHolds takes from the earliest holds and drops the ones used up', () => {
    const holds: Hold[] = [
      { dueAt: 0, tokens: 100 },
      { dueAt: 10, tokens: 50 },
    ];
    const drawn = drawFromHolds(holds, 120);
    expect(drawn.map((d) => d.taken)).toEqual([100, 20]);
    expect(holds).toEqual([{ dueAt: 10, tokens: 30 }]);
    expect(heldTokens(holds)).toBe(30);
  });
});
