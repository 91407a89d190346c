// `serve`: a user's ADK agent tree behind ADK's API-server protocol, with every model call
// rate-limited, plus /metrics (the limiters' and the service's), /healthz and the native
// POST /v1/agents/{app}/run with branch outcomes per author. Everything that can be wrong
// with the options, the module or the tree fails before the server listens.
import { InMemoryRunner, type LlmAgent, LogLevel, setLogLevel } from '@google/adk';
import express, { type Request, type Response } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type AccessLog, openAccessLog } from '../access-log.ts';
import { type LoadedAgentModule, loadAgentModule } from '../agent-module.ts';
import { AgentConfigError, formatIssues } from '../config.ts';
import { bodyErrorHandler, type Listening, listen, stopServing } from '../http-server.ts';
import { createAgentMetrics } from '../metrics.ts';
import { createRequestAdmission } from '../limiter.ts';
import { mountNativeRun } from '../native-run.ts';
import { countModelCalls, DEFAULT_TOOL_TURNS } from '../../instrumentation/tree/tree-count.ts';
import { type PublishedAgent, shapeOfCount } from '../tree-shapes.ts';
import { type AgentTreeNode, eventAuthorsOf, llmAgentsOf, walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { adkProtocolRouter } from './adk-protocol.ts';
import { APP_NAME_PATTERN, type ServeOptions, type ServeOptionsInput, serveOptionsSchema } from './options.ts';
import { describeModels, type ModelDecision, type WrappedModels, wrapModels } from './wrap-models.ts';

// The classic agents log a deprecation WARN per construction.
setLogLevel(LogLevel.ERROR);


export interface ServedAgent {
  url: string;
  port: number;
  appName: string;
  options: ServeOptions;
  module: LoadedAgentModule;
  tree: AgentTreeNode;
  /** What was done to each LlmAgent's model. */
  models: readonly ModelDecision[];
  /** One limiter per wrapped model name (empty with --no-wrap). */
  limiters: WrappedModels['limiters'];
  registry: Registry;
  close(): Promise<void>;
}

/**
 * The tree's entry of GET /v1/agents: its counted calls per request and shape, what plan vs
 * measured compares with; null where the count is not fixed (an unbounded loop, routes, code).
 */
function publishedAgent(appName: string, tree: AgentTreeNode): PublishedAgent {
  try {
    const counted = countModelCalls(tree, { toolTurns: DEFAULT_TOOL_TURNS });
    if (counted.calls > 0) return { name: appName, modelCallsPerRequest: counted.calls, shape: shapeOfCount(counted) };
  } catch {
    // Not countable statically: published as not fixed.
  }
  return { name: appName, modelCallsPerRequest: null, shape: null };
}

/** An agent whose model resolves nowhere: ADK would throw "No model found" on its first run. */
export function checkModelsResolve(agents: readonly LlmAgent[]): void {
  for (const agent of agents) {
    if (agent.model !== undefined && agent.model !== '') continue;
    try {
      void agent.canonicalModel;
    } catch {
      throw new AgentConfigError(`agent "${agent.name}" has no model, and no LlmAgent above it has one to inherit`);
    }
  }
}

/** Validates the options, loads the module and serves it; rejects before listening on any error. */
export async function startServe(input: ServeOptionsInput, loaded?: LoadedAgentModule): Promise<ServedAgent> {
  const parsed = serveOptionsSchema.safeParse(input);
  if (!parsed.success) throw new AgentConfigError(`invalid serve options: ${formatIssues(parsed.error, (k) => k)}`);
  const options = parsed.data;
  const module = loaded ?? (await loadAgentModule(options.agent));
  const appName = options.appName ?? module.appName;
  if (!APP_NAME_PATTERN.test(appName)) {
    throw new AgentConfigError(`app name "${appName}" (from ${module.file}) has characters ADK app names cannot have: pass --app-name`);
  }
  const tree = walkAgentTree(module.root);
  const agents = llmAgentsOf(tree);
  const branches = eventAuthorsOf(tree);
  const published = publishedAgent(appName, tree);

  const ownAccessLog: AccessLog | undefined = options.accessLog ? openAccessLog(options.accessLog) : undefined;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createAgentMetrics(registry);
  let wrapped: WrappedModels | undefined;
  try {
    if (options.wrap) {
      checkModelsResolve(agents);
      wrapped = await wrapModels(agents, options, options, registry);
    }
  } catch (error) {
    await ownAccessLog?.close();
    throw error;
  }
  const models = wrapped?.decisions ?? describeModels(agents);
  const limiters: WrappedModels['limiters'] = wrapped?.limiters ?? new Map();
  const runner = new InMemoryRunner({ agent: module.root, appName });

  const inFlight = new Set<AbortController>();
  const runs = new Set<Promise<void>>();
  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', (_req, res) => {
    const limiterState = Object.fromEntries(
      [...limiters].map(([model, limiter]) => [
        model,
        {
          ...limiter.snapshot(),
          quotaSharing: limiter.quotaSharing,
          ...(limiter.budget.central === undefined ? {} : { centralBudgetReachable: limiter.budget.central }),
        },
      ]),
    );
    res.json({ status: 'ok', app: appName, agents: branches, models, limiters: limiterState });
  });

  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });

  // Only wrapped models are funded at the door; a module's own wrappers are found in the tree too.
  const admission = createRequestAdmission(options);
  app.use(adkProtocolRouter({ appName, runner, metrics, branches, inFlight, runs, admission }));

  mountNativeRun(app, { trees: [appName], agents: [published] }, {
    metrics,
    admission,
    accessLog: ownAccessLog,
    streaming: options.streaming,
    inFlight,
    runs,
    unknown: (name) => (name === appName ? undefined : `unknown app "${name}"; this server serves "${appName}"`),
    resolve: () => ({ runner, appName, branches }),
  });

  app.use((_req: Request, res: Response) => {
    res.status(404).json({
      error: 'not found: the API is GET /list-apps, /apps/{app}/users/{user}/sessions[/{id}], POST /run, POST /run_sse, POST /v1/agents/{app}/run, GET /healthz, GET /metrics',
    });
  });

  app.use(bodyErrorHandler(ownAccessLog, metrics, (name) => name === appName));

  let listening: Listening;
  try {
    listening = await listen(app, options.port, options.host, options);
  } catch (error) {
    await wrapped?.close();
    await ownAccessLog?.close();
    throw error;
  }
  const { server, port, url } = listening;

  return {
    url,
    port,
    appName,
    options,
    module,
    tree,
    models,
    limiters,
    registry,
    async close() {
      await stopServing(server, inFlight, runs, 'serve closing', options.shutdownGraceMs);
      await wrapped?.close();
      await ownAccessLog?.close();
    },
  };
}
