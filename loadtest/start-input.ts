// The pipeline's input for a `start` run on the embedded stack: the mock with the run's quota
// and latency, the agent side's limiters (with what they expect before they measured a call),
// and the plan's parameters, from the fitted flags, the resolved target and the scenario.
import { formatPerModel, mapPerModel, type PerModel } from '../agent/per-model.ts';
import { WORKED_EXAMPLE as EX } from '../agent/worked-example.ts';
import { latencyOfFullAnswer } from './planner/call-time.ts';
import type { RunInput } from './run-pipeline.ts';
import type { ScenarioFile } from './scenario/types.ts';
import type { AgentTarget } from './stack/agent-target.ts';
import { MOCK_COUNTED_TOKENS } from './stack/mock-parameters.ts';
import type { StartOptions } from './start-options.ts';

type Flags = StartOptions;

/** Output tokens of a model call (the worked example's): the mock's mean answer, and what the plan takes. */
export const OUTPUT_TOKENS = EX.outputTokensPerCall;
const BUDGET_FRACTION = EX.budgetFraction;

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
