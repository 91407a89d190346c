// The native run endpoint, POST /v1/agents/{name}/run, and its listing, GET /v1/agents,
// which mountNativeRun puts on the agent service (the sample trees) and on `serve` (a user's
// tree). A run runs the tree for one document in a fresh session and answers with the text
// plus what the run cost: branch outcomes per author, model calls, tokens and the longest
// permit wait.
import { type Event, isFinalResponse, type Runner, StreamingMode, stringifyContent } from '@google/adk';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type AccessLog, type AccessLogRecord, type Arrival, arrivalNow, sinceArrival } from './access-log.ts';
import { RequestShed } from '../instrumentation/errors.ts';
import type { RequestAdmission } from '../instrumentation/request-admission.ts';
import type { AgentMetrics } from './metrics.ts';
import { type BranchResult, collectBranchOutcomes, fillMissingFromCallReports } from './outcomes.ts';
import { describeIssues, MAX_BODY_BYTES, type RunRequest, runRequestSchema } from './request-schema.ts';
import { type CallReportLike, type RequestUsage, summarizeUsage, withCallReports } from './run-context.ts';
import { answerShedNative } from './shed-response.ts';
import type { PublishedAgent } from './tree-shapes.ts';

const tracer = trace.getTracer('quotascope-agent');

/** The abort reason of a run that the host's close() ended after its grace period. */
export class ServiceClosing extends Error {
  override name = 'ServiceClosing';
}

/** The answer of a run that close() aborted: the client learns why, with what the run got done. */
function closingMessage(name: string): string {
  return `agent service shutting down: the run of tree "${name}" was aborted`;
}

/** What one run request runs. */
export interface NativeRunTarget {
  readonly runner: Runner;
  readonly appName: string;
  /** Names of the agents whose outcome the response reports, in order. */
  readonly branches: readonly string[];
  /** RunConfig.maxLlmCalls (ADK's default when undefined). */
  readonly maxLlmCalls?: number;
  /** Author of the answer text; undefined: the last final response of any author. */
  readonly finalAuthor?: string;
  /** Access-log fields of this request beyond the common ones (the `wide` shape). */
  readonly logFields?: Partial<AccessLogRecord>;
}

export interface NativeRunHost {
  readonly metrics: AgentMetrics;
  readonly accessLog: AccessLog | undefined;
  /** Stream model responses (SSE model calls). */
  readonly streaming: boolean;
  /** Aborted by the host's close(). */
  readonly inFlight: Set<AbortController>;
  /** Run handlers still going: close() lets aborted runs finish writing their log lines. */
  readonly runs: Set<Promise<void>>;
  /** The 404 message for a name that is not served; undefined when it is. */
  unknown(name: string): string | undefined;
  /** The target of a served name for this request. */
  resolve(name: string, request: RunRequest): NativeRunTarget;
  /** Admits each run whole at the door or sheds it (429); undefined: model calls are admitted one by one. */
  readonly admission?: RequestAdmission;
}

function finalText(events: readonly Event[], author: string | undefined): string {
  let text = '';
  for (const event of events) {
    if ((author === undefined || event.author === author) && !event.partial && isFinalResponse(event) && event.errorCode === undefined) {
      text = stringifyContent(event);
    }
  }
  return text;
}

/** A thrown value as readable text: non-Error throws (objects, strings) included. */
export function describeThrown(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/**
 * A finished run's branch outcomes (per author, from its events and the limiter's call
 * reports) and usage, counted in the agent_* metrics of `name`.
 */
export function recordRunOutcome(
  metrics: AgentMetrics,
  name: string,
  events: readonly Event[],
  branchNames: readonly string[],
  reports: readonly CallReportLike[],
): { usage: RequestUsage; branches: BranchResult[]; missingBranches: string[] } {
  const usage = summarizeUsage(reports);
  const branches = fillMissingFromCallReports(collectBranchOutcomes(events, branchNames), reports);
  for (const b of branches) metrics.branchOutcomes.inc({ tree: name, branch: b.name, outcome: b.outcome });
  metrics.modelCallsPerRequest.observe({ tree: name }, usage.modelCalls);
  return { usage, branches, missingBranches: branches.filter((b) => b.outcome !== 'ok').map((b) => b.name) };
}

/** Stamped before the body is read, so the access log has the time the request arrived. */
export function stampArrival(_req: Request, res: Response, next: NextFunction): void {
  res.locals.arrival = arrivalNow();
  next();
}

/** Access-log line of a run request answered without running a tree (no `tree`: not replayed). */
export function logRejected(accessLog: AccessLog | undefined, req: Request, res: Response, status: number): void {
  const arrival = res.locals.arrival as Arrival | undefined;
  if (accessLog && arrival) accessLog.write({ ...sinceArrival(arrival), path: req.path, status });
}

/** The handler of POST /v1/agents/:name/run (after stampArrival and express.json). */
export function nativeRunHandler(host: NativeRunHost): RequestHandler {
  const { metrics, accessLog } = host;
  return async (req: Request, res: Response) => {
    const arrival = res.locals.arrival as Arrival;
    const name = String(req.params.name);
    const notFound = host.unknown(name);
    if (notFound !== undefined) {
      res.status(404).json({ error: notFound });
      metrics.requests.inc({ tree: 'unknown', status: '404' });
      logRejected(accessLog, req, res, 404);
      return;
    }
    const parsed = runRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: `invalid request: ${describeIssues(parsed.error)}` });
      metrics.requests.inc({ tree: name, status: '400' });
      logRejected(accessLog, req, res, 400);
      return;
    }
    const request = parsed.data;
    const startedAt = performance.now();
    const target = host.resolve(name, request);
    const { runner, appName } = target;

    // A client that goes away aborts the run: the wrapper gets the signal and the provider
    // sees its connections close, so no permit is held for nobody.
    const abort = new AbortController();
    host.inFlight.add(abort);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });

    const run = tracer.startActiveSpan(`agent.run ${name}`, async (span) => {
      span.setAttributes({ 'agent.tree': name, 'agent.traffic_class': request.trafficClass });
      const events: Event[] = [];
      const runTree = async () => {
        const session = await runner.sessionService.createSession({ appName, userId: request.userId });
        try {
          for await (const event of runner.runAsync({
            userId: request.userId,
            sessionId: session.id,
            newMessage: { role: 'user', parts: [{ text: request.document }] },
            runConfig: {
              ...(target.maxLlmCalls === undefined ? {} : { maxLlmCalls: target.maxLlmCalls }),
              streamingMode: host.streaming ? StreamingMode.SSE : StreamingMode.NONE,
            },
            abortSignal: abort.signal,
          })) {
            events.push(event);
          }
        } finally {
          await runner.sessionService.deleteSession({ appName, userId: request.userId, sessionId: session.id });
        }
      };
      const admission = host.admission;
      const { reports, result } = withCallReports(
        () =>
          admission
            ? admission.run(runner.agent, runTree, { lane: request.trafficClass, signal: abort.signal, arrivedAt: startedAt })
            : runTree(),
        { trafficClass: request.trafficClass },
      );
      let status = 200;
      // What the access-log line reports of the run (the rest comes from the request).
      let runSummary: Partial<AccessLogRecord> = {};
      try {
        await result;
        const { usage, branches, missingBranches } = recordRunOutcome(metrics, name, events, target.branches, reports);
        runSummary = { modelCalls: usage.modelCalls, missingBranches, permitWaitMs: usage.permitWaitMs, tokens: usage.tokens };
        span.setAttributes({ 'agent.model_calls': usage.modelCalls, 'agent.missing_branches': missingBranches.length });
        const closing = abort.signal.reason instanceof ServiceClosing;
        if (abort.signal.aborted && !closing) {
          status = 499; // client closed the request: nobody to answer
          return;
        }
        status = closing ? 503 : 200;
        res.status(status).json({
          ...(closing ? { error: closingMessage(name) } : {}),
          tree: name,
          text: finalText(events, target.finalAuthor),
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
        if (thrown instanceof RequestShed) {
          // Shed whole at the door: nothing ran, nothing was spent.
          status = 429;
          runSummary = { modelCalls: 0 };
          if (!res.headersSent && !abort.signal.aborted) answerShedNative(res, thrown);
          return;
        }
        // ADK rethrows non-Error values out of runAsync; Errors from outside the model
        // (session service, a bug) land here too. The wrapper released its permits.
        status = 500;
        runSummary = { modelCalls: reports.length };
        span.setStatus({ code: SpanStatusCode.ERROR, message: describeThrown(thrown) });
        const kind = thrown instanceof Error ? thrown.name : `non-Error value (${typeof thrown})`;
        if (!res.headersSent && abort.signal.reason instanceof ServiceClosing) {
          status = 503;
          res.status(503).json({ error: closingMessage(name), modelCalls: reports.length });
        } else if (!res.headersSent && !abort.signal.aborted) {
          res.status(500).json({
            error: `agent run of tree "${name}" failed: ${kind}: ${describeThrown(thrown)}`,
            modelCalls: reports.length,
          });
        }
      } finally {
        host.inFlight.delete(abort);
        metrics.requests.inc({ tree: name, status: String(status) });
        metrics.requestDuration.observe({ tree: name }, (performance.now() - startedAt) / 1000);
        span.setAttribute('http.response.status_code', status);
        span.end();
        accessLog?.write({
          ...sinceArrival(arrival),
          tree: name,
          documentChars: request.document.length,
          trafficClass: request.trafficClass,
          width: null,
          ...target.logFields,
          status,
          ...runSummary,
        });
      }
    });
    host.runs.add(run);
    try {
      await run;
    } finally {
      host.runs.delete(run);
    }
  };
}

/** What GET /v1/agents lists: the names served and each one's published model-call count. */
export interface NativeAgentList {
  readonly trees: readonly string[];
  readonly agents: readonly PublishedAgent[];
}

/** The native routes on `app`: GET /v1/agents and POST /v1/agents/{name}/run. */
export function mountNativeRun(app: Express, list: NativeAgentList, host: NativeRunHost): void {
  app.get('/v1/agents', (_req, res) => {
    res.json(list);
  });
  app.post('/v1/agents/:name/run', stampArrival, express.json({ limit: MAX_BODY_BYTES, strict: true }), nativeRunHandler(host));
}
