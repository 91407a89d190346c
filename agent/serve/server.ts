// `serve`: a user's ADK agent tree as the agent app's tree source (agent/app.ts), behind
// ADK's API-server protocol, with every model call rate-limited, plus /metrics (the limiters' and the service's), /healthz and the native
// POST /v1/agents/{app}/run with branch outcomes per author. Everything that can be wrong
// with the options, the module or the tree fails before the server listens.
import { InMemoryArtifactService, InMemoryMemoryService, type LlmAgent, Runner } from '@google/adk';
import type { Registry } from 'prom-client';
import { AgentModuleError, type LoadedAgentModule, loadAgentModule } from '../agent-module.ts';
import { type AppContext, startAgentApp, type TreeSource } from '../app.ts';
import { AgentConfigError, formatIssues } from '../config.ts';
import { lendProviderKey } from '../provider-model.ts';
import { countModelCalls, DEFAULT_TOOL_TURNS, modelShares } from '../../instrumentation/tree/tree-count.ts';
import { type PublishedAgent, shapeOfCount } from '../tree-shapes.ts';
import { AgentTreeError, type AgentTreeNode, eventAuthorsOf, llmAgentsOf, walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { adkProtocolRouter } from './adk-protocol.ts';
import { APP_NAME_PATTERN, type ServeOptions, type ServeOptionsInput, serveOptionsSchema } from './options.ts';
import { BoundedSessionService } from './sessions.ts';
import { describeModels, type ModelDecision, type WrappedModels, wrapModels } from './wrap-models.ts';
import { mergeLimiterFamilies, wrapperRegistries } from './wrapper-metrics.ts';

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
function publishedAgent(appName: string, tree: AgentTreeNode, limiters: WrappedModels['limiters']): PublishedAgent {
  try {
    const counted = countModelCalls(tree, { toolTurns: DEFAULT_TOOL_TURNS });
    if (counted.calls > 0) {
      const models = modelShares(counted).map((share) => {
        const limiter = limiters.get(share.model)?.model.name;
        return { model: share.model, ...(limiter ? { limiter } : {}), modelCallsPerRequest: share.calls, shape: shapeOfCount(share) };
      });
      return { name: appName, modelCallsPerRequest: counted.calls, shape: shapeOfCount(counted), models };
    }
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

/** The module's tree; a tree that cannot be walked (too deep, contains itself) is an error naming the module. */
function treeOf(module: LoadedAgentModule): AgentTreeNode {
  try {
    return walkAgentTree(module.root);
  } catch (error) {
    if (error instanceof AgentTreeError) throw new AgentModuleError(`agent module ${module.file}: ${error.message}`);
    if (error instanceof RangeError) throw new AgentModuleError(`agent module ${module.file}: its tree cannot be walked: ${error.message}`);
    throw error;
  }
}

/** A user's module, loaded and its tree walked, before anything is opened. */
interface LoadedTree {
  readonly options: ServeOptions;
  readonly module: LoadedAgentModule;
  readonly appName: string;
  readonly tree: AgentTreeNode;
}

/** Validates the options, loads the module (unless given) and walks its tree; every error here comes before anything opens. */
async function loadTree(input: ServeOptionsInput, loaded: LoadedAgentModule | undefined): Promise<LoadedTree> {
  const parsed = serveOptionsSchema.safeParse(input);
  if (!parsed.success) throw new AgentConfigError(`invalid serve options: ${formatIssues(parsed.error, (k) => k)}`);
  const options = parsed.data;
  // A module building `new Gemini({ model })` loads without a key of its own: ADK gets serve's.
  lendProviderKey(options.apiKey);
  const module = loaded ?? (await loadAgentModule(options.agent, undefined, options.importTimeoutMs));
  const appName = options.appName ?? module.appName;
  if (!APP_NAME_PATTERN.test(appName)) {
    throw new AgentConfigError(`app name "${appName}" (from ${module.file}) has characters ADK app names cannot have: pass --app-name`);
  }
  return { options, module, appName, tree: treeOf(module) };
}

/** The module's tree as the app's tree source. */
interface ModuleTree extends TreeSource {
  readonly models: readonly ModelDecision[];
  readonly limiters: WrappedModels['limiters'];
}

/** GET /healthz of a module: its app, agents, what was done to each model, and each limiter's state. */
function moduleHealth(appName: string, branches: readonly string[], models: readonly ModelDecision[], limiters: WrappedModels['limiters']) {
  const limiterState = Object.fromEntries(
    [...limiters].map(([model, limiter]) => [
      model,
      {
        ...limiter.snapshot(),
        quotaSharing: limiter.quotaSharing,
        ...(limiter.budget.sharing.kind === 'central' ? { centralBudgetReachable: limiter.budget.sharing.reachable } : {}),
      },
    ]),
  );
  return { app: appName, agents: branches, models, limiters: limiterState };
}

/** Wraps the tree's models (unless --no-wrap) and builds its runner over a bounded session store. */
async function openModuleTree({ options, module, appName, tree }: LoadedTree, { registry }: AppContext): Promise<ModuleTree> {
  const agents = llmAgentsOf(tree);
  const branches = eventAuthorsOf(tree);
  if (options.wrap) checkModelsResolve(agents);
  const wrapped = options.wrap ? await wrapModels(agents, options, options, registry) : undefined;
  const models = wrapped?.decisions ?? describeModels(agents);
  const limiters: WrappedModels['limiters'] = wrapped?.limiters ?? new Map();
  const published = publishedAgent(appName, tree, limiters);
  const sessionService = new BoundedSessionService({ maxSessions: options.maxSessions, idleMs: options.sessionIdleMs }, registry);
  const runner = new Runner({
    agent: module.root,
    appName,
    sessionService,
    artifactService: new InMemoryArtifactService(),
    memoryService: new InMemoryMemoryService(),
  });
  // The user's own wrappers report to their registry (any prom-client copy): served here too.
  const ownWrappers = wrapperRegistries(agents, registry);
  return {
    models,
    limiters,
    list: { trees: [appName], agents: [published] },
    unknown: (name) => (name === appName ? undefined : `unknown app "${name}"; this server serves "${appName}"`),
    resolve: () => ({ runner, appName, branches }),
    roots: () => [module.root],
    health: () => moduleHealth(appName, branches, models, limiters),
    metricsText: async () => {
      const own = await registry.metrics();
      return ownWrappers.length === 0 ? own : mergeLimiterFamilies(own, await Promise.all(ownWrappers.map((r) => r.metrics())));
    },
    // Only wrapped models are funded at the door; a module's own wrappers are found in the tree too.
    routes: ({ metrics, runs, admission }) => adkProtocolRouter({ appName, runner, metrics, branches, runs, admission }),
    notFound:
      'not found: the API is GET /list-apps, /apps/{app}/users/{user}/sessions[/{id}], POST /run, POST /run_sse, POST /v1/agents/{app}/run, GET /healthz, GET /metrics',
    closingReason: 'serve closing',
    close: async () => {
      sessionService.close();
      await wrapped?.close();
    },
  };
}

/** Validates the options, loads the module and serves it; rejects before listening on any error. */
export async function startServe(input: ServeOptionsInput, loaded?: LoadedAgentModule): Promise<ServedAgent> {
  const loadedTree = await loadTree(input, loaded);
  const app = await startAgentApp(loadedTree.options, (context) => openModuleTree(loadedTree, context));
  const { options, module, appName, tree } = loadedTree;
  const { models, limiters } = app.source;
  return { url: app.url, port: app.port, appName, options, module, tree, models, limiters, registry: app.registry, close: () => app.close() };
}
