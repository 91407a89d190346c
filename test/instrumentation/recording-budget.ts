// A token budget that records every reservation taken from it (a request's share at the door
// and any top-up): its tokens and when it was granted.
import type { BudgetTicket, ReserveOptions } from '../../instrumentation/budget/budget.ts';
import { TokenBudget } from '../../instrumentation/budget/token-budget.ts';

export class RecordingBudget extends TokenBudget {
  readonly taken: number[] = [];
  /** performance.now() at each grant, in the order of `taken`. */
  readonly grantedAt: number[] = [];
  #inReserve = false;

  override tryReserve(tokens: number, options?: Pick<ReserveOptions, 'windowAtUse' | 'useSchedule'>): BudgetTicket | undefined {
    const ticket = super.tryReserve(tokens, options);
    if (ticket && !this.#inReserve) this.#record(tokens);
    return ticket;
  }

  override async reserve(tokens: number, options?: ReserveOptions): Promise<BudgetTicket> {
    this.#inReserve = true;
    let waited: Promise<BudgetTicket>;
    try {
      waited = super.reserve(tokens, options);
    } finally {
      this.#inReserve = false;
    }
    const ticket = await waited;
    this.#record(tokens);
    return ticket;
  }

  #record(tokens: number): void {
    this.taken.push(tokens);
    this.grantedAt.push(performance.now());
  }
}
