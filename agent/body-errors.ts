// The agent app's last middleware: the answer to a request that failed before or outside
// its route, body-parser failures above all (malformed JSON, oversized body, wrong
// charset, a client gone mid-body), counted and logged like any rejected run request.
import type { NextFunction, Request, Response } from 'express';
import type { AccessLog } from './access-log.ts';
import type { AgentMetrics } from './metrics.ts';
import { logRejected } from './native-run.ts';
import { MAX_BODY_BYTES } from './request-schema.ts';

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
