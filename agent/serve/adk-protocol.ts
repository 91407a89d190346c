// ADK's API-server protocol for one app, the routes `adk api_server` serves in every ADK
// language: GET /list-apps; sessions under /apps/{app}/users/{user}/sessions[/{id}]; POST
// /run (the run's events as one JSON array) and POST /run_sse (text/event-stream, one
// `data: <event>` per event; `streaming: true` asks for partial chunks). Field names are
// camelCase. Every body is validated (state bounded in depth and size before anything stores
// it); a missing app or session answers 404 before any run. Errors are ADK's `{ error }`.
import { type Event, type Runner, StreamingMode } from '@google/adk';
import { type Request, type RequestHandler, type Response, Router } from 'express';
import { z } from 'zod';
import { RequestShed } from '../../instrumentation/errors.ts';
import type { RequestAdmission } from '../../instrumentation/admission/request-admission.ts';
import type { AgentMetrics } from '../metrics.ts';
import { describeThrown, recordRunOutcome } from '../native-run.ts';
import { jsonBody } from '../json-body.ts';
import { describeIssues, MAX_DOCUMENT_CHARS } from '../request-schema.ts';
import { withCallReports } from '../run-context.ts';
import { clientLeft, type RunsInFlight } from '../runs-in-flight.ts';
import { answerShedAdk } from '../shed-response.ts';
import { checkStateDepth, sessionStateSchema, stateAfterDeltaProblem } from './session-state.ts';
import { BoundedSessionService, SessionLimitError } from './sessions.ts';

const id = (what: string) => z.string().min(1, `${what} must not be empty`).max(128);

const stateSchema = sessionStateSchema;

export const createSessionSchema = z.object({
  /** Initial session state. */
  state: stateSchema.optional(),
});

/** The body of POST /run and POST /run_sse. Unknown fields (e.g. Python's invocationId) are ignored. */
export const adkRunRequestSchema = z.object({
  appName: id('appName'),
  userId: id('userId'),
  sessionId: id('sessionId'),
  newMessage: z.object({
    role: z.literal('user').default('user'),
    parts: z
      .array(z.looseObject({ text: z.string().max(MAX_DOCUMENT_CHARS).optional() }).superRefine((part, ctx) => void checkStateDepth(part, ctx)))
      .min(1, 'needs at least one part'),
  }),
  /** /run_sse: partial chunks as they stream (the model calls use SSE). */
  streaming: z.boolean().default(false),
  stateDelta: stateSchema.optional(),
});
export type AdkRunRequest = z.infer<typeof adkRunRequestSchema>;

export interface AdkProtocolHost {
  readonly appName: string;
  readonly runner: Runner;
  readonly metrics: AgentMetrics;
  /** Agents whose outcomes the agent_branch_outcomes_total metric counts per run. */
  readonly branches: readonly string[];
  /** The app's runs in flight: a run is aborted by its client going away and by the app's close(). */
  readonly runs: RunsInFlight;
  /** Admits each run whole at the door or sheds it (429); undefined: model calls are admitted one by one. */
  readonly admission?: RequestAdmission;
}

function badRequest(res: Response, error: z.ZodError | string): void {
  res.status(400).json({ error: `invalid request: ${typeof error === 'string' ? error : describeIssues(error)}` });
}

/** Creates a session; a full store whose sessions are all running answers 503 (and undefined). */
async function createSessionOr503(sessions: Runner['sessionService'], res: Response, request: Parameters<Runner['sessionService']['createSession']>[0]) {
  try {
    return await sessions.createSession(request);
  } catch (error) {
    if (!(error instanceof SessionLimitError)) throw error;
    res.status(503).json({ error: `session limit reached: ${error.message}` });
    return undefined;
  }
}

/** Function call ids the session's events asked for. */
function functionCallIds(events: readonly Event[]): Set<string> {
  const ids = new Set<string>();
  for (const event of events) for (const part of event.content?.parts ?? []) if (part.functionCall?.id) ids.add(part.functionCall.id);
  return ids;
}

/** A functionResponse part must answer a function call of this session (ADK throws deep in the run otherwise); the bad field, or undefined. */
function unansweredFunctionResponse(run: AdkRunRequest, events: readonly Event[]): string | undefined {
  const asked = functionCallIds(events);
  for (const [index, part] of run.newMessage.parts.entries()) {
    if (part.functionResponse === undefined) continue;
    const response = part.functionResponse as { id?: unknown; name?: unknown } | null;
    const field = `newMessage.parts.${index}.functionResponse`;
    if (typeof response?.id !== 'string' || typeof response.name !== 'string') return `${field}: needs the id and name of the function call it answers`;
    if (!asked.has(response.id)) return `${field}: answers no function call of session ${run.sessionId} (id "${response.id}")`;
  }
  return undefined;
}

/** What every route of the protocol uses: the host, its session store and the body parser. */
interface Protocol {
  readonly host: AdkProtocolHost;
  readonly sessions: Runner['sessionService'];
  readonly json: RequestHandler[];
}

/** Answers 404 for an app this server does not serve (true then). */
function unknownApp(protocol: Protocol, res: Response, name: string): boolean {
  const { appName } = protocol.host;
  if (name === appName) return false;
  res.status(404).json({ error: `app not found: "${name}"; this server serves "${appName}"` });
  return true;
}

const pathIds = z.object({ app: z.string(), user: id('user'), session: id('session').optional() });

/** The ids of a session route's path; answers 400 (bad id) or 404 (other app) itself and returns undefined then. */
function parsePath(protocol: Protocol, req: Request, res: Response) {
  const parsed = pathIds.safeParse(req.params);
  if (!parsed.success) {
    badRequest(res, parsed.error);
    return undefined;
  }
  return unknownApp(protocol, res, parsed.data.app) ? undefined : parsed.data;
}

/** Creating a session: POST /apps/{app}/users/{user}/sessions[/{id}] (an id that exists answers 400). */
function mountSessionCreation(router: Router, protocol: Protocol): void {
  const { sessions, json } = protocol;
  const { appName } = protocol.host;
  router.post('/apps/:app/users/:user/sessions', ...json, async (req, res) => {
    const path = parsePath(protocol, req, res);
    if (!path) return;
    const body = createSessionSchema.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const session = await createSessionOr503(sessions, res, { appName, userId: path.user, state: body.data.state ?? {} });
    if (session) res.json(session);
  });

  router.post('/apps/:app/users/:user/sessions/:session', ...json, async (req, res) => {
    const path = parsePath(protocol, req, res);
    if (!path) return;
    const body = createSessionSchema.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const sessionId = path.session as string;
    if (await sessions.getSession({ appName, userId: path.user, sessionId })) {
      res.status(400).json({ error: `session already exists: ${sessionId}` });
      return;
    }
    const session = await createSessionOr503(sessions, res, { appName, userId: path.user, sessionId, state: body.data.state ?? {} });
    if (session) res.json(session);
  });
}

/** Reading and deleting sessions: GET /apps/{app}/users/{user}/sessions[/{id}], DELETE .../sessions/{id}. */
function mountSessionAccess(router: Router, protocol: Protocol): void {
  const { sessions } = protocol;
  const { appName } = protocol.host;
  router.get('/apps/:app/users/:user/sessions', async (req, res) => {
    const path = parsePath(protocol, req, res);
    if (!path) return;
    res.json(await sessions.listSessions({ appName, userId: path.user }));
  });

  router.get('/apps/:app/users/:user/sessions/:session', async (req, res) => {
    const path = parsePath(protocol, req, res);
    if (!path) return;
    const session = await sessions.getSession({ appName, userId: path.user, sessionId: path.session as string });
    if (!session) {
      res.status(404).json({ error: `session not found: ${path.session}` });
      return;
    }
    res.json(session);
  });

  router.delete('/apps/:app/users/:user/sessions/:session', async (req, res) => {
    const path = parsePath(protocol, req, res);
    if (!path) return;
    const sessionId = path.session as string;
    if (!(await sessions.getSession({ appName, userId: path.user, sessionId }))) {
      res.status(404).json({ error: `session not found: ${sessionId}` });
      return;
    }
    await sessions.deleteSession({ appName, userId: path.user, sessionId });
    res.status(204).end();
  });
}

/** Validates the run body and finds its session; answers 400/404 itself and returns undefined then. */
async function prepareRun(protocol: Protocol, req: Request, res: Response): Promise<AdkRunRequest | undefined> {
  const { sessions } = protocol;
  const { appName, metrics } = protocol.host;
  const parsed = adkRunRequestSchema.safeParse(req.body);
  if (!parsed.success) {
    badRequest(res, parsed.error);
    metrics.requests.inc({ tree: appName, status: '400' });
    return undefined;
  }
  const run = parsed.data;
  if (unknownApp(protocol, res, run.appName)) {
    metrics.requests.inc({ tree: 'unknown', status: '404' });
    return undefined;
  }
  const session = await sessions.getSession({ appName, userId: run.userId, sessionId: run.sessionId });
  if (!session) {
    res.status(404).json({ error: `session not found: ${run.sessionId}` });
    metrics.requests.inc({ tree: appName, status: '404' });
    return undefined;
  }
  const unanswered = unansweredFunctionResponse(run, session.events) ?? stateAfterDeltaProblem(session.state, run.stateDelta);
  if (unanswered) {
    badRequest(res, unanswered);
    metrics.requests.inc({ tree: appName, status: '400' });
    return undefined;
  }
  // In use until the response ends: never evicted mid-run.
  if (sessions instanceof BoundedSessionService) res.on('close', sessions.hold(appName, run.userId, run.sessionId));
  return run;
}

/** Runs the agent for one request, handing each event to `onEvent`; records the metrics and returns the status. */
async function execute(host: AdkProtocolHost, run: AdkRunRequest, res: Response, streaming: boolean, onEvent: (event: Event) => void): Promise<number> {
  const { appName, runner, metrics, admission } = host;
  const abort = host.runs.begin(res);
  const startedAt = performance.now();
  const events: Event[] = [];
  const runTree = async () => {
    for await (const event of runner.runAsync({
      userId: run.userId,
      sessionId: run.sessionId,
      newMessage: run.newMessage,
      stateDelta: run.stateDelta,
      runConfig: { streamingMode: streaming ? StreamingMode.SSE : StreamingMode.NONE },
      abortSignal: abort.signal,
    })) {
      events.push(event);
      onEvent(event);
    }
  };
  const { reports, result } = withCallReports(() => (admission ? admission.run(runner.agent, runTree, { signal: abort.signal, arrivedAt: startedAt, message: run.newMessage }) : runTree()));
  let status = 200;
  const done = (async () => {
    try {
      await result;
      recordRunOutcome(metrics, appName, events, host.branches, reports);
      if (abort.signal.aborted) status = 499;
    } catch (thrown) {
      // A client that left (at the door or mid-run) is 499, as in the agent service.
      status = thrown instanceof RequestShed ? 429 : clientLeft(abort.signal) ? 499 : 500;
      throw thrown;
    } finally {
      host.runs.end(abort);
      metrics.requests.inc({ tree: appName, status: String(status) });
      metrics.requestDuration.observe({ tree: appName }, (performance.now() - startedAt) / 1000);
    }
  })();
  await host.runs.track(done);
  return status;
}

/** POST /run: the run's events as one JSON array. */
function mountRun(router: Router, protocol: Protocol): void {
  router.post('/run', ...protocol.json, async (req, res) => {
    const run = await prepareRun(protocol, req, res);
    if (!run) return;
    const events: Event[] = [];
    try {
      const status = await execute(protocol.host, run, res, false, (event) => events.push(event));
      if (status === 200) res.json(events);
    } catch (thrown) {
      if (res.headersSent) return;
      if (thrown instanceof RequestShed) answerShedAdk(res, thrown);
      else res.status(500).json({ error: `failed to run agent: ${describeThrown(thrown)}` });
    }
  });
}

/** POST /run_sse: one `data: <event>` frame per event; an error after the 200 travels as a frame. */
function mountRunSse(router: Router, protocol: Protocol): void {
  router.post('/run_sse', ...protocol.json, async (req, res) => {
    const run = await prepareRun(protocol, req, res);
    if (!run) return;
    // The stream opens with the run's first event, so a request shed at the door still gets its 429.
    const open = () => {
      if (res.headersSent) return;
      res.setHeader('cache-control', 'no-cache');
      res.setHeader('content-type', 'text/event-stream');
      res.flushHeaders();
    };
    try {
      await execute(protocol.host, run, res, run.streaming, (event) => {
        open();
        res.write(`data: ${JSON.stringify(event)}\n\n`);
      });
      open();
      res.end();
    } catch (thrown) {
      if (thrown instanceof RequestShed && !res.headersSent) {
        answerShedAdk(res, thrown);
        return;
      }
      // The 200 is already sent: the error travels as a data frame, as ADK's servers do.
      open();
      res.end(`data: ${JSON.stringify({ error: describeThrown(thrown) })}\n\n`);
    }
  });
}

export function adkProtocolRouter(host: AdkProtocolHost): Router {
  const protocol: Protocol = { host, sessions: host.runner.sessionService, json: jsonBody() };
  const router = Router();
  router.get('/list-apps', (_req, res) => {
    res.json([host.appName]);
  });
  mountSessionCreation(router, protocol);
  mountSessionAccess(router, protocol);
  mountRun(router, protocol);
  mountRunSse(router, protocol);
  return router;
}
