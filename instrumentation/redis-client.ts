// A node-redis client set up for RedisTokenBudget: commands fail fast instead of queueing
// while Redis is away (no offline queue, a per-command timeout), so the budget notices an
// outage within one timeout and turns to its documented fallback; the client keeps
// reconnecting in the background and the budget returns to Redis once it answers.
import { createClient } from 'redis';

export interface BudgetRedisOptions {
  /** Give up connecting at start after this long (default 2,000 ms). */
  readonly connectTimeoutMs?: number;
  /** A script run that takes longer counts as Redis unreachable (default 500 ms). */
  readonly commandTimeoutMs?: number;
  /** Connection errors while reconnecting (default: ignored; the budget counts the fallbacks). */
  readonly onError?: (error: Error) => void;
}

export type BudgetRedisClient = ReturnType<typeof createBudgetRedisClient>;

function createBudgetRedisClient(url: string, options: BudgetRedisOptions) {
  return createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: options.commandTimeoutMs ?? 500 },
    socket: {
      connectTimeout: options.connectTimeoutMs ?? 2_000,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2_000),
    },
  });
}

/**
 * Connect to Redis for a shared token budget. Rejects (naming the URL without its password)
 * when Redis does not answer within connectTimeoutMs: a wrong URL fails the start instead of
 * silently running on the fallback.
 */
export async function connectBudgetRedis(url: string, options: BudgetRedisOptions = {}): Promise<BudgetRedisClient> {
  const client = createBudgetRedisClient(url, options);
  const onError = options.onError ?? (() => {});
  client.on('error', onError);
  const timeoutMs = options.connectTimeoutMs ?? 2_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis at ${redactUrl(url)} did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([client.connect(), timedOut]);
    return client;
  } catch (error) {
    client.destroy();
    throw new Error(`cannot connect to Redis at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** The URL without user and password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}
