// Admission of a model call: a semaphore permit, then the call's token reservation, both
// within one deadline. One path: a permit free now and budget free now admit synchronously
// (the uncontended hot path allocates no promise); otherwise the call waits for what is
// missing, still holding what it has, and is admitted or refused with nothing held.
import type { LlmRequest } from '@google/adk';
import type { Budget, BudgetTicket } from './budget.ts';
import type { CallWatch } from './call-observers.ts';
import type { Clock } from './clock.ts';
import { BudgetRequestTooLarge, DeadlineExceeded, RateLimitTimeout, type TimeoutReason } from './errors.ts';
import type { TokenEstimator } from './estimator.ts';
import type { FairSemaphore, Permit } from './semaphore.ts';

/** A call admitted: its permit, its reservation and the budget's ticket for it (none without a budget). */
export interface Admitted {
  readonly kind: 'admitted';
  readonly permit: Permit;
  readonly reserved: number;
  readonly ticket: BudgetTicket | undefined;
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
  readonly signal: AbortSignal;
  readonly watch: CallWatch;
}

export interface AdmissionControlOptions {
  /** The limiter name, in errors. */
  readonly name: string;
  readonly semaphore: FairSemaphore;
  readonly budget: Budget | undefined;
  readonly estimator: TokenEstimator;
  readonly clock: Clock;
}

export class AdmissionControl {
  readonly #options: AdmissionControlOptions;

  constructor(options: AdmissionControlOptions) {
    this.#options = options;
  }

  /** Admit or refuse a call; synchronous when a permit and the budget are free now. */
  admit(call: AdmissionRequest): Admission | Promise<Admission> {
    const permit = call.signal.aborted ? undefined : this.#options.semaphore.tryAcquire(call.lane);
    if (permit) return this.#reserve(call, permit);
    call.watch.waiting();
    return this.#options.semaphore.acquire({ deadline: call.deadline, signal: call.signal, lane: call.lane?.lane }).then(
      (acquired) => this.#reserve(call, acquired),
      (error: unknown) => this.#refuse(call, error, 'permit'),
    );
  }

  /** Holding a permit: take the call's tokens now, or wait for them within the deadline. */
  #reserve(call: AdmissionRequest, permit: Permit): Admission | Promise<Admission> {
    const { budget } = this.#options;
    let reserved: number;
    try {
      reserved = this.#estimate(call.request, call.agent);
      if (!budget) return admitted(permit, reserved, undefined);
      const ticket = budget.tryReserve(reserved);
      if (ticket) return admitted(permit, reserved, ticket);
    } catch (error) {
      permit.release();
      return this.#refuse(call, error, 'budget');
    }
    call.watch.waiting();
    return budget.reserve(reserved, { deadline: call.deadline, signal: call.signal }).then(
      (ticket) => admitted(permit, reserved, ticket),
      (error: unknown) => {
        permit.release();
        return this.#refuse(call, error, 'budget');
      },
    );
  }

  #refuse(call: AdmissionRequest, error: unknown, reason: TimeoutReason): Refused {
    if (error instanceof DeadlineExceeded) {
      call.watch.timedOut(reason);
      const timeout = new RateLimitTimeout(this.#options.name, reason, this.#options.clock.now() - call.start);
      return { kind: 'refused', acquireOutcome: 'timeout', outcome: 'timeout', error: timeout };
    }
    return { kind: 'refused', acquireOutcome: 'aborted', outcome: call.signal.aborted ? 'cancelled' : 'error', error };
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

function admitted(permit: Permit, reserved: number, ticket: BudgetTicket | undefined): Admitted {
  return { kind: 'admitted', permit, reserved, ticket };
}
