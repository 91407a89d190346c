// The agent HTTP app. `quotascope agent` (the sample trees, agent/service.ts) and `quotascope
// serve` (a user's module, agent/serve/server.ts) are this one app over two tree sources. It
// builds the registry and the agent_* metrics; serves GET /healthz, GET /metrics, the
// source's own routes, the native GET /v1/agents and POST /v1/agents/{name}/run, a 404 and
// the body-error answer; listens with the server limits; and closes in order: stop
// accepting, let the runs finish for the grace period, abort the rest, close the source,
// then the access log.
import type { Server } from 'node:http';
import { LogLevel, setLogLevel } from '@google/adk';
import express, { type Express, type RequestHandler } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { RunnableRoot } from '@google/adk';
import type { RequestAdmission } from '../instrumentation/admission/request-admission.ts';
import { type AccessLog, openAccessLog } from './access-log.ts';
import { bodyErrorHandler } from './body-errors.ts';
import { AgentConfigError, type AgentServiceOptions } from './config.ts';
import { listen, type ServerLimits, stopAccepting } from './http-server.ts';
import { createRequestAdmission } from './limiter.ts';
import { type AgentMetrics, createAgentMetrics } from './metrics.ts';
import { mountNativeRun, type NativeAgentList, type NativeRunHost } from './native-run.ts';
import { RunsInFlight } from './runs-in-flight.ts';

// The classic agents (ParallelAgent, SequentialAgent, ...) log a deprecation WARN per
// construction; the sample `wide` tree builds them per request.
setLogLevel(LogLevel.ERROR);

/** How long close() waits for aborted runs to unwind (answer and log) before it closes their connections anyway. */
export const CLOSE_GRACE_MS = 5_000;

/** The options of the app itself, whatever its trees: the agent service's fields of these names. */
export type AgentAppOptions = ServerLimits &
  Pick<AgentServiceOptions, 'port' | 'host' | 'streaming' | 'accessLog' | 'shutdownGraceMs' | 'admission' | 'requestDeadlineMs'>;

/** What a tree source is built with. */
export interface AppContext {
  readonly registry: Registry;
  readonly metrics: AgentMetrics;
}

/** What a tree source's own routes are mounted with. */
export interface RouteContext extends AppContext {
  readonly runs: RunsInFlight;
  /** Admits each run whole at the door or sheds it (429); undefined: model calls are admitted one by one. */
  readonly admission: RequestAdmission | undefined;
}

/** The trees an app serves: the sample trees, or a user's module. */
export interface TreeSource extends Pick<NativeRunHost, 'unknown' | 'resolve'> {
  /** GET /v1/agents: the names served and each one's published model-call count. */
  readonly list: NativeAgentList;
  /** GET /healthz after its `status`. */
  health(): Record<string, unknown>;
  /** The text of GET /metrics; default: the registry's. */
  metricsText?(): Promise<string>;
  /** Routes mounted before the native ones (serve's ADK API-server protocol). */
  routes?(context: RouteContext): RequestHandler;
  /** The 404 answer of any other route: the API the app serves. */
  readonly notFound: string;
  /** The reason given to the runs close() aborts. */
  readonly closingReason: string;
  /** The roots request admission runs (each tree's critical path is checked against the request deadline at start). */
  roots(): RunnableRoot[];
  /** Frees what the source holds (limiters, sessions); called once the runs are over, or when the start fails. */
  close(): Promise<void>;
}

export interface AgentApp<S extends TreeSource> {
  readonly url: string;
  readonly port: number;
  readonly registry: Registry;
  readonly source: S;
  /** Once: a second call (a signal handler and a caller's finally) waits for the first. */
  close(): Promise<void>;
}

/** `step`'s result; when it fails, `undo` runs before the failure is rethrown. */
async function undoOnFailure<T>(step: () => Promise<T>, undo: () => Promise<void>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await undo();
    throw error;
  }
}

/** The express app: health, metrics, the source's routes, the native run routes, 404 and the body-error answer. */
function expressApp(source: TreeSource, context: RouteContext, accessLog: AccessLog | undefined, streaming: boolean): Express {
  const { registry, metrics } = context;
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', ...source.health() });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await (source.metricsText?.() ?? registry.metrics()));
  });
  if (source.routes) app.use(source.routes(context));
  mountNativeRun(app, source.list, {
    metrics,
    admission: context.admission,
    accessLog,
    streaming,
    runs: context.runs,
    unknown: (name) => source.unknown(name),
    resolve: (name, request) => source.resolve(name, request),
  });
  app.use((_req, res) => {
    res.status(404).json({ error: source.notFound });
  });
  app.use(bodyErrorHandler(accessLog, metrics, (name) => source.unknown(name) === undefined));
  return app;
}

/**
 * Stops accepting (idle keep-alive connections close now), lets the runs in flight finish
 * and answer for `graceMs`, aborts the rest with ServiceClosing (the native run answers
 * 503), waits up to CLOSE_GRACE_MS for them to unwind, then closes every connection left.
 */
async function stopServing(server: Server, runs: RunsInFlight, reason: string, graceMs: number): Promise<void> {
  const closed = stopAccepting(server);
  await runs.settledWithin(graceMs);
  runs.abortAll(reason);
  await runs.settledWithin(CLOSE_GRACE_MS);
  server.closeAllConnections();
  await closed;
}

/**
 * A configured request deadline shorter than a served tree's chain (its critical path at the
 * limiters' expected call time, with the door's margin) would shed every request while the
 * budget is idle: refused at start with one line naming the option.
 */
function refuseDeadlineShorterThanChain(admission: RequestAdmission | undefined, roots: readonly RunnableRoot[], requestDeadlineMs: number | undefined): void {
  if (!admission || requestDeadlineMs === undefined) return;
  for (const root of roots) {
    const chainMs = admission.chainMs(root);
    if (chainMs > requestDeadlineMs) {
      throw new AgentConfigError(
        `requestDeadlineMs: ${requestDeadlineMs} ms is shorter than "${root.name}"'s chain (${chainMs} ms: its critical path at the expected call time); every request would be shed; raise it, or set expectedCallMs to the measured call time`,
      );
    }
  }
}

/**
 * Opens the access log (unless the caller shares one: it wins over options.accessLog and the
 * caller closes it), builds the source and listens; rejects without leaving anything open.
 */
export async function startAgentApp<S extends TreeSource>(
  options: AgentAppOptions,
  openSource: (context: AppContext) => Promise<S>,
  sharedAccessLog?: AccessLog,
): Promise<AgentApp<S>> {
  // Opened first: a path that cannot be opened fails the start before anything listens.
  const ownAccessLog = !sharedAccessLog && options.accessLog ? openAccessLog(options.accessLog) : undefined;
  const accessLog = sharedAccessLog ?? ownAccessLog;
  const closeAccessLog = async () => {
    await ownAccessLog?.close();
  };
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const context = { registry, metrics: createAgentMetrics(registry) };
  const source = await undoOnFailure(() => openSource(context), closeAccessLog);
  const runs = new RunsInFlight();
  const admission = createRequestAdmission(options);
  await undoOnFailure(
    async () => refuseDeadlineShorterThanChain(admission, source.roots(), options.requestDeadlineMs),
    async () => {
      await source.close();
      await closeAccessLog();
    },
  );
  const app = expressApp(source, { ...context, runs, admission }, accessLog, options.streaming);
  const { server, port, url } = await undoOnFailure(
    () => listen(app, options.port, options.host, options),
    async () => {
      await source.close();
      await closeAccessLog();
    },
  );
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    registry,
    source,
    close() {
      closing ??= (async () => {
        await stopServing(server, runs, source.closingReason, options.shutdownGraceMs);
        await source.close();
        await closeAccessLog(); // after the aborted runs wrote their lines
      })();
      return closing;
    },
  };
}
