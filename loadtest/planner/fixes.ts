// The ways to make the fleet sustain the peak demand, each sized to the smallest change that
// closes the shortfall, ranked by how large that change is relative to today.
import { replicaCallsPerMinute, requiredUserRequestsPerReplica, tokensPerCall } from './budget.ts';
import type { ValidPlanInput } from './input.ts';
import type { PlannedTree } from './plan.ts';

export type FixKind = 'shorter-prompts' | 'quota' | 'smaller-model' | 'fewer-branches';

export interface Fix {
  readonly kind: FixKind;
  /** False when this lever alone cannot close the shortfall (e.g. shorter prompts while requests bind). */
  readonly feasible: boolean;
  /** Size of the change relative to today (0.3 = 30 % more quota, 30 % shorter prompts, 30 % of calls moved). */
  readonly change: number;
  /** One line for people. */
  readonly summary: string;
  /** Planner input fields that, changed like this, leave no shortfall (absent when not expressible). */
  readonly inputChange?: Partial<ValidPlanInput>;
  /** For smaller-model: the quota the smaller model must have for the calls moved to it. */
  readonly smallModelQuota?: { readonly requestsPerMinute: number; readonly tokensPerMinute: number };
}

// Equal changes rank in this order: cheapest to do first, reshaping the agent last.
const tieOrder: readonly FixKind[] = ['shorter-prompts', 'quota', 'smaller-model', 'fewer-branches'];

const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const thousands = (n: number) => Math.round(n).toLocaleString('en-US');
const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

/** Largest calls per request the current budget sustains at the needed per-replica rate. */
function maxCallsPerRequest(input: ValidPlanInput): number {
  const need = requiredUserRequestsPerReplica(input);
  return Math.floor(replicaCallsPerMinute(input) / need + 1e-9);
}

function quotaFix(input: ValidPlanInput, tree: PlannedTree): Fix {
  const need = requiredUserRequestsPerReplica(input);
  const callsPerMinute = need * tree.callsPerRequest * input.replicas;
  const tpm = Math.max(input.quotaTokensPerMinute, Math.ceil((callsPerMinute * tokensPerCall(input)) / input.budgetFraction));
  const rpm = Math.max(input.quotaRequestsPerMinute, Math.ceil(callsPerMinute / input.budgetFraction));
  const change = Math.max(tpm / input.quotaTokensPerMinute, rpm / input.quotaRequestsPerMinute) - 1;
  const parts: string[] = [];
  if (tpm > input.quotaTokensPerMinute) parts.push(`${thousands(tpm)} tokens/min`);
  if (rpm > input.quotaRequestsPerMinute) parts.push(`${thousands(rpm)} requests/min`);
  return {
    kind: 'quota',
    feasible: true,
    change,
    summary: `raise the provider quota to ${parts.join(' and ')} (+${pct(change)})`,
    inputChange: { quotaTokensPerMinute: tpm, quotaRequestsPerMinute: rpm },
  };
}

function shorterPromptsFix(input: ValidPlanInput, tree: PlannedTree): Fix {
  const need = requiredUserRequestsPerReplica(input);
  const callsPerReplica = need * tree.callsPerRequest;
  const requestsPerReplica = (input.quotaRequestsPerMinute * input.budgetFraction) / input.replicas;
  const tokensPerReplica = (input.quotaTokensPerMinute * input.budgetFraction) / input.replicas;
  // The mean counted tokens per call minus this call's input: the output counted and the steps' extra input.
  const rest = tokensPerCall(input) - input.inputTokensPerCall;
  const maxInput = Math.floor(tokensPerReplica / callsPerReplica - rest + 1e-9);
  if (requestsPerReplica + 1e-9 < callsPerReplica || maxInput < 1) {
    const why = maxInput < 1 ? 'the output tokens alone exceed the budget' : 'requests per minute bind, not tokens';
    return { kind: 'shorter-prompts', feasible: false, change: 1, summary: `shorter prompts cannot close the gap: ${why}` };
  }
  const change = 1 - maxInput / input.inputTokensPerCall;
  return {
    kind: 'shorter-prompts',
    feasible: true,
    change,
    summary: `cut input tokens per call to ${thousands(maxInput)} (-${pct(change)})`,
    inputChange: { inputTokensPerCall: maxInput },
  };
}

function fewerBranchesFix(input: ValidPlanInput, tree: PlannedTree): Fix {
  const maxCalls = maxCallsPerRequest(input);
  const branches = Math.floor((maxCalls - tree.sequentialSteps) / tree.callsPerBranch);
  if (branches < 1) {
    return {
      kind: 'fewer-branches',
      feasible: false,
      change: 1,
      summary: `fewer branches cannot close the gap: the budget sustains ${maxCalls} calls per request, the tree needs more without any branch`,
    };
  }
  const calls = branches * tree.callsPerBranch + tree.sequentialSteps;
  const change = 1 - calls / tree.callsPerRequest;
  return {
    kind: 'fewer-branches',
    feasible: true,
    change,
    summary: `fan out to ${plural(branches, 'branch', 'branches')} instead of ${tree.parallelBranches} (${plural(calls, 'call')} per request instead of ${tree.callsPerRequest})`,
    inputChange: { parallelBranches: branches, callsPerRequest: calls },
  };
}

function smallerModelFix(input: ValidPlanInput, tree: PlannedTree): Fix {
  const need = requiredUserRequestsPerReplica(input);
  const kept = Math.min(tree.callsPerRequest, maxCallsPerRequest(input));
  const moved = tree.callsPerRequest - kept;
  const movedPerMinute = need * moved * input.replicas;
  const smallModelQuota = {
    requestsPerMinute: Math.ceil(movedPerMinute / input.budgetFraction),
    tokensPerMinute: Math.ceil((movedPerMinute * tokensPerCall(input)) / input.budgetFraction),
  };
  const change = moved / tree.callsPerRequest;
  return {
    kind: 'smaller-model',
    feasible: true,
    change,
    summary:
      `move ${moved} of ${tree.callsPerRequest} calls per request to a smaller model with its own quota ` +
      `(>= ${thousands(smallModelQuota.tokensPerMinute)} tokens/min, >= ${thousands(smallModelQuota.requestsPerMinute)} requests/min)`,
    ...(kept > 0 ? { inputChange: { callsPerRequest: kept, parallelBranches: undefined } } : {}),
    smallModelQuota,
  };
}

/**
 * A fix of one model's share of a tree, naming the model and the agents that call it (the
 * quota, the prompts and the calls it changes are theirs): `on gemini-2.5-pro (critic, writer): …`.
 */
export function fixForModel(fix: Fix, model: string, agents: readonly string[] = []): Fix {
  const who = agents.length > 0 ? ` (${agents.join(', ')})` : '';
  return { ...fix, summary: `on ${model}${who}: ${fix.summary}` };
}

/** Every fix sized for this input, feasible ones first, smallest change first. */
export function rankFixes(input: ValidPlanInput, tree: PlannedTree): Fix[] {
  const fixes = [
    shorterPromptsFix(input, tree),
    quotaFix(input, tree),
    smallerModelFix(input, tree),
    fewerBranchesFix(input, tree),
  ];
  return fixes.sort(
    (a, b) =>
      Number(b.feasible) - Number(a.feasible) ||
      a.change - b.change ||
      tieOrder.indexOf(a.kind) - tieOrder.indexOf(b.kind),
  );
}
