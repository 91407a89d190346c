// What every quotascope HTTP server shares (the agent app of `agent` and `serve`, and the
// mock provider): the server limits (fields, bounds, one set of defaults), listening with
// them, and stopping. It imports node:http and zod only (no express, nothing of the agent),
// so the mock provider and the CLIs' --help take it without the agent's dependencies.
import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** Node fires a timer set above 2^31-1 ms (about 24.8 days) after 1 ms instead: every ms setting stays at or below it. */
export const MAX_TIMER_MS = 2_147_483_647;
/** A millisecond setting node can arm as one timer. */
export const milliseconds = z.int().min(1).max(MAX_TIMER_MS);

/** Where a server listens unless told otherwise: loopback (a container passes 0.0.0.0). */
export const DEFAULT_HOST = '127.0.0.1';

/**
 * Open connections a server accepts at once. A load test keeps one connection per virtual
 * user, and k6 may run (peak per minute / 60) × request timeout of them against one agent
 * replica (over 1,000 at 600 requests a minute and 120 s), so the cap sits above that.
 */
export const DEFAULT_MAX_CONNECTIONS = 4_096;
const MAX_MAX_CONNECTIONS = 1_000_000;

/** How often node checks the headers and request timeouts (its default, 30 s, would let a 10 s timeout run 40 s). */
const TIMEOUT_CHECK_MS = 1_000;

/** The limits of a server, set when it starts. */
export const serverLimitFields = z.object({
  /** Longest a client may take to send a request's headers (node's default is 60 s). */
  headersTimeoutMs: milliseconds.default(10_000),
  /** Longest a client may take to send a whole request, body included (not the answer: a run or a paced response may take longer). */
  requestTimeoutMs: milliseconds.default(30_000),
  /** How long an idle keep-alive connection stays open (node's default, 5 s; put it above a load balancer's idle timeout). */
  keepAliveTimeoutMs: milliseconds.default(5_000),
  /** Open connections accepted at once; more are closed at accept. */
  maxConnections: z.int().min(1).max(MAX_MAX_CONNECTIONS).default(DEFAULT_MAX_CONNECTIONS),
});
export type ServerLimits = z.infer<typeof serverLimitFields>;

/** Cross-field rule of the server limits: node checks the headers timeout within the request timeout. */
export function checkServerLimits(limits: Pick<ServerLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>, ctx: z.RefinementCtx): void {
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    ctx.addIssue({ code: 'custom', path: ['headersTimeoutMs'], message: `must be <= requestTimeoutMs (${limits.requestTimeoutMs})` });
  }
}

export interface Listening {
  readonly server: Server;
  readonly port: number;
  /** e.g. http://127.0.0.1:8080 (no trailing slash): loopback for a wildcard bind, brackets for IPv6. */
  readonly url: string;
}

/** Serves `handler` on host:port (0 picks a free port) with the limits; rejects (port taken, bad host) without leaving anything open. */
export async function listen(handler: RequestListener, port: number, host: string, limits: ServerLimits): Promise<Listening> {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  server.listen(port, host);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return { server, port: bound, url: `http://${hostForUrl}:${bound}` };
}

/**
 * Stops accepting connections and closes the idle keep-alive ones now; settles when the
 * last connection has ended (closeAllConnections ends the busy ones at once).
 */
export function stopAccepting(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  server.closeIdleConnections();
  return closed;
}
