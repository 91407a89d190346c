// TokenBudget's moving parts, on fake time: the window limit an adaptive limit sets, the pause
// a provider 429 asks for, and tokens charged from elsewhere (a shared budget's fallback).
import { describe, expect, it } from 'vitest';
import { BudgetRequestTooLarge } from '../../instrumentation/errors.ts';
import { TokenBudget } from '../../instrumentation/index.ts';
import { ManualClock } from '../../instrumentation/testing.ts';

const WINDOW = 60_000;

describe('TokenBudget: window limit, pause, charge', () => {
  it('a lowered window limit admits that much per window; above it, a reservation waits for an empty window; the capacity still bounds', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(10_000, { clock, windowMs: WINDOW });
    budget.setWindowLimit(4_000);
    expect(budget.windowLimit).toBe(4_000);
    expect(budget.tryReserve(3_000)).toBeDefined();
    expect(budget.tryReserve(2_000)).toBeUndefined();
    let big = false;
    const waiting = budget.reserve(6_000).then(() => {
      big = true;
    });
    await clock.advance(WINDOW - 1_000);
    expect(big).toBe(false);
    await clock.advance(1_200); // the first admission has left the window: 6,000 goes alone
    await waiting;
    expect(big).toBe(true);
    expect(() => budget.tryReserve(10_001)).toThrow(BudgetRequestTooLarge);
    budget.setWindowLimit(50_000);
    expect(budget.windowLimit).toBe(10_000); // never above the capacity
    expect(() => budget.setWindowLimit(0)).toThrow(/window limit/);
  });

  it('pauseFor admits nothing until the pause ends, then the queue in order', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(10_000, { clock, windowMs: WINDOW });
    budget.pauseFor(2_000);
    expect(budget.tryReserve(1)).toBeUndefined();
    const order: number[] = [];
    const a = budget.reserve(100).then(() => order.push(1));
    const b = budget.reserve(100).then(() => order.push(2));
    await clock.advance(1_999);
    expect(order).toEqual([]);
    await clock.advance(1);
    await Promise.all([a, b]);
    expect(order).toEqual([1, 2]);
    budget.pauseFor(Number.NaN); // ignored
    expect(budget.tryReserve(1)).toBeDefined();
  });

  it('charge counts tokens admitted elsewhere in the window without waiting; its ticket settles them', async () => {
    const clock = new ManualClock();
    const budget = new TokenBudget(10_000, { clock, windowMs: WINDOW });
    const ticket = budget.charge(12_000); // more than the budget: counted whole, the bucket empty, not below
    expect(budget.windowTokens).toBe(12_000);
    expect(budget.available).toBe(0);
    expect(budget.tryReserve(1)).toBeUndefined();
    budget.reconcile(ticket, 2_000); // it used 2,000
    expect(budget.windowTokens).toBe(2_000);
    expect(budget.tryReserve(5_000)).toBeDefined();
    expect(() => budget.charge(-1)).toThrow(/charged tokens/);
  });
});
