// ADK's API-server protocol for one app, the routes `adk api_server` serves in every ADK
// language: GET /list-apps; sessions under /apps/{app}/users/{user}/sessions[/{id}]; POST
// /run (the run's events as one JSON array) and POST /run_sse (text/event-stream, one
// `data: <event>` per event; `streaming: true` asks for partial chunks). Field names are
// camelCase. Every body is validated; a missing app or session answers 404 before any run.
import { type Event, type Runner, StreamingMode } from '@google/adk';
import express, { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { RequestShed } from '../../instrumentation/errors.ts';
import type { RequestAdmission } from '../../instrumentation/request-admission.ts';
import type { AgentMetrics } from '../metrics.ts';
import { describeThrown, recordRunOutcome } from '../native-run.ts';
import { describeIssues, MAX_BODY_BYTES, MAX_DOCUMENT_CHARS } from '../request-schema.ts';
import { withCallReports } from '../run-context.ts';
import { answerShedAdk } from '../shed-response.ts';

const id = (what: string) => z.string().min(1, `${what} must not be empty`).max(128);

const stateSchema = z.record(z.string(), z.unknown());

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
      .array(z.looseObject({ text: z.string().max(MAX_DOCUMENT_CHARS).optional() }))
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
  /** Aborted by the host's close(). */
  readonly inFlight: Set<AbortController>;
  readonly runs: Set<Promise<void>>;
  /** Admits each run whole at the door or sheds it (429); undefined: model calls are admitted one by one. */
  readonly admission?: RequestAdmission;
}

function badRequest(res: Response, error: z.ZodError): void {
  res.status(400).json({ error: `invalid request: ${describeIssues(error)}` });
}

export function adkProtocolRouter(host: AdkProtocolHost): Router {
  const { appName, runner, metrics } = host;
  const sessions = runner.sessionService;
  const router = Router();
  const json = express.json({ limit: MAX_BODY_BYTES, strict: true });

  const unknownApp = (res: Response, name: string): boolean => {
    if (name === appName) return false;
    res.status(404).json({ error: `app not found: "${name}"; this server serves "${appName}"` });
    return true;
  };
  const pathIds = z.object({ app: z.string(), user: id('user'), session: id('session').optional() });
  const parsePath = (req: Request, res: Response) => {
    const parsed = pathIds.safeParse(req.params);
    if (!parsed.success) {
      badRequest(res, parsed.error);
      return undefined;
    }
    return unknownApp(res, parsed.data.app) ? undefined : parsed.data;
  };

  router.get('/list-apps', (_req, res) => {
    res.json([appName]);
  });

  router.post('/apps/:app/users/:user/sessions', json, async (req, res) => {
    const path = parsePath(req, res);
    if (!path) return;
    const body = createSessionSchema.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    res.json(await sessions.createSession({ appName, userId: path.user, state: body.data.state ?? {} }));
  });

  router.post('/apps/:app/users/:user/sessions/:session', json, async (req, res) => {
    const path = parsePath(req, res);
    if (!path) return;
    const body = createSessionSchema.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const sessionId = path.session as string;
    if (await sessions.getSession({ appName, userId: path.user, sessionId })) {
      res.status(400).json({ error: `session already exists: ${sessionId}` });
      return;
    }
    res.json(await sessions.createSession({ appName, userId: path.user, sessionId, state: body.data.state ?? {} }));
  });

  router.get('/apps/:app/users/:user/sessions', async (req, res) => {
    const path = parsePath(req, res);
    if (!path) return;
    res.json(await sessions.listSessions({ appName, userId: path.user }));
  });

  router.get('/apps/:app/users/:user/sessions/:session', async (req, res) => {
    const path = parsePath(req, res);
    if (!path) return;
    const session = await sessions.getSession({ appName, userId: path.user, sessionId: path.session as string });
    if (!session) {
      res.status(404).json({ error: `session not found: ${path.session}` });
      return;
    }
    res.json(session);
  });

  router.delete('/apps/:app/users/:user/sessions/:session', async (req, res) => {
    const path = parsePath(req, res);
    if (!path) return;
    const sessionId = path.session as string;
    if (!(await sessions.getSession({ appName, userId: path.user, sessionId }))) {
      res.status(404).json({ error: `session not found: ${sessionId}` });
      return;
    }
    await sessions.deleteSession({ appName, userId: path.user, sessionId });
    res.status(204).end();
  });

  /** Validates the run body and finds its session; answers 400/404 itself and returns undefined then. */
  async function prepareRun(req: Request, res: Response): Promise<AdkRunRequest | undefined> {
    const parsed = adkRunRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      badRequest(res, parsed.error);
      metrics.requests.inc({ tree: appName, status: '400' });
      return undefined;
    }
    const run = parsed.data;
    if (unknownApp(res, run.appName)) {
      metrics.requests.inc({ tree: 'unknown', status: '404' });
      return undefined;
    }
    if (!(await sessions.getSession({ appName, userId: run.userId, sessionId: run.sessionId }))) {
      res.status(404).json({ error: `session not found: ${run.sessionId}` });
      metrics.requests.inc({ tree: appName, status: '404' });
      return undefined;
    }
    return run;
  }

  /** Runs the agent for one request, handing each event to `onEvent`; records the metrics. */
  async function execute(run: AdkRunRequest, res: Response, streaming: boolean, onEvent: (event: Event) => void): Promise<number> {
    const abort = new AbortController();
    host.inFlight.add(abort);
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });
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
    const admission = host.admission;
    const { reports, result } = withCallReports(() =>
      admission ? admission.run(runner.agent, runTree, { signal: abort.signal, arrivedAt: startedAt }) : runTree(),
    );
    let status = 200;
    const done = (async () => {
      try {
        await result;
        recordRunOutcome(metrics, appName, events, host.branches, reports);
        if (abort.signal.aborted) status = 499;
      } catch (thrown) {
        status = thrown instanceof RequestShed ? 429 : 500;
        throw thrown;
      } finally {
        host.inFlight.delete(abort);
        metrics.requests.inc({ tree: appName, status: String(status) });
        metrics.requestDuration.observe({ tree: appName }, (performance.now() - startedAt) / 1000);
      }
    })();
    const tracked = done.catch(() => {});
    host.runs.add(tracked);
    try {
      await done;
    } finally {
      host.runs.delete(tracked);
    }
    return status;
  }

  router.post('/run', json, async (req, res) => {
    const run = await prepareRun(req, res);
    if (!run) return;
    const events: Event[] = [];
    try {
      const status = await execute(run, res, false, (event) => events.push(event));
      if (status === 200) res.json(events);
    } catch (thrown) {
      if (res.headersSent) return;
      if (thrown instanceof RequestShed) answerShedAdk(res, thrown);
      else res.status(500).json({ error: `failed to run agent: ${describeThrown(thrown)}` });
    }
  });

  router.post('/run_sse', json, async (req, res) => {
    const run = await prepareRun(req, res);
    if (!run) return;
    // The stream opens with the run's first event, so a request shed at the door still gets its 429.
    const open = () => {
      if (res.headersSent) return;
      res.setHeader('cache-control', 'no-cache');
      res.setHeader('content-type', 'text/event-stream');
      res.flushHeaders();
    };
    try {
      await execute(run, res, run.streaming, (event) => {
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

  return router;
}
