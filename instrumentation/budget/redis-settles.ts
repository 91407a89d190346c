// RedisTokenBudget's settles: the reconciliations and charges gathered in one turn of the event
// loop go to Redis in one script run, as (slot, delta, hold slot, release) quadruples (see the
// script's op "settle"); a charged ticket's uses are counted in the slot that run answers. A
// run that fails is handed back (the budget carries its debts and uses in once Redis answers).
import type { ScriptReply } from './redis-window-client.ts';
import type { RedisHold, RedisTicket } from './redis-ticket.ts';

export interface RedisSettlesOptions {
  /** One settle run with these args. */
  readonly run: (args: readonly string[]) => Promise<ScriptReply>;
  /** The run failed: not known to have reached Redis. */
  readonly onFailed: (error: unknown, args: readonly string[]) => void;
  /** A tracked run ended (tokens given back may let a waiter in). */
  readonly onDone: () => void;
}

export class RedisSettles {
  readonly #options: RedisSettlesOptions;
  readonly #pending = new Set<Promise<void>>();
  /** Quadruples waiting for the next settle run. */
  #args: string[] = [];
  /** Tickets charged in the next settle run: their uses are counted in the slot it answers. */
  #charged: RedisTicket[] = [];
  #scheduled = false;

  constructor(options: RedisSettlesOptions) {
    this.#options = options;
  }

  /**
   * Queue one settle for the next run: `delta` counted in `slot` (slot 0: now), and what is
   * released from each hold part; `charged`: a ticket whose use this counts.
   */
  add(slot: string, delta: number, released: readonly { hold: RedisHold; taken: number }[], charged?: RedisTicket): void {
    if (charged) this.#charged.push(charged);
    const [first, ...rest] = released;
    this.#args.push(slot, String(delta), first?.hold.slot ?? '0', String(first?.taken ?? 0));
    for (const { hold, taken } of rest) this.#args.push('0', '0', hold.slot, String(taken));
    this.#schedule();
  }

  /** Keep a run (a settle, a block) until it ends: settled() waits for it. */
  track(pending: Promise<void>): void {
    const tracked = pending.finally(() => {
      this.#pending.delete(tracked);
      this.#options.onDone();
    });
    this.#pending.add(tracked);
  }

  /** Resolves when every settle queued so far has reached Redis (or failed). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0 || this.#scheduled) {
      if (this.#pending.size === 0) await Promise.resolve();
      else await Promise.all([...this.#pending]);
    }
  }

  /** Send the settles gathered in this turn of the event loop in one script run. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      const args = this.#args;
      const charged = this.#charged;
      this.#args = [];
      this.#charged = [];
      if (args.length === 0) return;
      const settle = this.#options.run(args).then(
        (reply) => {
          for (const ticket of charged) ticket.redisSlot = reply.slot;
        },
        (error: unknown) => this.#options.onFailed(error, args),
      );
      this.track(settle);
    });
  }
}
