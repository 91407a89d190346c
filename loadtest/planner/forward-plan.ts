// The forward run of a `start` or `sweep` run's served tree, before its stack starts: the
// module serve will load, one replica's limiter options (as its flags give them), the run's
// mock, and the message its requests send; what the fleet serves is what one replica's door
// serves times the replicas (static shares are equal).
import { loadAgentModule } from '../../agent/agent-module.ts';
import { lendProviderKey, PLACEHOLDER_PROVIDER_KEY } from '../../agent/provider-model.ts';
import { llmAgentsOf, walkAgentTree } from '../../instrumentation/tree/tree-walk.ts';
import { parseConfig } from '../../mock-provider/config.ts';
import { documentForTokens } from '../scenario/document.ts';
import type { StackParameters } from '../measure/steady-state.ts';
import type { RunInput } from '../run-pipeline.ts';
import { type AgentLimits, type AgentTarget, replicaLimiterOptions } from '../stack/agent-target.ts';
import { FORWARD_COUNTED_WINDOWS, FORWARD_WARM_WINDOWS, type ForwardRun, ForwardRunError, forwardRun } from './forward-run.ts';

/** What the forward run found, fleet-wide. */
export interface ForwardFigure {
  /** Whole user requests per minute the fleet serves with its doors saturated. */
  readonly servedPerMinute: number;
  /** Simulated minutes counted per replica. */
  readonly minutes: number;
  /** Requests that ended partial in it (the limiter's invariant says none). */
  readonly partial: number;
}

/**
 * The forward run of `target`'s tree (a served module under request admission), or undefined
 * for the agent service's sample trees (their plan is the arithmetic one) and per-call admission.
 */
export async function forwardPlan(
  target: AgentTarget,
  limits: Omit<AgentLimits, 'providerUrl'>,
  mockConfig: unknown,
  messageTokens: number,
  say: (line: string) => void,
): Promise<ForwardFigure | undefined> {
  if (target.kind !== 'serve' || (limits.admission ?? 'request') !== 'request') return undefined;
  lendProviderKey(PLACEHOLDER_PROVIDER_KEY);
  const module = await loadAgentModule(target.spec);
  const agents = llmAgentsOf(walkAgentTree(module.root));
  say(`forward run: ${target.app} through one replica's door on a simulated clock, ${FORWARD_WARM_WINDOWS + FORWARD_COUNTED_WINDOWS} quota windows…`);
  let run: ForwardRun;
  try {
    run = await forwardRun({
      root: module.root,
      agents,
      limiter: { ...replicaLimiterOptions(limits), replicaShare: 1 / limits.replicas },
      mock: parseConfig(mockConfig),
      message: documentForTokens(messageTokens, messageTokens),
    });
  } catch (error) {
    if (!(error instanceof ForwardRunError)) throw error;
    say(`forward run: none (${error.message}); the plan serves whole windows`);
    return undefined;
  }
  const figure = { servedPerMinute: run.servedPerMinute * limits.replicas, minutes: run.minutes, partial: run.partial };
  say(`forward run: a replica serves ${run.servedPerMinute.toFixed(2)} whole requests/min (${run.served} in ${run.minutes} min, ${run.shed} shed, ${run.partial} partial): the fleet ${figure.servedPerMinute.toFixed(1)}/min`);
  return figure;
}

/**
 * `input` with the forward run of its served tree in its plan (`messageTokens`: the size of
 * its requests' message); unchanged for a run on running services, or without a forward run.
 */
export async function withForwardRun(input: RunInput, messageTokens: number, say: (line: string) => void): Promise<RunInput> {
  if (input.stack.kind !== 'local' || input.plan === undefined || typeof input.plan === 'function') return input;
  const { target, limits, mockConfig } = input.stack.options;
  const figure = await forwardPlan(target, limits, mockConfig ?? {}, messageTokens, say);
  if (!figure) return input;
  const plan: StackParameters = { ...input.plan, forwardRun: figure };
  return { ...input, plan };
}
