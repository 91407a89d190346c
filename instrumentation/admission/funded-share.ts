// A request's reservation on one limiter's budget (its funded share), and how each of its
// calls there is paid. The request's calls of the agents it was funded for draw from the share
// at the agent's funded tokens per call and never wait for budget; a call of any other agent
// (one the tree's count did not see) is paid by the budget alone, as outside a request.
//
// Through a shared budget's door (permit-door.ts) the share holds the request's door pass
// until its start is over: its first calls took permits (the pass counts them), one of its
// calls ended, or the share was settled. endStart is the one place admission ends a start.
import type { Budget, BudgetTicket } from '../budget/budget.ts';
import type { DoorPass } from './permit-door.ts';

/** How one call is paid: from its request's share, at the agent's funded tokens per call, or by the budget alone. */
export type CallFunding =
  | { readonly kind: 'share'; readonly share: FundedShare; readonly tokens: number }
  | { readonly kind: 'budget' };

/** A call outside any request, or of an agent its request was not funded for. */
export const BUDGET_FUNDED: CallFunding = { kind: 'budget' };

export class FundedShare {
  readonly budget: Budget;
  readonly ticket: BudgetTicket;
  /** Counted tokens per call of each agent, as funded (what a call of that agent is charged up front). */
  readonly tokensPerCall: ReadonlyMap<string, number>;
  /** Counted tokens the request's calls on this limiter really used so far. */
  spent = 0;
  /** Tokens its calls drew from the share when they started (counted input alone: each call's own prompt). */
  drawn = 0;
  /** Tokens its calls took from the budget beyond the share (calls larger than funded): already charged, so settled apart. */
  toppedUp = 0;
  /** Through a shared budget's door: told as the request's calls take permits, and when its start is over. */
  readonly #starting: DoorPass | undefined;

  constructor(budget: Budget, ticket: BudgetTicket, tokensPerCall: ReadonlyMap<string, number>, starting?: DoorPass) {
    this.budget = budget;
    this.ticket = ticket;
    this.tokensPerCall = tokensPerCall;
    this.#starting = starting;
  }

  /** How a call of `agent` is paid: from this share when the request was funded for that agent. */
  fundingOf(agent: string): CallFunding {
    const tokens = this.tokensPerCall.get(agent);
    return tokens === undefined ? BUDGET_FUNDED : { kind: 'share', share: this, tokens };
  }

  /** One of the request's calls took a permit. */
  callStarted(): void {
    this.#starting?.callStarted();
  }

  /** The request's start on this limiter is over (a call of it ended, it was shed, or it ended): the door opens. */
  endStart(): void {
    this.#starting?.leave();
  }

  /** Give back what the request's calls did not use, take an overrun as debt (a share never used gives it all back). */
  settle(): void {
    this.endStart();
    this.budget.reconcile(this.ticket, Math.max(0, this.spent - this.toppedUp));
  }
}
