// `npm start` (`quotascope start`): the embedded main job. Starts the mock provider, the agent
// service (or `serve` for a user's module, --agent) and Prometheus on loopback, replays a
// fan-out burst then steady traffic with k6 (or a small Node driver where k6 is missing),
// prints a summary and writes reports/<run-id>/. A run whose requests all failed exits 1.
// The run itself is run-pipeline.ts's; this file chooses its scenario and stack and prints it.
import { formatPerModel, mapPerModel, type PerModel } from '../agent/per-model.ts';
import type { TreeShape } from '../agent/tree-shapes.ts';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { chainDeadlineMs, requestDeadlineMsFor } from '../instrumentation/admission/request-deadlines.ts';
import { criticalPathSeconds, minimumSteadySeconds } from './measure/steady-state.ts';
import { type RunInput, type RunReporter, type RunResult, runPipeline } from './run-pipeline.ts';
import { loadScenario } from './scenario/schema.ts';
import { withTree } from './scenario/trees.ts';
import type { ScenarioFile } from './scenario/types.ts';
import { type AgentTarget, defaultTreeOf, resolveAgentTarget, scenarioForTarget, treeShapeOf } from './stack/agent-target.ts';
import { latencyOfFullAnswer } from './planner/call-time.ts';
import { MOCK_COUNTED_TOKENS } from './stack/mock-parameters.ts';
import type { StartOptions } from './start-options.ts';
import { startSummary } from './start-summary.ts';

type Flags = StartOptions;

const OUTPUT_TOKENS = EX.outputTokensPerCall;
const BUDGET_FRACTION = EX.budgetFraction;

/**
 * The default run: the worked example's burst of 10 users, then steady traffic. Requests get
 * time to finish: the timeout and k6's graceful stop cover the tree's critical path
 * (`criticalPath` seconds) and a maxWait; under request admission the graceful stop also
 * covers the request deadline and one call, so a request admitted before the end finishes
 * (its wait at the door and its calls all end by its deadline).
 */
export function mainScenario(f: Flags, tree: string, criticalPath = 0): ScenarioFile {
  const burstGap = f.burstUsers > 0 ? Math.max(10, f.callSeconds * 3) : 0;
  const maxWait = f.maxWaitMs / 1000;
  const admitted = f.admission === 'request' ? requestDeadlineMsFor(criticalPath * 1000, f.requestDeadlineMs) / 1000 + f.callSeconds : 0;
  return {
    name: 'main',
    description: `burst of ${f.burstUsers} users, then ${f.rate} requests/min for ${f.duration} s`,
    defaults: { tree, inputTokensPerCall: f.tokens, trafficClass: 'interactive' },
    arrivals: [
      ...(f.burstUsers > 0 ? [{ kind: 'burst' as const, at: 0, users: f.burstUsers }] : []),
      { kind: 'constant', start: burstGap, perMinute: f.rate, duration: f.duration },
    ],
    requestTimeout: Math.ceil(Math.max(60, (maxWait + f.callSeconds) * 4, 2 * criticalPath + maxWait, admitted)),
    gracefulStop: Math.ceil(Math.max(10, f.callSeconds * 4, criticalPath + maxWait, admitted)),
  };
}

/**
 * The built-in run made long enough for the tree: a steady phase shorter than
 * minimumSteadySeconds would end before the requests it measures do. Returns the flags to run
 * with and, when it lengthened the run, the reason (said before anything starts).
 */
export function fitRunToTree(f: Flags, shape: TreeShape | undefined, tree: string): { flags: Flags; criticalPath: number; note?: string } {
  if (!shape) return { flags: f, criticalPath: 0 };
  const criticalPath = criticalPathSeconds(shape, f.callSeconds);
  const minimum = minimumSteadySeconds(criticalPath, f.callSeconds);
  if (f.duration >= minimum) return { flags: f, criticalPath };
  const chain = shape.depth ?? shape.callsPerBranch + shape.sequentialSteps;
  const note =
    `--duration ${f.duration} s is too short for ${tree}: its critical path is ${chain} model call${chain === 1 ? '' : 's'} one after another × ${f.callSeconds} s = ${Number(criticalPath.toFixed(1))} s, ` +
    `and the steady window must see requests start and finish; lengthened to ${minimum} s (pass --duration ${minimum} or more to choose)`;
  return { flags: { ...f, duration: minimum }, criticalPath, note };
}

/**
 * Under request admission, why no admitted request of the tree can finish: its request
 * deadline is shorter than the tree's critical path (a call that cannot finish before the
 * deadline is not started). Said before the run starts; undefined when the deadline is long enough.
 */
export function deadlineNote(f: Flags, shape: TreeShape | undefined, tree: string): string | undefined {
  // Unset, the deadline follows the tree (twice its critical path when that is longer than the default).
  if (!shape || f.admission !== 'request' || f.requestDeadlineMs === undefined) return undefined;
  const criticalPath = criticalPathSeconds(shape, f.callSeconds);
  if (f.requestDeadlineMs / 1000 > criticalPath) return undefined;
  const suggested = chainDeadlineMs(criticalPath, 1000);
  return (
    `the request deadline (${f.requestDeadlineMs / 1000} s) is not longer than ${tree}'s critical path (${Number(criticalPath.toFixed(1))} s at ${f.callSeconds} s per call): ` +
    `no admitted request can finish in time, so the run will shed or cut short every one; pass --request-deadline-ms ${suggested} (twice the critical path) to give requests room`
  );
}

/**
 * Counted tokens per call the limiters expect before they measured one: the calibration's
 * input per model where one ran, else the run's message tokens; output added where it counts.
 */
function expectedTokensPerCall(flags: Flags, target: AgentTarget): PerModel {
  const output = flags.countedTokens === 'total' ? OUTPUT_TOKENS : 0;
  const calibrated = target.kind === 'serve' ? target.inputTokensPerModel : undefined;
  if (calibrated && Object.keys(calibrated).length > 0) return mapPerModel(calibrated, (tokens) => Math.max(1, Math.ceil(tokens + output)));
  return Math.max(1, flags.tokens + output);
}

/** The pipeline's run of the embedded stack: the mock with the run's quota and latency, the agent side's limiters, the plan's parameters. */
export function startInput(flags: Flags, target: AgentTarget, scenario: ScenarioFile): RunInput {
  const expectedTokens = expectedTokensPerCall(flags, target);
  // Quota and latency for this run: ~800 output tokens, call-seconds per call on average.
  // The mock's call: its first token, then the output streamed (a tool turn's short answer ends soon after its first token).
  const latency = latencyOfFullAnswer(flags.callSeconds, OUTPUT_TOKENS);
  const mockConfig = {
    quotaScope: flags.quotaScope,
    requestsPerMinute: flags.quotaRpm,
    tokensPerMinute: flags.quotaTpm,
    countedTokens: MOCK_COUNTED_TOKENS[flags.countedTokens],
    timeToFirstTokenMs: { kind: 'fixed', value: Math.round(latency.firstTokenSeconds * 1000) },
    perOutputTokenMs: { kind: 'fixed', value: latency.perOutputTokenSeconds * 1000 },
    outputTokens: { kind: 'normal', mean: OUTPUT_TOKENS, stddev: 100 },
  };
  const limits = {
    replicas: flags.replicas,
    permits: flags.permits,
    // Each model's limiter gets its own model's share of its own quota.
    tokensPerMinute: mapPerModel(flags.quotaTpm, (quota) => Math.round(quota * BUDGET_FRACTION)),
    quotaScope: flags.quotaScope,
    quotaSharing: flags.quotaSharing,
    maxWaitMs: flags.maxWaitMs,
    admission: flags.admission,
    requestDeadlineMs: flags.requestDeadlineMs,
    countedTokens: flags.countedTokens,
    // The run knows its calls before the limiters do: a cold burst is funded whole and its deadline fits the tree's chain.
    expectedCallMs: Math.round(flags.callSeconds * 1000),
    expectedTokensPerCall: expectedTokens,
  };
  const mockNote = `quota ${formatPerModel(flags.quotaRpm)} req/min, ${formatPerModel(flags.quotaTpm)} ${flags.countedTokens} tokens/min per ${flags.quotaScope === 'model' ? 'model' : 'key'}, ~${flags.callSeconds} s per call`;
  return {
    scenario,
    reportRoot: flags.reportDir,
    stack: { kind: 'local', options: { target, limits, mockConfig, mockNote } },
    plan: {
      outputTokensPerCall: OUTPUT_TOKENS,
      countedTokens: flags.countedTokens,
      latencySeconds: flags.callSeconds,
      quotaRequestsPerMinute: flags.quotaRpm,
      quotaTokensPerMinute: flags.quotaTpm,
      budgetFraction: BUDGET_FRACTION,
      replicas: flags.replicas,
      maxWaitSeconds: flags.maxWaitMs / 1000,
      burstUsers: Math.max(1, flags.burstUsers),
      permits: flags.permits,
      admission: flags.admission,
      callLatency: latency,
      ...(target.kind === 'serve' && target.inputTokensPerModel ? { inputTokensPerModel: target.inputTokensPerModel, inputTokensPerAgent: target.inputTokensPerAgent } : {}),
      ...(target.kind === 'serve' && target.outputTokensPerModel ? { outputTokensPerModel: target.outputTokensPerModel } : {}),
      ...(target.kind === 'serve' && target.agentsPerModel ? { agentsPerModel: target.agentsPerModel } : {}),
    },
    parameters: { ...flags, description: scenario.description ?? scenario.name },
    nodeDriverWithoutK6: true,
  };
}

const say = (line: string) => console.log(`[main] ${line}`);

/**
 * The whole run; resolves to the exit code. Before starting anything it throws ScenarioError
 * for a bad --scenario, AgentTargetError for an --agent that does not load or walk, and
 * UnservedTreeError for a tree the agent side does not serve.
 */
export async function runStart(flags: StartOptions): Promise<number> {
  // The tree's own prompts (one request with its session history) size the plan per model.
  const target = await resolveAgentTarget({ agent: flags.agent, tree: flags.tree, calibrate: { messageTokens: flags.tokens, outputTokensPerCall: OUTPUT_TOKENS } });
  if (target.kind === 'serve' && target.calibrationNote) say(target.calibrationNote);
  const tree = flags.tree ?? defaultTreeOf(target);
  // --tree sends every request of a scenario file to that tree too.
  const shape = treeShapeOf(target, tree);
  const fitted = flags.scenario ? { flags, criticalPath: 0 } : fitRunToTree(flags, shape, tree);
  if (fitted.note) say(fitted.note);
  const tooShort = deadlineNote(fitted.flags, shape, tree);
  // The agent side refuses such a deadline at start too: said here in one line, before anything starts.
  if (tooShort) {
    console.error(`start: --request-deadline-ms: ${tooShort}`);
    return 2;
  }
  const chosen = flags.scenario ? loadScenario(flags.scenario) : mainScenario(fitted.flags, tree, fitted.criticalPath);
  const scenario = scenarioForTarget(target, flags.tree ? withTree(chosen, tree) : chosen);
  const input = startInput(fitted.flags, target, scenario);
  const reporter: RunReporter = { say, out: process.stdout, begin: ({ runId, reportDir }) => say(`run ${runId}: report in ${reportDir}`) };
  let result: RunResult;
  try {
    result = await runPipeline(input, reporter);
  } catch (e) {
    console.error(`[main] failed: ${(e as Error).message}`);
    return 1;
  }
  if (result.aborted) return result.exitCode;
  console.log(startSummary(result, scenario, flags.quotaSharing));
  if (result.problem) console.error(`start: ${result.problem.message}`);
  // A failed threshold is the run's verdict (exit 99); anything else but 0 is an error.
  return result.exitCode;
}
