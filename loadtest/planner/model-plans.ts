// A tree that calls several models is planned per model: each model has its own provider quota
// (Gemini counts per project and per model) and its own limiter, so each model's calls per
// request are planned against that model's quota. The model that sustains the fewest user
// requests per minute binds the tree.
import type { PlanInput } from './input.ts';
import { fixForModel } from './fixes.ts';
import { type Plan, plan } from './plan.ts';
import { formatShareAdvice, shareAdvice } from './replica-share.ts';

/** One model's share of a user request. */
export interface ModelShare {
  readonly model: string;
  /** Its model calls per request, and most of them at once. */
  readonly calls: number;
  readonly width: number;
  /** The `limiter` label its calls are counted under, where known. */
  readonly limiter?: string;
  /** The agents whose calls these are, where known (a fix names them). */
  readonly agents?: readonly string[];
}

export interface ModelPlan {
  readonly model: string;
  readonly limiter?: string;
  readonly plan: Plan;
  /** User requests per minute this model's budget sustains, fleet-wide (by its tokens alone, fractions of a request included). */
  readonly sustainedUserRequestsPerMinute: number;
  /** Whole user requests per minute the fleet serves with static shares: the plan's fleet figure. */
  readonly wholeUserRequestsPerMinute: number;
}

export interface ModelPlans {
  readonly models: readonly ModelPlan[];
  /** The model that sustains the fewest user requests per minute. */
  readonly binding: string;
}

/** A share's calls as the planner's tree: its width as the fan-out, the rest after it. */
export function shareTree(share: Pick<ModelShare, 'calls' | 'width'>): Required<Pick<PlanInput, 'callsPerRequest' | 'parallelBranches' | 'callsPerBranch' | 'sequentialSteps'>> {
  const width = Math.max(1, Math.min(share.width, share.calls));
  return { callsPerRequest: share.calls, parallelBranches: width, callsPerBranch: 1, sequentialSteps: share.calls - width };
}

/**
 * Plans each model's share; `inputs[i]` is share i's input (its quota, its calls' tokens)
 * without the tree, which is the share's. Throws PlanInputError as plan() does.
 */
export function planModels(shares: readonly ModelShare[], inputs: readonly PlanInput[]): ModelPlans {
  if (shares.length === 0) throw new Error('a tree with no model calls cannot be planned per model');
  if (inputs.length !== shares.length) throw new Error(`${shares.length} model shares but ${inputs.length} plan inputs`);
  const models = shares.map((share, i): ModelPlan => {
    const planned = plan({ ...inputs[i], ...shareTree(share) });
    // A fix of this share changes this model's quota, prompts or calls: it says so.
    const p = { ...planned, fixes: planned.fixes.map((fix) => fixForModel(fix, share.model, share.agents)) };
    return {
      model: share.model,
      ...(share.limiter ? { limiter: share.limiter } : {}),
      plan: p,
      sustainedUserRequestsPerMinute: p.perReplica.userRequestsPerMinuteExact * p.fleet.replicas,
      wholeUserRequestsPerMinute: p.fleet.userRequestsPerMinute,
    };
  });
  const binding = models.reduce((a, b) =>
    b.sustainedUserRequestsPerMinute < a.sustainedUserRequestsPerMinute ||
    (b.sustainedUserRequestsPerMinute === a.sustainedUserRequestsPerMinute && b.plan.binding.quotaUse > a.plan.binding.quotaUse)
      ? b
      : a,
  );
  return { models, binding: binding.model };
}

const round1 = (n: number) => String(Number(n.toFixed(1)));

/** One line per model, the binding one marked. */
export function formatModelPlans(plans: ModelPlans, tokensNote: string): string {
  const width = Math.max(...plans.models.map((m) => m.model.length));
  const lines = plans.models.map((m) => {
    const p = m.plan;
    const mark = m.model === plans.binding ? '  ← binds' : '';
    const advice = shareAdvice(p);
    // The fleet's whole requests (what the plan's Fleet section says), then the budget's fraction.
    const replicas = p.fleet.replicas > 1 ? `${p.perReplica.userRequestsPerMinute} per replica, ` : '';
    return (
      `  ${m.model.padEnd(width)}  ${p.tree.callsPerRequest} calls/request, ${Math.round(p.demand.tokensPerCall).toLocaleString('en-US')} tokens/call, ` +
      `quota ${p.quota.tokensPerMinute.toLocaleString('en-US')} tokens/min: sustains ${m.wholeUserRequestsPerMinute} user requests/min ` +
      `(${replicas}${round1(m.sustainedUserRequestsPerMinute)} by its tokens; ${p.binding.axis} bind)${mark}${advice ? `\n    ${formatShareAdvice(p, advice)}` : ''}`
    );
  });
  return [`Per model (each model has its own quota and limiter; ${tokensNote}):`, ...lines].join('\n');
}
