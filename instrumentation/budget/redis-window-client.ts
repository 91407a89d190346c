// RedisTokenBudget's script client: one run of the rolling-window script (redis-window-script.ts)
// on the budget's key, within a command deadline, with EVALSHA and EVAL when Redis does not
// have the script cached. It keeps what Redis last answered (the window's sum, the holds and,
// when sent, what leaves the window when), from which the budget tells a wait without asking.
// Every command has a deadline of its own (commandDeadlineMs, far below any maxWait):
// node-redis stops timing a command once it is written to the socket, so a hung Redis
// (SIGSTOP, a partition without a reset) would otherwise hold every reservation until its
// caller's maxWait. Past the deadline the client is told to drop its connection and connect
// again, and the run rejects (Redis counts as unreachable). A key holding another window or
// limit rejects as CentralBudgetConflict.
import { createHash } from 'node:crypto';
import type { UsePart } from './budget.ts';
import { type Clock, withDeadline } from '../clock.ts';
import { REDIS_WINDOW_SLOTS } from '../defaults.ts';
import { CentralBudgetConflict } from '../errors.ts';
import { BUDGET_CONFLICT_REPLY, maxBudgetTtlMs, ROLLING_WINDOW_SCRIPT } from './redis-window-script.ts';
import { fitsInTurnInMs, type Hold, slotsAfter } from './window-rule.ts';

const SCRIPT_SHA1 = createHash('sha1').update(ROLLING_WINDOW_SCRIPT).digest('hex');

/** What the budget needs from a Redis client (node-redis 6's client fits; connectBudgetRedis's adds reconnect). */
export interface RedisScriptClient {
  readonly isReady: boolean;
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** A command passed its deadline: drop the connection (it may be hung) and connect again in the background. */
  reconnect?(): void;
}

export type ScriptOp = 'take' | 'settle' | 'block' | 'peek';

/** One run's answer: admissions granted by a take, the window's sum, the wait of the first refused, the slot it counted in. */
export interface ScriptReply {
  readonly granted: number;
  readonly sum: number;
  readonly waitMs: number;
  readonly slot: string;
}

/** The window as Redis last sent it: what leaves it when, the holds by due time, and when its slot began (the budget's clock). */
export interface WindowView {
  readonly leaving: readonly (readonly [number, number])[];
  readonly holds: readonly Hold[];
  readonly slotStartAt: number;
}

/** What a run sends besides its op and args: the limit now, the tokens carried in, the flags (see the script). */
export interface RunState {
  readonly limit: number;
  readonly carry: number;
  readonly flags: number;
}

export interface RedisWindowClientOptions {
  readonly client: RedisScriptClient;
  readonly key: string;
  readonly windowMs: number;
  /** The configured limit: the key's identity. */
  readonly capacity: number;
  readonly commandDeadlineMs: number;
  readonly clock: Clock;
}

export class RedisWindowClient {
  readonly #options: RedisWindowClientOptions;
  /** The window's sum, as Redis last answered. */
  lastSum = 0;
  /** The fleet's holds (windowAtUse admissions not used yet), as Redis last answered. */
  lastHeld = 0;
  /** What leaves the window when and the holds, as Redis last sent them (when the window was at least half full). */
  view: WindowView | undefined;
  /** When Redis last answered (the budget's clock). */
  answeredAt = Number.NEGATIVE_INFINITY;

  constructor(options: RedisWindowClientOptions) {
    this.#options = options;
  }

  get isReady(): boolean {
    return this.#options.client.isReady;
  }

  /** One slot of Redis' window, ms. */
  get slotMs(): number {
    return this.#options.windowMs / REDIS_WINDOW_SLOTS;
  }

  /** Whole slots after its admission's that the script holds a part in. */
  slotsAfter(afterMs: number): number {
    return slotsAfter(afterMs, this.slotMs);
  }

  /**
   * One atomic script run within commandDeadlineMs. Past the deadline the client is told to
   * reconnect (the socket may be hung) and the run rejects.
   */
  async run(op: ScriptOp, state: RunState, args: readonly string[]): Promise<ScriptReply> {
    const { client, clock, commandDeadlineMs, windowMs, capacity } = this.#options;
    const argv = [String(state.limit), String(windowMs), op, String(state.carry), String(state.flags), String(capacity), ...args];
    const reply = await withDeadline(this.#script(argv), commandDeadlineMs, clock, () => {
      client.reconnect?.();
      return new Error(`Redis did not answer within ${commandDeadlineMs} ms (commandDeadlineMs)`);
    });
    if (!Array.isArray(reply) || reply.length < 8 || reply.length % 2 !== 0) throw new Error(`rolling window script: unexpected reply ${JSON.stringify(reply)}`);
    const sum = Number(String(reply[1]));
    this.lastSum = sum;
    this.lastHeld = Number(String(reply[5]));
    this.answeredAt = clock.now();
    // None: the window and holds are under half the limit (the window is not sent then).
    this.view = reply.length > 8 ? viewOf(reply.slice(8), Number(reply[6]), this.answeredAt, Number(String(reply[7]))) : undefined;
    return { granted: Number(reply[0]), sum, waitMs: Number(reply[2]), slot: String(reply[3]) };
  }

  /**
   * From the window Redis last sent: ms until the last of `turns` (reservations' parts, each
   * admitted in its turn) fits (0: now), undefined when nothing leaving makes room, null when
   * that view is missing or older than `maxAgeMs`.
   */
  viewWaitMs(now: number, turns: readonly (readonly UsePart[])[], limit: number, maxAgeMs: number): number | undefined | null {
    const view = this.view;
    if (!view || now - this.answeredAt > maxAgeMs) return null;
    // As the script sees it: admitted in a slot, each part due whole slots after that slot began.
    const slotMs = this.slotMs;
    const slotStartAt = view.slotStartAt + Math.floor((now - view.slotStartAt) / slotMs) * slotMs;
    const due = turns.map((parts) => parts.map((part) => ({ afterMs: this.slotsAfter(part.afterMs) * slotMs, tokens: part.tokens })));
    // The holds counted when due and gone a window later, as the calls they are held for are.
    const fitsInMs = fitsInTurnInMs(slotStartAt, view.leaving, view.holds, due, limit, this.#options.windowMs);
    return fitsInMs === undefined || fitsInMs === 0 ? fitsInMs : Math.max(1, Math.ceil(slotStartAt + fitsInMs - now));
  }

  /** EVALSHA, then EVAL when Redis does not know the script (restart, SCRIPT FLUSH). */
  async #script(args: string[]): Promise<unknown> {
    const { client, key } = this.#options;
    const options = { keys: [key], arguments: args };
    try {
      try {
        return await client.evalSha(SCRIPT_SHA1, options);
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        return await client.eval(ROLLING_WINDOW_SCRIPT, options);
      }
    } catch (error) {
      throw this.#conflictOf(error) ?? error;
    }
  }

  /** The script's refusal of a key holding another window or limit, as a CentralBudgetConflict. */
  #conflictOf(error: unknown): CentralBudgetConflict | undefined {
    const words = error instanceof Error ? error.message.split(' ') : [];
    if (words[0] !== BUDGET_CONFLICT_REPLY || words.length < 4) return undefined;
    const [windowMs, tokensPerWindow, ttlMs] = words.slice(1, 4).map(Number);
    const { key, capacity } = this.#options;
    const own = { windowMs: this.#options.windowMs, tokensPerWindow: capacity };
    return new CentralBudgetConflict(key, { windowMs, tokensPerWindow }, own, Math.min(ttlMs, maxBudgetTtlMs(this.#options.windowMs)));
  }
}

/** A reservation as the script's take reads it: its tokens, a hold's as "p" and its parts `tokens@afterMs`. */
export function amountOf({ tokens, atUse, parts }: { readonly tokens: number; readonly atUse: boolean; readonly parts: readonly UsePart[] }): string {
  return atUse ? `p${parts.map((part) => `${part.tokens}@${Math.round(part.afterMs)}`).join(',')}` : String(tokens);
}

/** The script's (ms from now, tokens) pairs, the first `holds` of them the holds by due time, as times on the budget's clock. */
function viewOf(pairs: readonly unknown[], holds: number, now: number, intoSlotMs: number): WindowView {
  const at = (i: number): readonly [number, number] => [now + Number(pairs[i]), Number(String(pairs[i + 1]))];
  const view = { leaving: [] as (readonly [number, number])[], holds: [] as Hold[], slotStartAt: now - intoSlotMs };
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const [time, tokens] = at(i);
    if (i < 2 * holds) view.holds.push({ dueAt: time, tokens });
    else view.leaving.push([time, tokens]);
  }
  return view;
}
