// TokenBudget admissions counted in the rolling window when used (windowAtUse): a whole
// request reserved at the door holds its tokens against the window as pending, and each call
// moves its share into the window when it starts, as the provider counts it. The window plus
// what is pending never exceeds one window's tokens; what a request never used is released.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BudgetTicket, TokenBudget } from '../../instrumentation/index.ts';
import { ManualClock } from '../../instrumentation/testing.ts';

describe('TokenBudget windowAtUse', () => {
  it('holds a request against the window until its calls are counted, then releases what it never used', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(100, { clock, initialLevel: 100 });
    const request = budget.tryReserve(60, { windowAtUse: true }) as BudgetTicket;
    expect(request).toBeDefined();
    expect(budget.windowTokens).toBe(0);
    budget.chargeWindow(request, 50);
    expect(budget.windowTokens).toBe(50);
    // The request used 50 of its 60: the 10 never used leave the hold.
    budget.reconcile(request, 50);
    expect(budget.windowTokens).toBe(50);
    // Window 50 + 60 > 100: a request of 60 waits; one of 40 enters, and holds the window until it is used.
    expect(budget.tryReserve(60, { windowAtUse: true })).toBeUndefined();
    const second = budget.tryReserve(40, { windowAtUse: true }) as BudgetTicket;
    expect(second).toBeDefined();
    await clock.advance(60_200); // the bucket refills; the first request's 50 leave the window
    expect(budget.windowTokens).toBe(0);
    // Pending 40 + a call of 70 counted at once would not fit; 60 does.
    expect(budget.tryReserve(70)).toBeUndefined();
    expect(budget.tryReserve(60)).toBeDefined();
  });

  it('never lets the window plus its pending holds exceed one window (fast-check over arrivals, calls and settles)', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), tokens: fc.integer({ min: 1, max: 400 }) }),
      fc.record({ kind: fc.constant('charge' as const), pick: fc.nat(), share: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 30_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 80 }), async (ops) => {
        const clock = new ManualClock();
        const limit = 1_000;
        const budget = new TokenBudget(limit, { clock });
        const open: { ticket: BudgetTicket; left: number; used: number }[] = [];
        for (const o of ops) {
          if (o.kind === 'reserve') {
            const ticket = budget.tryReserve(o.tokens, { windowAtUse: true });
            if (ticket) open.push({ ticket, left: o.tokens, used: 0 });
          } else if (o.kind === 'charge' && open.length > 0) {
            const entry = open[o.pick % open.length];
            const n = Math.floor(entry.left * o.share);
            budget.chargeWindow(entry.ticket, n);
            entry.left -= n;
            entry.used += n;
          } else if (o.kind === 'settle' && open.length > 0) {
            const [entry] = open.splice(o.pick % open.length, 1);
            budget.reconcile(entry.ticket, entry.used);
          } else if (o.kind === 'advance') {
            await clock.advance(o.ms);
          }
          const pending = open.reduce((sum, e) => sum + e.left, 0);
          // Nobody used more than reserved: no debt, so the window and the holds fit one window.
          expect((budget.windowTokens ?? 0) + pending).toBeLessThanOrEqual(limit + 1e-6);
        }
      }),
      { numRuns: 200 },
    );
  });
  it('holds a part of a request from when it falls due: the window takes what leaves before then, never more than the limit (fast-check)', async () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('reserve' as const),
        now: fc.integer({ min: 1, max: 300 }),
        later: fc.integer({ min: 0, max: 300 }),
        afterMs: fc.integer({ min: 0, max: 20_000 }),
      }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const clock = new ManualClock();
        const limit = 1_000;
        const budget = new TokenBudget(limit, { clock });
        const check = () => expect(budget.windowTokens ?? 0).toBeLessThanOrEqual(limit + 1e-6);
        for (const o of ops) {
          if (o.kind === 'advance') {
            await clock.advance(o.ms);
            check();
            continue;
          }
          const useSchedule = [
            { afterMs: 0, tokens: o.now },
            { afterMs: o.afterMs, tokens: o.later },
          ];
          const ticket = budget.tryReserve(o.now + o.later, { windowAtUse: true, useSchedule });
          if (!ticket) continue;
          // Each part is used when it falls due (a call that starts early waits for room: windowRoomInMs).
          budget.chargeWindow(ticket, o.now);
          check();
          clock.setTimeout(() => {
            expect(budget.windowRoomInMs(ticket, o.later)).toBe(0);
            budget.chargeWindow(ticket, o.later);
            check();
            budget.reconcile(ticket, o.now + o.later);
          }, o.afterMs);
        }
        await clock.advance(30_000);
        check();
      }),
      { numRuns: 200 },
    );
  });
});
