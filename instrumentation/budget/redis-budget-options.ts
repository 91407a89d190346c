// RedisTokenBudget's options: what a caller sets, their bounds and defaults, checked at once
// (a TypeError or RangeError naming the field).
import { z } from 'zod';
import { CENTRAL_OUTAGE_POLICIES, type CentralOutagePolicy } from './budget.ts';
import type { Clock } from '../clock.ts';
import type { CountedTokens } from '../counted-tokens.ts';
import { optionProblems } from '../limiter-options.ts';
import type { AnyRegistry } from '../metrics/limiter-metrics.ts';
import type { RedisScriptClient } from './redis-window-client.ts';
import { checkBudgetOptions } from './token-budget.ts';

export interface RedisTokenBudgetOptions {
  /** A connected client (see connectBudgetRedis); the caller owns and closes it. */
  readonly client: RedisScriptClient;
  /** The SHARED limit: the fleet's tokens per window (per minute unless windowMs is set). */
  readonly tokensPerMinute: number;
  /** Which tokens the budget counts (default 'input', as Gemini's TPM); see TokenBudgetOptions. */
  readonly countedTokens?: CountedTokens;
  /** The quota window, ms (default 60,000). Replicas sharing a key must use the same window. */
  readonly windowMs?: number;
  /** The limiter name: the `limiter` metric label and the default key suffix. */
  readonly name: string;
  /** Redis key of the window (default `quotascope:budget:<name>`). Replicas sharing a quota use the same key. */
  readonly key?: string;
  /** The local budget fail-open serves from while Redis is unreachable (the static replica share), tokens per window. */
  readonly localShareTokensPerMinute?: number;
  /** While Redis is unreachable: fail-open (needs localShareTokensPerMinute) or fail-closed. Default: fail-open when a local share is given, else fail-closed. */
  readonly centralOutage?: CentralOutagePolicy;
  /** A command unanswered after this long counts as Redis unreachable (default DEFAULT_REDIS_COMMAND_DEADLINE_MS). */
  readonly commandDeadlineMs?: number;
  /** Period of the health probe (default DEFAULT_REDIS_HEALTH_CHECK_INTERVAL_MS). */
  readonly healthCheckIntervalMs?: number;
  /** After a Redis failure, use the fallback for this long before trying Redis again (default DEFAULT_REDIS_RETRY_AFTER_MS). */
  readonly retryRedisAfterMs?: number;
  /** Longest a waiting reservation sleeps between two tries (default DEFAULT_REDIS_MAX_POLL_MS). */
  readonly maxPollMs?: number;
  readonly clock?: Clock;
  /** Where llm_limiter_budget_central_unavailable_total goes (default: prom-client's global registry). */
  readonly registry?: AnyRegistry;
  /** Told when the budget switches between Redis and its fallback (for a log line). */
  readonly onCentralChange?: (central: boolean, error?: unknown) => void;
}

// Timer values are bounded: Node turns anything above 2^31-1 ms into 1 ms.
const optionsSchema = z.looseObject({
  localShareTokensPerMinute: z.number().finite().positive().optional(),
  centralOutage: z.enum(CENTRAL_OUTAGE_POLICIES).optional(),
  retryRedisAfterMs: z.int().min(1).max(600_000).optional(),
  maxPollMs: z.int().min(1).max(600_000).optional(),
  commandDeadlineMs: z.int().min(1).max(60_000).optional(),
  healthCheckIntervalMs: z.int().min(10).max(600_000).optional(),
});

/** Checks the options (the field named on a bad one) and answers the outage policy they choose. */
export function centralOutageOf(options: RedisTokenBudgetOptions): CentralOutagePolicy {
    checkBudgetOptions(options.tokensPerMinute, options);
    if (!options.name) throw new TypeError('RedisTokenBudget options: name: required (the limiter name)');
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new TypeError(`RedisTokenBudget options: ${optionProblems(parsed.error)}`);
    }
    const centralOutage = options.centralOutage ?? (options.localShareTokensPerMinute === undefined ? 'fail-closed' : 'fail-open');
    if (centralOutage === 'fail-open' && options.localShareTokensPerMinute === undefined) {
      throw new TypeError('RedisTokenBudget options: localShareTokensPerMinute: required for centralOutage "fail-open" (the share to serve from)');
    }
  return centralOutage;
}
