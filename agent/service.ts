// The agent service: express 5 over the agent trees. POST /v1/agents/{tree}/run runs one
// tree for one document and answers with the text plus what the run cost: branch
// outcomes, model calls, tokens and the longest permit wait.
import { type BaseLlm, InMemoryRunner, LogLevel, setLogLevel } from '@google/adk';
import express, { type Request, type Response } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type AccessLog, openAccessLog } from './access-log.ts';
import { type AgentServiceOptionsInput, modelLimiterOptions, parseServiceOptions } from './config.ts';
import { BATCH_LANE, createLimiter, createRequestAdmission, type Limiter } from './limiter.ts';
import { bodyErrorHandler, type Listening, listen, stopServing } from './http-server.ts';
import { createAgentMetrics } from './metrics.ts';
import { mountNativeRun } from './native-run.ts';
import { ProviderGemini } from './provider-model.ts';
import type { RunRequest } from './request-schema.ts';
import { currentTrafficClass, recordCallReport } from './run-context.ts';
import { samplePublishedAgents } from './sample-shapes.ts';
import { TREE_NAMES, type TreeName } from './tree-shapes.ts';
import { type BuiltTree, buildTree, SYNTHESIZER } from './trees.ts';

// ParallelAgent/SequentialAgent log a deprecation WARN per construction; the
// wide tree builds them per request.
setLogLevel(LogLevel.ERROR);

const APP_NAME = 'quotascope';

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
    limiter = await createLimiter(modelLimiterOptions(config, config.model), delegate, registry, recordCallReport, currentTrafficClass);
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

  mountNativeRun(app, { trees: TREE_NAMES, agents: samplePublishedAgents(limiter.model) }, {
    metrics,
    admission: createRequestAdmission(config),
    accessLog,
    streaming: config.streaming,
    inFlight,
    runs,
    unknown: (name) => (isTreeName(name) ? undefined : `unknown tree "${name}"; known trees: ${TREE_NAMES.join(', ')}`),
    resolve: (name, request) => {
      const { tree, runner } = runnerFor(name as TreeName, request);
      return {
        runner,
        appName: APP_NAME,
        branches: tree.branches,
        maxLlmCalls: tree.maxLlmCalls,
        finalAuthor: SYNTHESIZER,
        logFields: name === 'wide' ? { width: request.width, branches: request.branches } : {},
      };
    },
  });

  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found: the API is POST /v1/agents/{tree}/run, GET /healthz, GET /metrics' });
  });

  app.use(bodyErrorHandler(accessLog, metrics, isTreeName));

  let listening: Listening;
  try {
    listening = await listen(app, config.port, config.host, config);
  } catch (error) {
    await limiter.close();
    await ownAccessLog?.close();
    throw error;
  }
  const { server, port, url } = listening;
  let closing: Promise<void> | undefined;

  return {
    url,
    port,
    limiter,
    registry,
    close() {
      // Once: a second call (the CLI's signal handler and a caller's finally) waits for the first.
      closing ??= (async () => {
        await stopServing(server, inFlight, runs, 'agent service closing', config.shutdownGraceMs);
        await limiter.close();
        await ownAccessLog?.close(); // after the aborted runs wrote their lines
      })();
      return closing;
    },
  };
}
