// The agent service: express 5 over the agent trees. POST /v1/agents/{tree}/run runs one
// tree for one document and answers with the text plus what the run cost: branch
// outcomes, model calls, tokens and the longest permit wait.
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type BaseLlm,
  type Event,
  InMemoryRunner,
  isFinalResponse,
  LogLevel,
  StreamingMode,
  setLogLevel,
  stringifyContent,
} from '@google/adk';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import express, { type NextFunction, type Request, type Response } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type AccessLog, type AccessLogRecord, type Arrival, arrivalNow, openAccessLog, sinceArrival } from './access-log.ts';
import { type AgentServiceOptionsInput, parseServiceOptions } from './config.ts';
import { BATCH_LANE, createLimiter, type Limiter } from './limiter.ts';
import { createAgentMetrics } from './metrics.ts';
import { collectBranchOutcomes, fillMissingFromCallReports } from './outcomes.ts';
import { ProviderGemini } from './provider-model.ts';
import { describeIssues, MAX_BODY_BYTES, type RunRequest, runRequestSchema } from './request-schema.ts';
import { currentTrafficClass, recordCallReport, summarizeUsage, withCallReports } from './run-context.ts';
import { publishedAgents, TREE_NAMES, type TreeName } from './tree-shapes.ts';
import { type BuiltTree, buildTree, SYNTHESIZER } from './trees.ts';

// ParallelAgent/SequentialAgent log a deprecation WARN per construction; the
// wide tree builds them per request.
setLogLevel(LogLevel.ERROR);

const APP_NAME = 'quotascope';
/** How long close() waits for aborted runs to unwind (and log) before it returns anyway. */
const CLOSE_GRACE_MS = 5_000;
const tracer = trace.getTracer('quotascope-agent');

export interface StartAgentServiceExtras {
  /**
   * The model the limiter wraps. Default: ADK's Gemini pointed at providerUrl. Embedders
   * (and the test of a non-Error failure) pass their own BaseLlm.
   */
  delegate?: BaseLlm;
  /**
   * An access log opened by the caller and shared by several replicas (the CLI); it wins
   * over options.accessLog and the caller closes it. Otherwise the service opens and
   * closes its own.
   */
  accessLog?: AccessLog;
}

export interface AgentService {
  url: string;
  port: number;
  /** The limiter every tree of this replica shares. */
  limiter: Limiter;
  registry: Registry;
  close(): Promise<void>;
}

function isTreeName(name: string): name is TreeName {
  return (TREE_NAMES as readonly string[]).includes(name);
}

function finalText(events: readonly Event[]): string {
  let text = '';
  for (const event of events) {
    if (event.author === SYNTHESIZER && !event.partial && isFinalResponse(event) && event.errorCode === undefined) {
      text = stringifyContent(event);
    }
  }
  return text;
}

/** A thrown value as readable text: non-Error throws (objects, strings) included. */
function describeThrown(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

export async function startAgentService(
  options?: AgentServiceOptionsInput,
  extras: StartAgentServiceExtras = {},
): Promise<AgentService> {
  const config = parseServiceOptions(options);
  // Opened first: a path that cannot be opened fails the start before anything listens.
  const ownAccessLog = !extras.accessLog && config.accessLog ? openAccessLog(config.accessLog) : undefined;
  const accessLog = extras.accessLog ?? ownAccessLog;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createAgentMetrics(registry);

  const delegate =
    extras.delegate ??
    new ProviderGemini({ providerUrl: config.providerUrl, apiKey: config.apiKey, model: config.model, httpTimeoutMs: config.httpTimeoutMs });
  let limiter: Limiter;
  try {
    limiter = await createLimiter(config, delegate, registry, recordCallReport, currentTrafficClass);
  } catch (error) {
    await ownAccessLog?.close();
    throw error;
  }

  // Static trees are built once; `wide` depends on (branches, width), cached per shape.
  const runners = new Map<string, { tree: BuiltTree; runner: InMemoryRunner }>();
  function runnerFor(name: TreeName, request: RunRequest) {
    const key = name === 'wide' ? `wide:${request.branches}x${request.width}` : name;
    let entry = runners.get(key);
    if (!entry) {
      const tree = buildTree(name, limiter.model, { branches: request.branches, width: request.width, toolDelayMs: config.toolDelayMs });
      entry = { tree, runner: new InMemoryRunner({ agent: tree.root, appName: APP_NAME }) };
      runners.set(key, entry);
    }
    return entry;
  }

  const inFlight = new Set<AbortController>();
  /** Run handlers still going: close() lets aborted runs finish writing their log lines. */
  const runs = new Set<Promise<void>>();
  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', (_req, res) => {
    const budget = limiter.budget;
    // central: whether the shared Redis bucket answers (false while on the local share).
    const central = budget.central === undefined ? {} : { centralBudgetReachable: budget.central };
    // Lanes: the batch lane's cap and the permits it holds now (absent when lanes are off).
    const batchMax = limiter.batchMaxPermits;
    const lanes = batchMax === undefined ? {} : { batchLane: { maxPermits: batchMax, permitsInUse: limiter.model.semaphore.laneInUse(BATCH_LANE) } };
    res.json({ status: 'ok', trees: TREE_NAMES, limiter: { ...limiter.snapshot(), quotaSharing: limiter.quotaSharing, ...central, ...lanes } });
  });

  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });

  app.get('/v1/agents', (_req, res) => {
    res.json({ trees: TREE_NAMES, agents: publishedAgents() });
  });

  /** Access-log line of a run request answered without running a tree (no `tree`: not replayed). */
  function logRejected(req: Request, res: Response, status: number): void {
    const arrival = res.locals.arrival as Arrival | undefined;
    if (accessLog && arrival) accessLog.write({ ...sinceArrival(arrival), path: req.path, status });
  }

  // Stamped before the body is read, so the access log has the time the request arrived.
  const stampArrival = (_req: Request, res: Response, next: NextFunction) => {
    res.locals.arrival = arrivalNow();
    next();
  };

  app.post('/v1/agents/:tree/run', stampArrival, express.json({ limit: MAX_BODY_BYTES, strict: true }), async (req: Request, res: Response) => {
    const arrival = res.locals.arrival as Arrival;
    const treeName = String(req.params.tree);
    if (!isTreeName(treeName)) {
      res.status(404).json({ error: `unknown tree "${treeName}"; known trees: ${TREE_NAMES.join(', ')}` });
      metrics.requests.inc({ tree: 'unknown', status: '404' });
      logRejected(req, res, 404);
      return;
    }
    const parsed = runRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: `invalid request: ${describeIssues(parsed.error)}` });
      metrics.requests.inc({ tree: treeName, status: '400' });
      logRejected(req, res, 400);
      return;
    }
    const request = parsed.data;
    const startedAt = performance.now();
    const { tree, runner } = runnerFor(treeName, request);

    // A client that goes away aborts the run: the wrapper gets the signal and the mock
    // sees the provider connections close, so no permit is held for nobody.
    const abort = new AbortController();
    inFlight.add(abort);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });

    const run = tracer.startActiveSpan(`agent.run ${treeName}`, async (span) => {
      span.setAttributes({ 'agent.tree': treeName, 'agent.traffic_class': request.trafficClass });
      const events: Event[] = [];
      const { reports, result } = withCallReports(async () => {
        const session = await runner.sessionService.createSession({ appName: APP_NAME, userId: request.userId });
        try {
          for await (const event of runner.runAsync({
            userId: request.userId,
            sessionId: session.id,
            newMessage: { role: 'user', parts: [{ text: request.document }] },
            runConfig: { maxLlmCalls: tree.maxLlmCalls, streamingMode: config.streaming ? StreamingMode.SSE : StreamingMode.NONE },
            abortSignal: abort.signal,
          })) {
            events.push(event);
          }
        } finally {
          await runner.sessionService.deleteSession({ appName: APP_NAME, userId: request.userId, sessionId: session.id });
        }
      }, { trafficClass: request.trafficClass });
      let status = 200;
      // What the access-log line reports of the run (the rest comes from the request).
      let runSummary: Partial<AccessLogRecord> = {};
      try {
        await result;
        const usage = summarizeUsage(reports);
        const branches = fillMissingFromCallReports(collectBranchOutcomes(events, tree.branches), reports);
        for (const b of branches) metrics.branchOutcomes.inc({ tree: treeName, branch: b.name, outcome: b.outcome });
        metrics.modelCallsPerRequest.observe({ tree: treeName }, usage.modelCalls);
        const missingBranches = branches.filter((b) => b.outcome !== 'ok').map((b) => b.name);
        runSummary = { modelCalls: usage.modelCalls, missingBranches, permitWaitMs: usage.permitWaitMs, tokens: usage.tokens };
        span.setAttributes({ 'agent.model_calls': usage.modelCalls, 'agent.missing_branches': missingBranches.length });
        if (abort.signal.aborted) {
          status = 499; // client closed the request: nobody to answer
          return;
        }
        res.json({
          tree: treeName,
          text: finalText(events),
          branches: branches.map((b) => ({ name: b.name, outcome: b.outcome, ...(b.errorCode ? { errorCode: b.errorCode } : {}) })),
          missingBranches,
          modelCalls: usage.modelCalls,
          callsByOutcome: usage.callsByOutcome,
          tokens: usage.tokens,
          permitWaitMs: usage.permitWaitMs,
          permitWaitTotalMs: usage.permitWaitTotalMs,
          durationMs: Math.round(performance.now() - startedAt),
          trafficClass: request.trafficClass,
        });
      } catch (thrown) {
        // ADK rethrows non-Error values out of runAsync; Errors from outside the
        // model (session service, a bug) land here too. The wrapper released its permits.
        status = 500;
        runSummary = { modelCalls: reports.length };
        span.setStatus({ code: SpanStatusCode.ERROR, message: describeThrown(thrown) });
        const kind = thrown instanceof Error ? thrown.name : `non-Error value (${typeof thrown})`;
        if (!res.headersSent && !abort.signal.aborted) {
          res.status(500).json({
            error: `agent run of tree "${treeName}" failed: ${kind}: ${describeThrown(thrown)}`,
            modelCalls: reports.length,
          });
        }
      } finally {
        inFlight.delete(abort);
        metrics.requests.inc({ tree: treeName, status: String(status) });
        metrics.requestDuration.observe({ tree: treeName }, (performance.now() - startedAt) / 1000);
        span.setAttribute('http.response.status_code', status);
        span.end();
        accessLog?.write({
          ...sinceArrival(arrival),
          tree: treeName,
          documentChars: request.document.length,
          trafficClass: request.trafficClass,
          width: treeName === 'wide' ? request.width : null,
          ...(treeName === 'wide' ? { branches: request.branches } : {}),
          status,
          ...runSummary,
        });
      }
    });
    runs.add(run);
    try {
      await run;
    } finally {
      runs.delete(run);
    }
  });

  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found: the API is POST /v1/agents/{tree}/run, GET /healthz, GET /metrics' });
  });

  // Body-parser failures (malformed JSON, oversized body, wrong charset) carry a status.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const err = error as { status?: number; type?: string; message?: string };
    const status = typeof err.status === 'number' && err.status >= 400 && err.status < 600 ? err.status : 500;
    const message =
      err.type === 'entity.parse.failed'
        ? `malformed JSON body: ${err.message}`
        : err.type === 'entity.too.large'
          ? `request body too large: the limit is ${MAX_BODY_BYTES} bytes`
          : (err.message ?? 'internal error');
    if (!res.headersSent) res.status(status).json({ error: message });
    logRejected(req, res, status); // only run requests carry an arrival stamp
  });

  const server: Server = app.listen(config.port, config.host);
  try {
    await once(server, 'listening');
  } catch (error) {
    await limiter.close();
    await ownAccessLog?.close();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host === '0.0.0.0' ? '127.0.0.1' : config.host;

  return {
    url: `http://${hostForUrl}:${port}`,
    port,
    limiter,
    registry,
    async close() {
      for (const abort of inFlight) abort.abort(new Error('agent service closing'));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      if (runs.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CLOSE_GRACE_MS);
        });
        await Promise.race([Promise.allSettled([...runs]), grace]);
        clearTimeout(timer);
      }
      await limiter.close();
      await ownAccessLog?.close(); // after the aborted runs wrote their lines
    },
  };
}
