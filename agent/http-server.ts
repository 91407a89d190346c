// What the agent HTTP servers (the sample-tree service and `serve`) share around their
// routes: the answer to body-parser failures, listening, and a close that aborts the runs
// in flight and lets them unwind (and log) for a bounded grace time.
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express, NextFunction, Request, Response } from 'express';
import type { AccessLog } from './access-log.ts';
import { logRejected } from './native-run.ts';
import { MAX_BODY_BYTES } from './request-schema.ts';

/** How long close() waits for aborted runs to unwind (and log) before it returns anyway. */
export const CLOSE_GRACE_MS = 5_000;

/** Error middleware: body-parser failures (malformed JSON, oversized body, wrong charset) carry a status. */
export function bodyErrorHandler(accessLog: AccessLog | undefined) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const err = error as { status?: number; type?: string; message?: string };
    const status = typeof err.status === 'number' && err.status >= 400 && err.status < 600 ? err.status : 500;
    const message =
      err.type === 'entity.parse.failed'
        ? `malformed JSON body: ${err.message}`
        : err.type === 'entity.too.large'
          ? `request body too large: the limit is ${MAX_BODY_BYTES} bytes`
          : (err.message ?? 'internal error');
    if (!res.headersSent) res.status(status).json({ error: message });
    logRejected(accessLog, req, res, status); // only run requests carry an arrival stamp
  };
}

export interface Listening {
  readonly server: Server;
  readonly port: number;
  /** Loopback for a wildcard bind, brackets for IPv6. */
  readonly url: string;
}

/** Listens; rejects (port taken, bad host) without leaving anything open. */
export async function listen(app: Express, port: number, host: string): Promise<Listening> {
  const server = app.listen(port, host);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return { server, port: bound, url: `http://${hostForUrl}:${bound}` };
}

/** Aborts the runs in flight, stops listening and waits up to CLOSE_GRACE_MS for the runs to unwind. */
export async function stopServing(server: Server, inFlight: Set<AbortController>, runs: Set<Promise<void>>, reason: string): Promise<void> {
  for (const abort of inFlight) abort.abort(new Error(reason));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
  if (runs.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLOSE_GRACE_MS);
  });
  await Promise.race([Promise.allSettled([...runs]), grace]);
  clearTimeout(timer);
}
