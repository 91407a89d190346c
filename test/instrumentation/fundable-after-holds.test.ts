// When a request can be funded while the window's room is held for calls not yet started: each
// hold is counted when it falls due and leaves a window later. A door told whole windows shed
// the requests a deep tree's window would have taken within seconds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BudgetTicket } from '../../instrumentation/budget/budget.ts';
import { TokenBudget } from '../../instrumentation/budget/token-budget.ts';
import { fitsAfterHoldsInMs, type Hold } from '../../instrumentation/budget/window-rule.ts';
import { flushMicrotasks, ManualClock } from '../../instrumentation/clock.ts';

type Leaving = [number, number][];
type Part = { afterMs: number; tokens: number };
const W = 100;

/** The most the window holds from `at` on, were `parts` admitted at `at` and each hold counted when due (leaving W later if due by `at`). */
function brutePeak(at: number, leaving: Leaving, holds: readonly Hold[], parts: readonly Part[]): number {
  const end = Math.max(at, ...leaving.map(([t]) => t), ...holds.map((h) => h.dueAt + W), ...parts.map((p) => at + p.afterMs)) + 1;
  let peak = Number.NEGATIVE_INFINITY;
  for (let t = at; t <= end; t++) {
    let sum = 0;
    for (const [leaveAt, tokens] of leaving) if (leaveAt > t) sum += tokens;
    // Due by the admission: counted, and gone a window after. Due later: it stays in the outlook.
    for (const hold of holds) if (hold.dueAt <= at ? hold.dueAt + W > t : hold.dueAt <= t) sum += hold.tokens;
    for (const part of parts) if (at + part.afterMs <= t) sum += part.tokens;
    peak = Math.max(peak, sum);
  }
  return peak;
}

const leavingArb = fc
  .array(fc.tuple(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 1, max: 300 })), { maxLength: 6 })
  .map((slots) => slots.sort(([a], [b]) => a - b) as Leaving);
const holdsArb = fc.array(fc.record({ dueAt: fc.integer({ min: 0, max: 150 }), tokens: fc.integer({ min: 1, max: 300 }) }), { maxLength: 5 });
const partsArb = fc
  .array(fc.record({ afterMs: fc.integer({ min: 0, max: 80 }), tokens: fc.integer({ min: 1, max: 300 }) }), { minLength: 1, maxLength: 3 })
  .map(([first, ...rest]) => [{ ...first, afterMs: 0 }, ...rest]);

describe('fitsAfterHoldsInMs', () => {
  it('property: the earliest whole ms at which the peak fits, holds counted when due and gone a window later', () => {
    fc.assert(
      fc.property(leavingArb, holdsArb, partsArb, fc.integer({ min: 0, max: 50 }), fc.integer({ min: 300, max: 1_500 }), (leaving, holds, parts, now, limit) => {
        const total = parts.reduce((sum, p) => sum + p.tokens, 0);
        const end = Math.max(now, ...leaving.map(([t]) => t), ...holds.map((h) => h.dueAt + W)) + 1;
        let earliest: number | undefined;
        for (let t = now; t <= end && earliest === undefined; t++) if (brutePeak(t, leaving, holds, parts) <= limit) earliest = t - now;
        expect(fitsAfterHoldsInMs(now, leaving, holds, parts, limit, W)).toBe(total > limit ? undefined : earliest);
      }),
    );
  });
});

describe('a budget whose room is held for later calls', () => {
  it('tells a request the time its holds age out, not whole windows', () => {
    const clock = new ManualClock(0);
    const budget = new TokenBudget(1_000, { clock, countedTokens: 'input' });
    // Two requests: 100 tokens now, 300 held for a call 30 s in.
    const schedule = [
      { afterMs: 0, tokens: 100 },
      { afterMs: 30_000, tokens: 300 },
    ];
    for (let i = 0; i < 2; i++) expect(budget.tryReserve(400, { windowAtUse: true, useSchedule: schedule })).toBeDefined();
    // 200 counted (gone at 60 s) and 600 held from 30 s (counted then, gone at 90 s): the next
    // request's 100 now and 300 at +30 s fit at 30 s (900 until 60 s, then 1,000). With the
    // holds taken to stay it was told 60 s; with more held than the window's room, whole windows.
    expect(budget.fundableInMs(400, schedule)).toBe(30_000);
  });
});

describe('a request queued behind others', () => {
  it('property: is admitted by the time it is told, each request ahead taken in its turn (with nothing new arriving)', async () => {
    // Requests of one tree: the same schedule, its parts spread over 20 s (a deep chain's calls);
    // times in whole slots of the window (100 ms), which the estimate does not round to.
    const slotsArb = (max: number) => fc.integer({ min: 0, max }).map((slots) => slots * 100);
    const scheduleArb = fc
      .array(fc.record({ afterMs: slotsArb(200), tokens: fc.integer({ min: 10, max: 200 }) }), { minLength: 1, maxLength: 5 })
      .map(([first, ...rest]) => [{ ...first, afterMs: 0 }, ...rest]);
    await fc.assert(
      fc.asyncProperty(scheduleArb, fc.integer({ min: 1, max: 3 }), slotsArb(200), async (schedule, ahead, gapMs) => {
        const clock = new ManualClock(0);
        const budget = new TokenBudget(1_000, { clock, countedTokens: 'input' });
        const tokens = schedule.reduce((sum, part) => sum + part.tokens, 0);
        const options = { windowAtUse: true, useSchedule: schedule };
        // Each admitted request's calls count their parts in the window when due.
        const calls = (ticket: BudgetTicket) => {
          for (const part of schedule) clock.setTimeout(() => budget.chargeWindow(ticket, part.tokens), part.afterMs);
        };
        // The window fills: the first requests admitted `gapMs` apart, then at once while they fit; more queue.
        for (let i = 0, ticket = budget.tryReserve(tokens, options); ticket; i++, ticket = budget.tryReserve(tokens, options)) {
          calls(ticket);
          if (i < 4) await clock.advance(gapMs);
        }
        const waits = { deadline: 10_000_000, ...options };
        for (let i = 0; i < ahead; i++) void budget.reserve(tokens, waits).then(calls);
        await flushMicrotasks();
        const told = budget.fundableInMs(tokens, schedule);
        let admitted = false;
        void budget.reserve(tokens, waits).then(() => {
          admitted = true;
        });
        // Admitted by the time it was told, within the window's slots (100 ms, one per request
        // admitted): a request told it makes its door deadline is not left waiting past it.
        await clock.advance(told + 100 * (ahead + 1));
        expect(admitted).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});
