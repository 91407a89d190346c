// The native run endpoint, POST /v1/agents/{name}/run, and its listing, GET /v1/agents,
// which mountNativeRun puts on the agent service (the sample trees) and on `serve` (a user's
// tree). A run runs the tree for one document in a fresh session and answers with the text
// plus what the run cost: branch outcomes per author, model calls, tokens and the longest
// permit wait.
import { type Event, isFinalResponse, type Runner, StreamingMode, stringifyContent } from '@google/adk';
import type { Content } from '@google/genai';
import { type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { type AccessLog, type AccessLogRecord, type Arrival, arrivalNow, sinceArrival } from './access-log.ts';
import { RequestShed } from '../instrumentation/errors.ts';
import type { RequestAdmission } from '../instrumentation/admission/request-admission.ts';
import type { AgentMetrics } from './metrics.ts';
import { type BranchResult, collectBranchOutcomes, fillMissingFromCallReports } from './outcomes.ts';
import { jsonBody } from './json-body.ts';
import { describeIssues, type RunRequest, runRequestSchema } from './request-schema.ts';
import { type CallReportLike, type RequestUsage, summarizeUsage, withCallReports } from './run-context.ts';
import { clientLeft, type RunsInFlight, ServiceClosing } from './runs-in-flight.ts';
import { answerShedNative } from './shed-response.ts';
import type { PublishedAgent } from './tree-shapes.ts';

const tracer = trace.getTracer('quotascope-agent');

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
  /** The app's runs in flight: a run is aborted by its client going away and by the app's close(). */
  readonly runs: RunsInFlight;
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

/** One native run request being served. */
interface NativeRun {
  readonly name: string;
  readonly request: RunRequest;
  readonly target: NativeRunTarget;
  readonly arrival: Arrival;
  readonly startedAt: number;
  readonly abort: AbortController;
  /** The run's events as they come. */
  readonly events: Event[];
}

/** How a run ended: its HTTP status and what its access-log line reports of the run (the rest comes from the request). */
interface RunEnd {
  readonly status: number;
  readonly summary: Partial<AccessLogRecord>;
}

/** The name and valid body of a run request; answers 404 (name not served) or 400 (bad body) itself and returns undefined then. */
function acceptedRequest(host: NativeRunHost, req: Request, res: Response): { name: string; request: RunRequest } | undefined {
  const name = String(req.params.name);
  const notFound = host.unknown(name);
  if (notFound !== undefined) {
    res.status(404).json({ error: notFound });
    host.metrics.requests.inc({ tree: 'unknown', status: '404' });
    logRejected(host.accessLog, req, res, 404);
    return undefined;
  }
  const parsed = runRequestSchema.safeParse(req.body);
  if (!parsed.success) {
    res.status(400).json({ error: `invalid request: ${describeIssues(parsed.error)}` });
    host.metrics.requests.inc({ tree: name, status: '400' });
    logRejected(host.accessLog, req, res, 400);
    return undefined;
  }
  return { name, request: parsed.data };
}

/** The user message a native run sends: the request's document. */
function messageOf(run: NativeRun): Content {
  return { role: 'user', parts: [{ text: run.request.document }] };
}

/** Runs the tree once for the request's document in a fresh session, collecting its events. */
async function runTree(host: NativeRunHost, run: NativeRun): Promise<void> {
  const { runner, appName } = run.target;
  const { userId } = run.request;
  const session = await runner.sessionService.createSession({ appName, userId });
  try {
    for await (const event of runner.runAsync({
      userId,
      sessionId: session.id,
      newMessage: messageOf(run),
      runConfig: {
        ...(run.target.maxLlmCalls === undefined ? {} : { maxLlmCalls: run.target.maxLlmCalls }),
        streamingMode: host.streaming ? StreamingMode.SSE : StreamingMode.NONE,
      },
      abortSignal: run.abort.signal,
    })) {
      run.events.push(event);
    }
  } finally {
    await runner.sessionService.deleteSession({ appName, userId, sessionId: session.id });
  }
}

/** A run that finished: its outcome counted, answered 200 (503 when close() aborted it; nothing when the client left). */
function answerFinished(host: NativeRunHost, run: NativeRun, reports: readonly CallReportLike[], res: Response, span: Span): RunEnd {
  const { name, request, abort } = run;
  const { usage, branches, missingBranches } = recordRunOutcome(host.metrics, name, run.events, run.target.branches, reports);
  const summary = { modelCalls: usage.modelCalls, missingBranches, permitWaitMs: usage.permitWaitMs, tokens: usage.tokens };
  span.setAttributes({ 'agent.model_calls': usage.modelCalls, 'agent.missing_branches': missingBranches.length });
  const closing = abort.signal.reason instanceof ServiceClosing;
  if (abort.signal.aborted && !closing) return { status: 499, summary }; // client closed the request: nobody to answer
  const status = closing ? 503 : 200;
  res.status(status).json({
    ...(closing ? { error: closingMessage(name) } : {}),
    tree: name,
    text: finalText(run.events, run.target.finalAuthor),
    branches: branches.map((b) => ({ name: b.name, outcome: b.outcome, ...(b.errorCode ? { errorCode: b.errorCode } : {}) })),
    missingBranches,
    modelCalls: usage.modelCalls,
    callsByOutcome: usage.callsByOutcome,
    tokens: usage.tokens,
    permitWaitMs: usage.permitWaitMs,
    permitWaitTotalMs: usage.permitWaitTotalMs,
    durationMs: Math.round(performance.now() - run.startedAt),
    trafficClass: request.trafficClass,
  });
  return { status, summary };
}

/** A run that threw: shed at the door (429), aborted by close() (503), or failed (500). */
function answerFailed(run: NativeRun, reports: readonly CallReportLike[], thrown: unknown, res: Response, span: Span): RunEnd {
  const { name, abort } = run;
  if (thrown instanceof RequestShed) {
    // Shed whole at the door: nothing ran, nothing was spent.
    if (!res.headersSent && !abort.signal.aborted) answerShedNative(res, thrown);
    return { status: 429, summary: { modelCalls: 0 } };
  }
  // ADK rethrows non-Error values out of runAsync; Errors from outside the model
  // (session service, a bug) land here too. The wrapper released its permits.
  const summary = { modelCalls: reports.length };
  span.setStatus({ code: SpanStatusCode.ERROR, message: describeThrown(thrown) });
  const kind = thrown instanceof Error ? thrown.name : `non-Error value (${typeof thrown})`;
  if (!res.headersSent && abort.signal.reason instanceof ServiceClosing) {
    res.status(503).json({ error: closingMessage(name), modelCalls: reports.length });
    return { status: 503, summary };
  }
  // The client went away (while waiting at the door, or mid-run): nobody to answer, 499 like any client that left.
  if (clientLeft(abort.signal)) return { status: 499, summary };
  if (!res.headersSent && !abort.signal.aborted) {
    res.status(500).json({ error: `agent run of tree "${name}" failed: ${kind}: ${describeThrown(thrown)}`, modelCalls: reports.length });
  }
  return { status: 500, summary };
}

/** The ended run in the metrics, its span and the access log. */
function recordEnd(host: NativeRunHost, run: NativeRun, end: RunEnd, span: Span): void {
  const { name, request } = run;
  host.metrics.requests.inc({ tree: name, status: String(end.status) });
  host.metrics.requestDuration.observe({ tree: name }, (performance.now() - run.startedAt) / 1000);
  span.setAttribute('http.response.status_code', end.status);
  span.end();
  host.accessLog?.write({
    ...sinceArrival(run.arrival),
    tree: name,
    documentChars: request.document.length,
    trafficClass: request.trafficClass,
    width: null,
    ...run.target.logFields,
    status: end.status,
    ...end.summary,
  });
}

/** Runs the tree (admitted whole at the door when admission is on), answers and records the run. */
async function serveRun(host: NativeRunHost, run: NativeRun, res: Response, span: Span): Promise<void> {
  span.setAttributes({ 'agent.tree': run.name, 'agent.traffic_class': run.request.trafficClass });
  const { runner } = run.target;
  const { admission } = host;
  const options = { lane: run.request.trafficClass, signal: run.abort.signal, arrivedAt: run.startedAt, message: messageOf(run) };
  const { reports, result } = withCallReports(() => (admission ? admission.run(runner.agent, () => runTree(host, run), options) : runTree(host, run)), {
    trafficClass: run.request.trafficClass,
  });
  let end: RunEnd = { status: 200, summary: {} };
  try {
    await result;
    end = answerFinished(host, run, reports, res, span);
  } catch (thrown) {
    end = answerFailed(run, reports, thrown, res, span);
  } finally {
    host.runs.end(run.abort);
    recordEnd(host, run, end, span);
  }
}

/** The handler of POST /v1/agents/:name/run (after stampArrival and express.json). */
export function nativeRunHandler(host: NativeRunHost): RequestHandler {
  return async (req: Request, res: Response) => {
    const arrival = res.locals.arrival as Arrival;
    const accepted = acceptedRequest(host, req, res);
    if (!accepted) return;
    const { name, request } = accepted;
    const startedAt = performance.now();
    const target = host.resolve(name, request);
    const run: NativeRun = { name, request, target, arrival, startedAt, abort: host.runs.begin(res), events: [] };
    await host.runs.track(tracer.startActiveSpan(`agent.run ${name}`, (span) => serveRun(host, run, res, span)));
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
  app.post('/v1/agents/:name/run', stampArrival, ...jsonBody(), nativeRunHandler(host));
}
