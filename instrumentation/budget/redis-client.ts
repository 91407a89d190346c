// A Redis connection set up for RedisTokenBudget: commands fail fast instead of queueing
// while Redis is away (no offline queue), so the budget turns to its outage policy at once;
// node-redis keeps reconnecting after a reset or a refused connection. A hung connection
// (Redis stopped, a partition without a reset) gives node-redis no error at all: the budget
// notices it from its own command deadline and calls reconnect(), which drops the client
// and connects a new one in the background, each attempt bounded by connectTimeoutMs.
import { createClient } from 'redis';
import { redactUrl } from '../redact-url.ts';
import type { RedisScriptClient } from './redis-window-client.ts';

export { redactUrl };

export interface BudgetRedisOptions {
  /** Give up a connection attempt (at start, and each reconnect) after this long (default 2,000 ms). */
  readonly connectTimeoutMs?: number;
  /** How long close() waits for node-redis to close gracefully before destroying the socket (default 500 ms). */
  readonly closeTimeoutMs?: number;
  /** Connection errors while reconnecting (default: ignored; the budget counts the fallbacks). */
  readonly onError?: (error: Error) => void;
}

type NodeRedisClient = ReturnType<typeof createNodeRedisClient>;

function createNodeRedisClient(url: string, connectTimeoutMs: number, onError: (error: Error) => void) {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: connectTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2_000),
    },
  });
  client.on('error', onError);
  return client;
}

/** Connect within timeoutMs or reject (the client is then destroyed). */
async function connectWithin(client: NodeRedisClient, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    await Promise.race([client.connect(), timedOut]);
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Pause between two reconnect attempts that failed fast, ms. */
const RECONNECT_PAUSE_MS = 100;

export class BudgetRedisClient implements RedisScriptClient {
  readonly #url: string;
  readonly #connectTimeoutMs: number;
  readonly #closeTimeoutMs: number;
  readonly #onError: (error: Error) => void;
  #client: NodeRedisClient;
  #reconnecting = false;
  #closed = false;

  /** Use connectBudgetRedis. */
  constructor(url: string, client: NodeRedisClient, options: Required<Omit<BudgetRedisOptions, 'onError'>> & Pick<BudgetRedisOptions, 'onError'>) {
    this.#url = url;
    this.#client = client;
    this.#connectTimeoutMs = options.connectTimeoutMs;
    this.#closeTimeoutMs = options.closeTimeoutMs;
    this.#onError = options.onError ?? (() => {});
  }

  get isReady(): boolean {
    return !this.#closed && this.#client.isReady;
  }

  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown> {
    return this.#client.evalSha(sha1, options);
  }

  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown> {
    return this.#client.eval(script, options);
  }

  /** Drop the connection (its commands reject) and connect a new one in the background; one reconnect at a time. */
  reconnect(): void {
    if (this.#closed || this.#reconnecting) return;
    this.#reconnecting = true;
    void this.#replaceClient().finally(() => {
      this.#reconnecting = false;
    });
  }

  async #replaceClient(): Promise<void> {
    while (!this.#closed) {
      this.#client.destroy();
      this.#client = createNodeRedisClient(this.#url, this.#connectTimeoutMs, this.#onError);
      try {
        await connectWithin(this.#client, this.#connectTimeoutMs);
        if (this.#closed) this.#client.destroy();
        return;
      } catch (error) {
        this.#onError(error as Error);
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_PAUSE_MS).unref());
      }
    }
  }

  /** Close within closeTimeoutMs: gracefully if Redis answers, else the socket is destroyed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const client = this.#client;
    if (!client.isOpen) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#closeTimeoutMs);
    });
    await Promise.race([client.close().catch(() => {}), timedOut]);
    clearTimeout(timer);
    client.destroy();
  }

  /** Close at once, dropping pending commands. */
  destroy(): void {
    this.#closed = true;
    this.#client.destroy();
  }
}

/**
 * Connect to Redis for a shared token budget. Rejects (naming the URL without its password)
 * when Redis does not answer within connectTimeoutMs: a wrong URL fails the start instead of
 * silently running on the fallback.
 */
export async function connectBudgetRedis(url: string, options: BudgetRedisOptions = {}): Promise<BudgetRedisClient> {
  const connectTimeoutMs = options.connectTimeoutMs ?? 2_000;
  const client = createNodeRedisClient(url, connectTimeoutMs, options.onError ?? (() => {}));
  try {
    await connectWithin(client, connectTimeoutMs);
  } catch (error) {
    throw new Error(`cannot connect to Redis at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  return new BudgetRedisClient(url, client, { connectTimeoutMs, closeTimeoutMs: options.closeTimeoutMs ?? 500, onError: options.onError });
}
