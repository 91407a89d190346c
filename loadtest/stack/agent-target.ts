// The agent side of a local run: the sample agent service with its trees, or `serve` for a
// user's module (`--agent FILE[#export]`), started as processes with the same limiter flags
// and pointed at the run's mock provider. Everything that can be wrong with the choice (a
// file or export that does not load, a tree that cannot be walked, an unknown tree) is found
// here, in-process, before any process starts (an agent without a model too).
import type { AgentServiceOptionsInput, QuotaScope, QuotaSharing } from '../../agent/config.ts';
import { formatPerModel, type PerModel } from '../../agent/per-model.ts';
import { shapeOfCount, type TreeShape } from '../../agent/tree-shapes.ts';
import type { CountedTokenKind } from '../../instrumentation/counted-tokens.ts';
import type { AdmissionMode } from '../../instrumentation/defaults.ts';
import { APP_NAME_PATTERN } from '../../agent/serve/options.ts';
import { optionFlagName } from '../../shared/option-flag-name.ts';
import { DEFAULT_TREE } from '../scenario/request.ts';
import { freePort, type ProcessGroup, waitForHealthy } from './processes.ts';
import { QUOTASCOPE_BIN } from './quotascope-bin.ts';
import { BUILT_IN_SHAPES } from '../measure/agent-shapes.ts';


export type AgentTarget =
  | { readonly kind: 'service' }
  | {
      readonly kind: 'serve';
      /** Absolute `FILE#export`, as serve's --agent takes it. */
      readonly spec: string;
      /** The served app: the tree the run calls. */
      readonly app: string;
      /** Model calls per request counted from the tree; undefined where they cannot be counted (why in countNote). */
      readonly modelCallsPerRequest: number | undefined;
      /** The counted tree as the planner's shape (undefined where it cannot be counted). */
      readonly shape?: TreeShape;
      readonly countNote?: string;
      /** Input tokens per call of each model, from one calibration request through the tree (when asked for and it worked). */
      readonly inputTokensPerModel?: Readonly<Record<string, number>>;
      /** The same per agent. */
      readonly inputTokensPerAgent?: Readonly<Record<string, number>>;
      /** The agents that call each model (a fix for a model's quota names them). */
      readonly agentsPerModel?: Readonly<Record<string, readonly string[]>>;
      /** Output tokens per call of each model from the same request (tool turns answer short): what its call time follows. */
      readonly outputTokensPerModel?: Readonly<Record<string, number>>;
      /** Each agent's calibrated input tokens per call, or why the calibration could not run. */
      readonly calibrationNote?: string;
    };

/** Why the agent choice is unusable (a usage error: one line, exit 2). */
export class AgentTargetError extends Error {
  override name = 'AgentTargetError';
}

/**
 * The agent side of a run: the agent service, or `serve` for `agent` (loaded, walked and
 * counted here). `tree` names the served app (default: the module's name, as ADK's loader
 * gives it).
 */
export async function resolveAgentTarget(
  choice: { agent?: string; tree?: string; calibrate?: { messageTokens: number; outputTokensPerCall: number } },
  cwd: string = process.cwd(),
): Promise<AgentTarget> {
  if (choice.agent === undefined) return { kind: 'service' };
  // Loaded only for --agent: importing ADK takes seconds.
  const { AgentModuleError, loadAgentModule } = await import('../../agent/agent-module.ts');
  const { AgentTreeError, llmAgentsOf, walkAgentTree } = await import('../../instrumentation/tree/tree-walk.ts');
  const { checkModelsResolve } = await import('../../agent/serve/server.ts');
  const { AgentConfigError } = await import('../../agent/config.ts');
  const { countModelCalls, DEFAULT_TOOL_TURNS, TreeCountError } = await import('../../instrumentation/tree/tree-count.ts');
  const { LogLevel, setLogLevel } = await import('@google/adk');
  setLogLevel(LogLevel.ERROR); // the classic agents log a deprecation WARN per construction
  const { lendProviderKey, PLACEHOLDER_PROVIDER_KEY } = await import('../../agent/provider-model.ts');
  // The run serves against its own mock: a module that needs a key to load gets a placeholder (serve gets one too).
  lendProviderKey(PLACEHOLDER_PROVIDER_KEY);
  // The tree is walked once: its LLM agents, its count, its shape and its calibration all read this walk.
  let module: Awaited<ReturnType<typeof loadAgentModule>>;
  let tree: ReturnType<typeof walkAgentTree>;
  let agents: ReturnType<typeof llmAgentsOf>;
  try {
    module = await loadAgentModule(choice.agent, cwd);
    tree = walkAgentTree(module.root);
    agents = llmAgentsOf(tree);
    checkModelsResolve(agents);
  } catch (error) {
    if ([AgentModuleError, AgentTreeError, AgentConfigError].some((kind) => error instanceof kind)) throw new AgentTargetError(`--agent: ${(error as Error).message}`);
    throw error;
  }
  const app = choice.tree ?? module.appName;
  if (!APP_NAME_PATTERN.test(app)) {
    throw new AgentTargetError(`--agent: the app name "${app}" (from ${module.file}) is not an ADK app name: name the app (npm start: --tree, loadtest: --app)`);
  }
  let modelCallsPerRequest: number | undefined;
  let shape: TreeShape | undefined;
  let countNote: string | undefined;
  let agentsPerModel: Record<string, string[]> | undefined;
  let countError: InstanceType<typeof TreeCountError> | undefined;
  try {
    const counted = countModelCalls(tree, { toolTurns: DEFAULT_TOOL_TURNS });
    const calls = counted.calls;
    agentsPerModel = (await import('../planner/model-agents.ts')).agentsByModel(counted);
    if (calls > 0) {
      modelCallsPerRequest = calls;
      shape = shapeOfCount(counted);
    } else countNote = `"${tree.name}" makes no model calls the count can see`;
  } catch (error) {
    if (!(error instanceof TreeCountError)) throw error;
    countNote = error.message;
    countError = error;
  }
  let inputTokensPerModel: Record<string, number> | undefined;
  let inputTokensPerAgent: Record<string, number> | undefined;
  let outputTokensPerModel: Record<string, number> | undefined;
  let calibrationNote: string | undefined;
  if (choice.calibrate) {
    const { calibrateAgent } = await import('../planner/agent-plan.ts');
    const { CalibrationError, inputTokensPerModel: perModel, outputTokensPerModel: outputPerModel, tokensNote } = await import('../planner/calibrate.ts');
    const notCalibrated = (why: string) => `not calibrated (${why}): the plan takes every call at the request's input tokens`;
    if (countError) calibrationNote = notCalibrated(countError.message);
    else {
      try {
        const calibration = await calibrateAgent({ module, agents }, choice.calibrate);
        inputTokensPerModel = Object.fromEntries(perModel(calibration));
        inputTokensPerAgent = Object.fromEntries(calibration.agents.map((a) => [a.agent, a.inputTokens / a.calls]));
        outputTokensPerModel = Object.fromEntries(outputPerModel(calibration));
        calibrationNote = tokensNote(calibration);
      } catch (error) {
        if (!(error instanceof CalibrationError)) throw error;
        calibrationNote = notCalibrated(error.message);
      }
    }
  }
  return {
    kind: 'serve',
    spec: `${module.file}#${module.exportName}`,
    app,
    modelCallsPerRequest,
    ...(shape ? { shape } : {}),
    countNote,
    inputTokensPerModel,
    inputTokensPerAgent,
    outputTokensPerModel,
    agentsPerModel,
    calibrationNote,
  };
}

/** The agent side of a run resolved once: the target, the tree its requests call and that tree's counted shape. */
export interface RunTarget {
  readonly target: AgentTarget;
  /** --tree, else the served module's app, else the agent service's default tree. */
  readonly tree: string;
  /** The tree's counted shape, or undefined where its calls per request are not fixed. */
  readonly shape: TreeShape | undefined;
}

/** resolveAgentTarget, with the tree a run calls on the target and that tree's shape. */
export async function resolveRunTarget(choice: Parameters<typeof resolveAgentTarget>[0], cwd?: string): Promise<RunTarget> {
  const target = await resolveAgentTarget(choice, cwd);
  const tree = choice.tree ?? (target.kind === 'serve' ? target.app : DEFAULT_TREE);
  return { target, tree, shape: target.kind === 'serve' ? target.shape : (BUILT_IN_SHAPES[tree] ?? undefined) };
}

/** The limiter of each replica: the fleet's budget split evenly over the replicas. */
export interface AgentLimits {
  providerUrl: string;
  replicas: number;
  permits?: number;
  /** The fleet's token budget per minute of each model (one number for every model, or per model). */
  tokensPerMinute?: PerModel;
  /** The provider quota's scope: each model its own budget, or one shared by every model. */
  quotaScope?: QuotaScope;
  /** How the replicas share the quota (central needs redisUrl). */
  quotaSharing?: QuotaSharing;
  redisUrl?: string;
  maxWaitMs?: number;
  admission?: AdmissionMode;
  requestDeadlineMs?: number;
  /** Which tokens the budget counts, as the provider's quota does. */
  countedTokens?: CountedTokenKind;
  estimatedTokensPerCall?: number;
  /** A model call's time the limiters expect before they measured one (the mock's latency), ms. */
  expectedCallMs?: number;
  /** Counted tokens per call each model's limiter expects before it measured one (the calibration's). */
  expectedTokensPerCall?: PerModel;
}

/** The limiter options every replica is started with (serve's replicas add their --replica-share). */
export function replicaLimiterOptions(limits: Omit<AgentLimits, 'providerUrl'>): AgentServiceOptionsInput {
  const values: AgentServiceOptionsInput = {
    permits: limits.permits,
    tokensPerMinute: limits.tokensPerMinute,
    quotaScope: limits.quotaScope,
    quotaSharing: limits.quotaSharing,
    redisUrl: limits.redisUrl,
    maxWaitMs: limits.maxWaitMs,
    admission: limits.admission,
    requestDeadlineMs: limits.requestDeadlineMs,
    countedTokens: limits.countedTokens,
    estimatedTokensPerCall: limits.estimatedTokensPerCall,
    expectedCallMs: limits.expectedCallMs,
    expectedTokensPerCall: limits.expectedTokensPerCall,
  };
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined));
}

function limiterFlags(limits: AgentLimits): string[] {
  // The flag names are the agent command's (serve takes the same ones); a per-model value as MODEL=N,….
  return Object.entries(replicaLimiterOptions(limits)).flatMap(([key, value]) => [`--${optionFlagName(key)}`, typeof value === 'object' ? formatPerModel(value as PerModel) : String(value)]);
}

/**
 * Starts the target's replicas in `group` and waits until each is healthy; returns their base
 * URLs. The agent service runs its replicas in one process on consecutive ports; `serve`
 * runs one process per replica, each with its share of the budget.
 */
export async function startAgentTarget(group: ProcessGroup, target: AgentTarget, limits: AgentLimits): Promise<string[]> {
  const node = process.execPath;
  const common = ['--provider-url', limits.providerUrl, ...limiterFlags(limits)];
  const urls: string[] = [];
  if (target.kind === 'service') {
    const port = await freePort(limits.replicas);
    group.start('agent', node, [QUOTASCOPE_BIN, 'agent', '--port', String(port), '--replicas', String(limits.replicas), ...common]);
    urls.push(...Array.from({ length: limits.replicas }, (_, i) => `http://127.0.0.1:${port + i}`));
  } else {
    // Models serve leaves as they are (already wrapped, --no-wrap) reach the mock too, with no real key.
    // (ADK reads GOOGLE_GENAI_API_KEY first; genai warns when GEMINI_API_KEY is set beside GOOGLE_API_KEY.)
    const key = 'quotascope-local';
    const env = { GOOGLE_GEMINI_BASE_URL: limits.providerUrl, GOOGLE_VERTEX_BASE_URL: limits.providerUrl, GOOGLE_GENAI_API_KEY: key, GOOGLE_API_KEY: key, GEMINI_API_KEY: '' };
    for (let i = 0; i < limits.replicas; i++) {
      const port = await freePort();
      const name = limits.replicas === 1 ? 'serve' : `serve-${i + 1}`;
      const args = [QUOTASCOPE_BIN, 'serve', '--agent', target.spec, '--app-name', target.app, '--port', String(port), '--replica-share', String(1 / limits.replicas), ...common];
      group.start(name, node, args, env);
      urls.push(`http://127.0.0.1:${port}`);
    }
  }
  for (const url of urls) await waitForHealthy(target.kind === 'service' ? 'agent service' : 'serve', `${url}/healthz`, 60_000, () => group.assertRunning());
  return urls;
}
