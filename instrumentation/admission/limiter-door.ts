// One limiter's door at request admission: how a request is funded on that limiter. Its kind
// is chosen once per limiter, from its budget (doorKindOf):
// - local: a budget this replica alone draws from (TokenBudget, a static share): the request
//   waits at the budget, in its arrival order;
// - shared: a budget the fleet shares (RedisTokenBudget): the request first passes the
//   PermitDoor (permit-door.ts: only once this replica can start its first calls), then waits
//   at the budget;
// - a limiter without a budget has no door: it admits each call alone. So is every limiter
//   of a tree whose calls cannot be counted.
//
// Whatever its kind, a door goes through these states (cold-start.ts, call-cost.ts):
//   cold     its limiter can tell no call's cost (none learned, none given);
//   learning one request's turn: its calls there are admitted one by one and teach the cost;
//            the other requests wait at the door (a lane shed first goes call by call);
//   warm     a cost is known: every request is funded whole from it.
//   cold -> learning -> warm when the turn taught a cost; -> cold when it ended without one,
//   and the next waiter learns. A limiter given expectedTokensPerCall starts warm. Warm is
//   final: a learned cost is never forgotten.
import type { Budget, BudgetTicket, UsePart } from '../budget/budget.ts';
import type { Clock } from '../clock.ts';
import { ColdStart, type ColdStartTurn } from './cold-start.ts';
import { countsInput } from '../counted-tokens.ts';
import { DEFAULT_REQUEST_DEADLINE_MS, DEFAULT_UNAVAILABLE_RETRY_MS, DEFAULT_WINDOW_MS } from '../defaults.ts';
import { CentralBudgetUnavailable, DeadlineExceeded, RequestShed, type ShedReason } from '../errors.ts';
import { FundedShare } from './funded-share.ts';
import { type DoorPass, PermitDoor } from './permit-door.ts';
import type { RateLimitedLlm } from '../rate-limited-llm.ts';
import type { RequestDeadlines } from './request-deadlines.ts';

/** How a request is funded on a limiter with a budget. */
export type DoorKind = 'local' | 'shared';

/**
 * Whether a budget is shared by the fleet: its room goes to whichever replica asks first, so
 * a request asks it only once this replica can start it.
 */
export function isSharedBudget(budget: Budget): boolean {
  return budget.sharing.kind === 'central';
}

/** A limiter's door kind, from its budget. */
export function doorKindOf(budget: Budget): DoorKind {
  return isSharedBudget(budget) ? 'shared' : 'local';
}

/** Requests of lanes not shed first that wait at the doors of one RequestAdmission now. */
export class DoorQueue {
  waiting = 0;
}

/** What funding a request on each limiter knows of its door. */
export interface FundingDoor {
  readonly deadlines: RequestDeadlines;
  readonly shedFirst: boolean;
  readonly signal: AbortSignal | undefined;
  /** The request learns a cost on these limiters: each ends its turn. */
  readonly learning: (() => void)[];
  /** Counted tokens of the request's own message: no call is funded at less. */
  readonly messageTokens: number | undefined;
}

export class LimiterDoor {
  readonly kind: DoorKind;
  readonly #llm: RateLimitedLlm;
  readonly #budget: Budget;
  readonly #clock: Clock;
  readonly #queue: DoorQueue;
  /** One request at a time learns the limiter's cost while it knows none. */
  readonly #cold: ColdStart;
  /** The way to a shared budget, one request at a time (shared doors only). */
  readonly #permitDoor: PermitDoor | undefined;

  constructor(llm: RateLimitedLlm, budget: Budget, clock: Clock, queue: DoorQueue) {
    this.#llm = llm;
    this.#budget = budget;
    this.#clock = clock;
    this.#queue = queue;
    this.kind = doorKindOf(budget);
    this.#cold = new ColdStart(clock, () => llm.callCost.known, () => llm.callCost.observedCalls);
    this.#permitDoor = this.kind === 'shared' ? new PermitDoor(llm.semaphore, clock) : undefined;
  }

  /** Reserve a request's tokens on this limiter, or shed it; undefined when its calls here are admitted one by one. */
  async fund(calls: ReadonlyMap<string, number>, door: FundingDoor): Promise<FundedShare | undefined> {
    const llm = this.#llm;
    const budget = this.#budget;
    // While a learner's turn runs, what its first calls taught is not the tree's cost: a writer
    // not seen yet was funded at the planner's, and its request ended partial waiting for a
    // top-up. The others wait for the turn's end (cold-start.ts).
    const learned = this.#cold.learning ? undefined : costsOf(llm, calls, door.messageTokens);
    const tokensPerCall = learned ?? (await this.#coldStart(calls, door));
    if (!tokensPerCall) {
      // Calls admitted one by one from a shared budget that refuses them all: shed whole instead.
      const refused = await (budget.sharing.kind === 'central' ? budget.sharing.refusal() : undefined);
      if (refused) throw new RequestShed(llm.name, 'budget_unavailable', refused.retryAfterMs ?? DEFAULT_UNAVAILABLE_RETRY_MS);
      return undefined;
    }
    const { tokens, useSchedule } = demandOf(llm, calls, tokensPerCall);
    const now = this.#clock.now();
    const shed = (reason: ShedReason, retryAfterMs: number) => new RequestShed(llm.name, reason, retryAfterMs);
    if (tokens > budget.capacity) throw shed('too_large', budget.windowMs ?? DEFAULT_WINDOW_MS);
    const fundableInMs = budget.funding?.fundableInMs(tokens, useSchedule);
    if (door.shedFirst && this.#queue.waiting > 0) throw shed('lane', fundableInMs ?? DEFAULT_REQUEST_DEADLINE_MS);
    // A lane shed first goes only if it can be funded now; the others if in time for their door deadline.
    if (fundableInMs !== undefined && (door.shedFirst ? fundableInMs > 0 : now + fundableInMs > door.deadlines.door)) {
      throw shed(door.shedFirst ? 'lane' : 'deadline', fundableInMs);
    }
    let ticket: BudgetTicket;
    let starting: DoorPass | undefined;
    if (door.shedFirst) {
      const now = budget.tryReserve(tokens, { windowAtUse: true, useSchedule });
      if (!now) throw shed('lane', fundableInMs ?? DEFAULT_REQUEST_DEADLINE_MS);
      ticket = now;
    } else {
      this.#queue.waiting++;
      try {
        const wait = { deadline: door.deadlines.door, signal: door.signal, priority: door.deadlines.arrivedAt, windowAtUse: true, useSchedule };
        const reserve = () => budget.reserve(tokens, wait);
        if (this.#permitDoor) {
          // A shared budget is asked only once this replica can start the request's first calls.
          const through = await this.#permitDoor.reserveThrough(firstCallsOf(llm, calls), wait, reserve);
          starting = through.pass;
          ticket = through.value;
        } else {
          ticket = await reserve();
        }
      } catch (error) {
        if (error instanceof DeadlineExceeded) throw shed('deadline', budget.funding?.fundableInMs(tokens, useSchedule) ?? DEFAULT_REQUEST_DEADLINE_MS);
        // Nothing can be funded while the shared budget fails closed: turned away whole, like any shed request.
        if (error instanceof CentralBudgetUnavailable) throw shed('budget_unavailable', error.retryAfterMs ?? DEFAULT_UNAVAILABLE_RETRY_MS);
        throw error;
      } finally {
        this.#queue.waiting--;
      }
    }
    return new FundedShare(budget, ticket, tokensPerCall, starting);
  }

  /**
   * Ms until a request of `calls` could be funded here (0: now, or while the limiter knows no
   * cost, or when its budget cannot tell). A request waits at its slowest door first.
   */
  expectedWaitMs(calls: ReadonlyMap<string, number>, messageTokens: number | undefined): number {
    const tokensPerCall = costsOf(this.#llm, calls, messageTokens);
    if (!tokensPerCall) return 0;
    const { tokens, useSchedule } = demandOf(this.#llm, calls, tokensPerCall);
    if (tokens > this.#budget.capacity) return 0;
    return this.#budget.funding?.fundableInMs(tokens, useSchedule) ?? 0;
  }

  /**
   * While the limiter knows no cost: learn on this request (undefined: its calls here are
   * admitted one by one), or wait at the door until a learner's request taught the costs. A
   * request already learning on another limiter does not wait (two learners never wait on
   * each other); it learns here too when nobody does.
   */
  async #coldStart(calls: ReadonlyMap<string, number>, door: FundingDoor): Promise<Map<string, number> | undefined> {
    const cold = this.#cold;
    if (door.learning.length > 0) {
      const done = cold.tryLearn(door.deadlines.chainMs);
      if (done) door.learning.push(done);
      return undefined;
    }
    // A lane shed first never waits at the door: while another request learns, its calls are admitted one by one too.
    if (door.shedFirst && cold.learning) return undefined;
    let turn: ColdStartTurn;
    this.#queue.waiting++;
    try {
      turn = await cold.enter({
        deadline: door.shedFirst ? undefined : door.deadlines.door,
        signal: door.signal,
        priority: door.deadlines.arrivedAt,
        turnMs: door.deadlines.chainMs,
      });
    } catch (error) {
      // Shed while another request learns: it may ask again when that learner's turn ends at the latest.
      if (error instanceof DeadlineExceeded) throw new RequestShed(this.#llm.name, 'deadline', Math.max(1, cold.turnLeftMs()));
      throw error;
    } finally {
      this.#queue.waiting--;
    }
    if (turn.kind === 'learn') {
      door.learning.push(turn.done);
      return undefined;
    }
    return costsOf(this.#llm, calls, door.messageTokens);
  }
}

/**
 * Funded tokens per call of each agent (call-cost.ts: learned beyond the request's message,
 * plus this request's where the limiter counts input); undefined while the limiter knows none.
 * A limiter that counts input tokens alone funds each agent's mean: every call's cost is its
 * own prompt, known when it starts, and is drawn from the request's whole share
 * (call-admission.ts), so a request is funded at what it uses on average, as the plan counts
 * it. Counting output too, a call's cost is known only once it reported: the most recent
 * calls used. Agents not seen yet share what the prior's total leaves (call-cost.ts fundRequest).
 */
function costsOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, messageTokens: number | undefined): Map<string, number> | undefined {
  if (!llm.callCost.known) return undefined;
  const message = messageTokens !== undefined && countsInput(llm.countedTokens) ? messageTokens : 0;
  return llm.callCost.fundRequest(calls, message, llm.countedTokens === 'input' ? 'mean' : 'most');
}

/** A request's tokens on one limiter, rounded up to whole tokens, and when they are used. */
function demandOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, tokensPerCall: ReadonlyMap<string, number>): { tokens: number; useSchedule: UsePart[] } {
  let tokens = 0;
  for (const [agent, n] of calls) tokens += n * (tokensPerCall.get(agent) ?? 0);
  return { tokens: Math.ceil(tokens), useSchedule: scheduleOf(llm, calls, tokensPerCall) };
}

/** Calls a request starts at once on one limiter: its agents' whose calls start before a call could end (unknown: at once). */
function firstCallsOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>): number {
  const halfCallMs = (llm.callCost.meanCallMs ?? 0) / 2;
  let first = 0;
  for (const [agent, n] of calls) if ((llm.callCost.startOffsetMs(agent) ?? 0) <= halfCallMs) first += n;
  return first;
}

/**
 * When a request's tokens on one limiter are used: each agent's nth call from an early
 * start learned for the nth call of that agent (a loop's second iteration, a tool caller's
 * turn after its tool start later than the first; at admission while unknown), so the later
 * calls' share is held against the window only from then. Held from the agent's first call
 * on, a later call's tokens kept window room idle until it started (research_pipeline: its
 * critics' second turns and its writer's second iteration).
 */
function scheduleOf(llm: RateLimitedLlm, calls: ReadonlyMap<string, number>, tokensPerCall: ReadonlyMap<string, number>): UsePart[] {
  const byOffset = new Map<number, number>();
  for (const [agent, n] of calls) {
    for (let nth = 0; nth < n; nth++) {
      const afterMs = llm.callCost.startOffsetMs(agent, nth) ?? 0;
      byOffset.set(afterMs, (byOffset.get(afterMs) ?? 0) + (tokensPerCall.get(agent) ?? 0));
    }
  }
  return [...byOffset].map(([afterMs, tokens]) => ({ afterMs, tokens }));
}
