// TokenBudget admissions counted in the rolling window when used (windowAtUse): a whole
// request reserved at the door holds its tokens against the window as pending, and each call
// moves its share into the window when it starts, as the provider counts it. The window plus
// what is pending never exceeds one window's tokens; what a request never used is released.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BudgetTicket, TokenBudget } from '../../instrumentation/index.ts';
import { ManualClock } from '../../instrumentation/testing.ts';

describe('TokenBudget windowAtUse', () => {
  it('holds a request against the window until its calls are counted, then releases what it never used', () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(100, { clock });
    const request = budget.tryReserve(60, { windowAtUse: true }) as BudgetTicket;
    expect(request).toBeDefined();
    expect(budget.windowTokens).toBe(0);
    // 60 pending + 50 > 100: a second request does not fit, even though the window is empty.
    expect(budget.tryReserve(50, { windowAtUse: true })).toBeUndefined();
    budget.chargeWindow(request, 20);
    expect(budget.windowTokens).toBe(20);
    // The request used 20 of its 60: the 40 never used leave the hold.
    budget.reconcile(request, 20);
    expect(budget.windowTokens).toBe(20);
    expect(budget.fundableInMs(50)).toBe(0);
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
});
