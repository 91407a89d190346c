// The agent service (`quotascope agent`): the sample trees as the agent app's tree source
// (agent/app.ts). POST /v1/agents/{tree}/run runs one tree for one document and answers with
// the text plus what the run cost: branch outcomes, model calls, tokens and the longest
// permit wait. Every tree of a replica shares one limiter.
import { type BaseLlm, InMemoryRunner } from '@google/adk';
import type { Registry } from 'prom-client';
import type { AccessLog } from './access-log.ts';
import { type AppContext, startAgentApp, type TreeSource } from './app.ts';
import { type AgentServiceOptions, type AgentServiceOptionsInput, modelLimiterOptions, parseServiceOptions } from './config.ts';
import { BATCH_LANE, createLimiter, type Limiter } from './limiter.ts';
import { ProviderGemini } from './provider-model.ts';
import { type RunRequest, runRequestSchema } from './request-schema.ts';
import { currentTrafficClass, recordCallReport } from './run-context.ts';
import { samplePublishedAgents } from './sample-shapes.ts';
import { TREE_NAMES, type TreeName } from './tree-shapes.ts';
import { type BuiltTree, buildTree, SYNTHESIZER } from './trees.ts';

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

/** The sample trees as the app's tree source, every model call through one limiter. */
interface SampleTrees extends TreeSource {
  readonly limiter: Limiter;
}

/** GET /healthz of the sample trees: the trees and the limiter's state. */
function limiterHealth(limiter: Limiter) {
  const budget = limiter.budget;
  // central: whether the shared Redis bucket answers (false while on the local share).
  const central = budget.sharing.kind === 'central' ? { centralBudgetReachable: budget.sharing.reachable } : {};
  // Lanes: the batch lane's cap and the permits it holds now (absent when lanes are off).
  const batchMax = limiter.batchMaxPermits;
  const lanes = batchMax === undefined ? {} : { batchLane: { maxPermits: batchMax, permitsInUse: limiter.model.semaphore.laneInUse(BATCH_LANE) } };
  return { ...limiter.snapshot(), quotaSharing: limiter.quotaSharing, ...central, ...lanes };
}

/** Builds the replica's limiter; the trees are built on first use and kept (`wide` once per shape). */
async function openSampleTrees(config: AgentServiceOptions, delegate: BaseLlm | undefined, { registry }: AppContext): Promise<SampleTrees> {
  const model =
    delegate ?? new ProviderGemini({ providerUrl: config.providerUrl, apiKey: config.apiKey, model: config.model, httpTimeoutMs: config.httpTimeoutMs });
  const limiter = await createLimiter(modelLimiterOptions(config, config.model), model, registry, recordCallReport, currentTrafficClass);
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
  return {
    limiter,
    list: { trees: TREE_NAMES, agents: samplePublishedAgents(limiter.model) },
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
    // The fixed-shape trees; `wide` takes its shape from each request.
    roots: () => TREE_NAMES.filter((name) => name !== 'wide').map((name) => runnerFor(name, runRequestSchema.parse({ document: name })).runner.agent),
    health: () => ({ trees: TREE_NAMES, limiter: limiterHealth(limiter) }),
    notFound: 'not found: the API is POST /v1/agents/{tree}/run, GET /healthz, GET /metrics',
    closingReason: 'agent service closing',
    close: () => limiter.close(),
  };
}

export async function startAgentService(options?: AgentServiceOptionsInput, extras: StartAgentServiceExtras = {}): Promise<AgentService> {
  const config = parseServiceOptions(options);
  const app = await startAgentApp(config, (context) => openSampleTrees(config, extras.delegate, context), extras.accessLog);
  return { url: app.url, port: app.port, limiter: app.source.limiter, registry: app.registry, close: () => app.close() };
}
