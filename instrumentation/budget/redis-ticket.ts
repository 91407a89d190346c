// A RedisTokenBudget admission and the parts of its hold in Redis.
import type { BudgetTicket } from './budget.ts';
import type { Hold } from './window-rule.ts';

/** Part of a hold in Redis: its tokens not charged yet, in the hold field of its due slot. */
export interface RedisHold extends Hold {
  readonly slot: string;
}

/**
 * An admission: from Redis (its slot there) or from the local fallback (its slot in the
 * carried window); `local` is the fallback's ticket. A windowAtUse admission from Redis is a
 * hold (`holds`, earliest due first): its tokens are counted when charged (redisSlot is then
 * the last charge's slot), and what was never charged is released when it is settled.
 */
export class RedisTicket implements BudgetTicket {
  readonly tokens: number;
  /** The budget that issued it (only its own tickets settle by slot). */
  readonly issuer: object;
  redisSlot: string | undefined;
  readonly carriedSlot: number | undefined;
  readonly local: BudgetTicket | undefined;
  /** Admitted as a hold (windowAtUse, from Redis). */
  readonly atUse: boolean;
  /** The hold's parts not charged yet. */
  holds: RedisHold[];
  /** Tokens counted in the window for this admission. */
  counted: number;

  constructor(
    issuer: object,
    tokens: number,
    at: { redisSlot?: string; carriedSlot?: number; holds?: RedisHold[] },
    local: BudgetTicket | undefined,
  ) {
    this.issuer = issuer;
    this.tokens = tokens;
    this.redisSlot = at.redisSlot;
    this.carriedSlot = at.carriedSlot;
    this.local = local;
    this.atUse = at.holds !== undefined;
    this.holds = at.holds ?? [];
    this.counted = this.atUse ? 0 : tokens;
  }
}

