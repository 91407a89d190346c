// Admission of a model call: a semaphore permit, then the call's token reservation, both
// within one deadline. One path: a permit free now and budget free now admit synchronously
// (the uncontended hot path allocates no promise); otherwise the call waits for what is
// missing, still holding what it has, and is admitted or refused with nothing held. With
// maxWaiting set, a call that would have to wait while that many calls already wait (for a
// permit or for budget) is refused at once (RateLimitTimeout, reason queue_full): the queue,
// and the memory it holds, is bounded.
//
// A call of an admitted request (admitted-request.ts) waits for its permit in the order of its
// request's admission, and takes no budget: its request's funded share pays for it. A call
// that starts larger than its share funded it for (its own prompt, counted by the provider's
// rule, above the agent's funded tokens per call) first takes the difference from the budget,
// waiting for it if need be: it is never sent on credit.
import type { LlmRequest } from '@google/adk';
import type { Budget, BudgetTicket } from '../budget/budget.ts';
import type { CallWatch } from '../call-observers.ts';
import { type Clock, sleep } from '../clock.ts';
import { countsInput } from '../counted-tokens.ts';
import { DEFAULT_COUNTED_TOKENS } from '../defaults.ts';
import { estimateInputTokens } from '../estimator.ts';
import type { CallFunding, FundedShare } from './funded-share.ts';
import { BudgetRequestTooLarge, DeadlineExceeded, RateLimitTimeout, type TimeoutReason } from '../errors.ts';
import type { TokenEstimator } from '../estimator.ts';
import type { FairSemaphore, Permit } from '../semaphore.ts';

/** A call admitted: its permit, its reservation and the budget's ticket for it (none without a budget). */
export interface Admitted {
  readonly kind: 'admitted';
  readonly permit: Permit;
  readonly reserved: number;
  readonly ticket: BudgetTicket | undefined;
  /** Paid by its request's funded share (reconciled when the request ends, not per call). */
  readonly funded: boolean;
}

/** A call refused: nothing is held. */
export interface Refused {
  readonly kind: 'refused';
  readonly acquireOutcome: 'timeout' | 'aborted';
  readonly outcome: 'timeout' | 'cancelled' | 'error';
  readonly error: unknown;
}

export type Admission = Admitted | Refused;

/** One call's admission request. */
export interface AdmissionRequest {
  readonly request: LlmRequest;
  readonly agent: string;
  readonly lane: { readonly lane: string } | undefined;
  /** When the call started waiting, on the clock. */
  readonly start: number;
  readonly deadline: number;
  /** What a wait that reaches `deadline` times out for: maxWait (`permit`/`budget`), or its request's deadline. */
  readonly deadlineIsRequest: boolean;
  readonly signal: AbortSignal;
  readonly watch: CallWatch;
  /** Permit order (lower first): its request's admission time; undefined: the call's arrival. */
  readonly priority: number | undefined;
  /** How the call is paid: its request's funded share on this limiter (instead of the budget), or the budget. */
  readonly funding: CallFunding;
}

export interface AdmissionControlOptions {
  /** The limiter name, in errors. */
  readonly name: string;
  readonly semaphore: FairSemaphore;
  readonly budget: Budget | undefined;
  readonly estimator: TokenEstimator;
  readonly clock: Clock;
  /** Most calls waiting at once (semaphore + budget queues); undefined = no cap. */
  readonly maxWaiting: number | undefined;
}

export class AdmissionControl {
  readonly #options: AdmissionControlOptions;

  constructor(options: AdmissionControlOptions) {
    this.#options = options;
  }

  /** Admit or refuse a call; synchronous when a permit and the budget are free now. */
  admit(call: AdmissionRequest): Admission | Promise<Admission> {
    if (call.deadlineIsRequest && call.deadline <= call.start) return this.#timedOut(call, 'request_deadline');
    const permit = call.signal.aborted ? undefined : this.#options.semaphore.tryAcquire(call.lane);
    if (permit) return this.#reserve(call, permit);
    if (this.#queueFull()) return this.#timedOut(call, 'queue_full');
    call.watch.waiting();
    const acquire = { deadline: call.deadline, signal: call.signal, lane: call.lane?.lane, priority: call.priority };
    return this.#options.semaphore.acquire(acquire).then(
      (acquired) => this.#reserve(call, acquired),
      (error: unknown) => this.#refuse(call, error, call.deadlineIsRequest ? 'request_deadline' : 'permit'),
    );
  }

  /** Holding a permit: take the call's tokens now, or wait for them within the deadline. */
  #reserve(call: AdmissionRequest, permit: Permit): Admission | Promise<Admission> {
    const { budget } = this.#options;
    let reserved: number;
    try {
      if (call.funding.kind === 'share') {
        const { share, tokens: funded } = call.funding;
        share.callStarted();
        const { draw, excess } = this.#drawFrom(call, share, funded);
        // Taken now, before any wait: the request's calls running at once never draw the same tokens twice.
        share.drawn += draw;
        if (excess > 0) return this.#topUp(call, permit, share, draw, excess);
        return this.#chargeFunded(call, permit, share, draw);
      }
      reserved = this.#estimate(call.request, call.agent);
      if (!budget) return admitted(permit, reserved, undefined);
      const ticket = budget.tryReserve(reserved);
      if (ticket) return admitted(permit, reserved, ticket);
    } catch (error) {
      permit.release();
      return this.#refuse(call, error, 'budget');
    }
    if (this.#queueFull()) {
      permit.release();
      return this.#timedOut(call, 'queue_full');
    }
    call.watch.waiting();
    return budget.reserve(reserved, { deadline: call.deadline, signal: call.signal, priority: budgetPriority(call) }).then(
      (ticket) => admitted(permit, reserved, ticket),
      (error: unknown) => {
        permit.release();
        return this.#refuse(call, error, call.deadlineIsRequest ? 'request_deadline' : 'budget');
      },
    );
  }

  /**
   * What a funded call takes from its request's share (`draw`, counted in the window when it
   * starts) and from the budget beyond it (`excess`, its own prompt above what the share holds
   * for it). Counting input alone, a call's cost is its own prompt: it draws that from what
   * the share has left, so a smaller call leaves its tokens to the request's larger ones.
   * Counting output too, it draws its agent's funded tokens per call, and takes from the
   * budget only a prompt above them.
   */
  #drawFrom(call: AdmissionRequest, share: FundedShare, funded: number): { draw: number; excess: number } {
    const { budget } = this.#options;
    const counted = budget?.countedTokens ?? DEFAULT_COUNTED_TOKENS;
    if (!budget || !countsInput(counted)) return { draw: funded, excess: 0 };
    const own = estimateInputTokens(call.request);
    if (own > budget.capacity) throw new BudgetRequestTooLarge(own, budget.capacity);
    if (counted !== 'input') return { draw: funded, excess: Math.max(0, own - funded) };
    const draw = Math.min(own, Math.max(0, share.ticket.tokens - share.drawn));
    return { draw, excess: own - draw };
  }

  /**
   * A funded call larger than its share: take the difference from the budget (waiting for it,
   * ahead of the requests at the door, within the call's deadline), then go on as a funded
   * call. The difference is the request's own: settled with its share when the request ends.
   */
  async #topUp(call: AdmissionRequest, permit: Permit, share: FundedShare, funded: number, excess: number): Promise<Admission> {
    const budget = share.budget;
    try {
      const ticket = budget.tryReserve(excess) ?? (await budget.reserve(excess, { deadline: call.deadline, signal: call.signal, priority: budgetPriority(call) }));
      budget.reconcile(ticket, excess);
    } catch (error) {
      permit.release();
      return this.#refuse(call, error, call.deadlineIsRequest ? 'request_deadline' : 'budget');
    }
    share.toppedUp += excess;
    return this.#chargeFunded(call, permit, share, funded, excess);
  }

  /** A funded call's share counted in the rolling window now, when the provider counts it, or once its room is due. */
  #chargeFunded(call: AdmissionRequest, permit: Permit, share: FundedShare, funded: number, toppedUp = 0): Admission | Promise<Admission> {
    const roomMs = share.budget.funding?.windowRoomInMs(share.ticket, funded) ?? 0;
    if (roomMs > 0) return this.#chargeWhenRoom(call, permit, share, funded, roomMs, toppedUp);
    share.budget.funding?.chargeWindow(share.ticket, funded);
    return admitted(permit, funded + toppedUp, undefined, true);
  }

  /**
   * A funded call that started before its share of the window fell due and found the window
   * full: holding its permit, it waits for the room (held for it from its due time on), within
   * its deadline, then is counted.
   */
  async #chargeWhenRoom(call: AdmissionRequest, permit: Permit, share: FundedShare, funded: number, roomMs: number, toppedUp: number): Promise<Admission> {
    const clock = this.#options.clock;
    for (let waitMs = roomMs; waitMs > 0; waitMs = share.budget.funding?.windowRoomInMs(share.ticket, funded) ?? 0) {
      const left = call.deadline - clock.now();
      if (left <= 0 || waitMs > left) {
        permit.release();
        return this.#timedOut(call, call.deadlineIsRequest ? 'request_deadline' : 'budget');
      }
      try {
        await sleep(clock, waitMs, call.signal);
      } catch (error) {
        permit.release();
        return this.#refuse(call, error, 'budget');
      }
    }
    share.budget.funding?.chargeWindow(share.ticket, funded);
    return admitted(permit, funded + toppedUp, undefined, true);
  }

  /** Calls queued for a permit or for budget: the limiter's `waiting`. */
  #queueFull(): boolean {
    const { maxWaiting, semaphore, budget } = this.#options;
    return maxWaiting !== undefined && semaphore.waiting + (budget?.waiting ?? 0) >= maxWaiting;
  }

  #refuse(call: AdmissionRequest, error: unknown, reason: TimeoutReason): Refused {
    if (error instanceof DeadlineExceeded) return this.#timedOut(call, reason);
    return { kind: 'refused', acquireOutcome: 'aborted', outcome: call.signal.aborted ? 'cancelled' : 'error', error };
  }

  #timedOut(call: AdmissionRequest, reason: TimeoutReason): Refused {
    call.watch.timedOut(reason);
    const timeout = new RateLimitTimeout(this.#options.name, reason, this.#options.clock.now() - call.start);
    return { kind: 'refused', acquireOutcome: 'timeout', outcome: 'timeout', error: timeout };
  }

  #estimate(request: LlmRequest, agent: string): number {
    const { budget, estimator, name } = this.#options;
    const tokens = Math.ceil(estimator.estimate(request, agent));
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new RangeError(`RateLimitedLlm "${name}": estimatedTokens gave ${tokens}, need a finite number >= 0`);
    }
    if (budget && tokens > budget.capacity) throw new BudgetRequestTooLarge(tokens, budget.capacity);
    return tokens;
  }
}

/**
 * A call's place in the budget's queue: a call of an admitted request (it has a priority)
 * goes before every request still waiting at the door, so what was admitted finishes; others
 * in arrival order.
 */
function budgetPriority(call: AdmissionRequest): number | undefined {
  return call.priority === undefined ? undefined : Number.NEGATIVE_INFINITY;
}

function admitted(permit: Permit, reserved: number, ticket: BudgetTicket | undefined, funded = false): Admitted {
  return { kind: 'admitted', permit, reserved, ticket, funded };
}
