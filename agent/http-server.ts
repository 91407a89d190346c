// What the agent HTTP servers (the sample-tree service and `serve`) share around their
// routes: the answer to body-parser failures, listening with the configured server limits,
// and a close that lets the runs in flight finish for a grace period, then aborts the rest
// and lets them unwind (answer and log) for a bounded time.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express, NextFunction, Request, Response } from 'express';
import type { AccessLog } from './access-log.ts';
import type { ServerLimits } from './config.ts';
import type { AgentMetrics } from './metrics.ts';
import { logRejected, ServiceClosing } from './native-run.ts';
import { MAX_BODY_BYTES } from './request-schema.ts';

/** How long close() waits for aborted runs to unwind (answer and log) before it closes their connections anyway. */
export const CLOSE_GRACE_MS = 5_000;
/** How often node checks the headers and request timeouts (its default, 30 s, would let a 10 s timeout run 40 s). */
const TIMEOUT_CHECK_MS = 1_000;

/** The native run route, matched by hand: the error handler runs outside the route and has no params. */
const RUN_PATH = /^\/v1\/agents\/([^/]+)\/run\/?$/i;

function decodedOrUndefined(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Error middleware: body-parser failures (malformed JSON, oversized body, wrong charset, a
 * client gone mid-body) carry a status. A rejected native run request counts in
 * agent_requests_total like any other, under its name when `served` knows it.
 */
export function bodyErrorHandler(accessLog: AccessLog | undefined, metrics: AgentMetrics, served: (name: string) => boolean) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const err = error as { status?: number; type?: string; message?: string };
    // A client that left mid-body is a 499 like any client that went away: nobody reads an answer.
    const gone = err.type === 'request.aborted';
    const status = gone ? 499 : typeof err.status === 'number' && err.status >= 400 && err.status < 600 ? err.status : 500;
    const message =
      err.type === 'entity.parse.failed'
        ? `malformed JSON body: ${err.message}`
        : err.type === 'entity.too.large'
          ? `request body too large: the limit is ${MAX_BODY_BYTES} bytes`
          : (err.message ?? 'internal error');
    if (!res.headersSent && !gone) res.status(status).json({ error: message });
    const run = RUN_PATH.exec(req.path);
    if (run) {
      const name = decodedOrUndefined(run[1]);
      metrics.requests.inc({ tree: name !== undefined && served(name) ? name : 'unknown', status: String(status) });
    }
    logRejected(accessLog, req, res, status); // only run requests carry an arrival stamp
  };
}

export interface Listening {
  readonly server: Server;
  readonly port: number;
  /** Loopback for a wildcard bind, brackets for IPv6. */
  readonly url: string;
}

/** Listens with the server limits; rejects (port taken, bad host) without leaving anything open. */
export async function listen(app: Express, port: number, host: string, limits: ServerLimits): Promise<Listening> {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, limits.headersTimeoutMs),
    },
    app,
  );
  server.maxConnections = limits.maxConnections;
  server.listen(port, host);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return { server, port: bound, url: `http://${hostForUrl}:${bound}` };
}

/** Resolves when every promise settled or after `ms`, whichever comes first. */
async function settledWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([Promise.allSettled(promises), deadline]);
  clearTimeout(timer);
}

/**
 * Stops listening (idle keep-alive connections close now), lets the runs in flight finish
 * and answer for `graceMs`, aborts the rest with ServiceClosing (the native run answers
 * 503), waits up to CLOSE_GRACE_MS for them to unwind, then closes every connection left.
 */
export async function stopServing(server: Server, inFlight: Set<AbortController>, runs: Set<Promise<void>>, reason: string, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await settledWithin([...runs], graceMs);
  for (const abort of inFlight) abort.abort(new ServiceClosing(reason));
  await settledWithin([...runs], CLOSE_GRACE_MS);
  server.closeAllConnections();
  await closed;
}
