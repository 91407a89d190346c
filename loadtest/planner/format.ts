// The plan as a table for people (the CLI's default output; `--json` prints the Plan itself).
import type { Plan } from './plan.ts';
import { formatShareAdvice, shareAdvice } from './replica-share.ts';

/** 1160000 → "1.16 M", 300000 → "300 k", 5800 → "5,800". */
export function compactCount(n: number): string {
  if (Math.abs(n) >= 1_000_000) return `${trim(n / 1_000_000, 2)} M`;
  if (Math.abs(n) >= 100_000) return `${trim(n / 1_000, 1)} k`;
  return Math.round(n).toLocaleString('en-US');
}

/** At most `digits` decimals, no trailing zeros. */
function trim(n: number, digits: number): string {
  return String(Number(n.toFixed(digits)));
}

const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

function section(title: string, rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return [title, ...rows.map(([label, value]) => `  ${label.padEnd(width)}${value}`)].join('\n');
}

function treeLine(plan: Plan): string {
  const t = plan.tree;
  if (t.source === 'assumed') {
    return `${plural(t.callsPerRequest, 'model call')} per user request (shape unknown: taken as one fan-out for the burst)`;
  }
  const steps = t.sequentialSteps > 0 ? ` + ${plural(t.sequentialSteps, 'sequential step')}` : '';
  return `${plural(t.parallelBranches, 'parallel branch', 'parallel branches')} × ${plural(t.callsPerBranch, 'call')}${steps} = ${plural(t.callsPerRequest, 'model call')} per user request`;
}

function demandSection(plan: Plan): string {
  const { demand, quota, quotaUse, binding, input } = plan;
  const bindingText = binding.overQuota
    ? `${binding.axis} bind: ${pct(binding.overBy)} over the quota`
    : `${binding.axis} bind first, at ${pct(binding.quotaUse)} of the quota`;
  return section(`Demand (peak ${trim(demand.userRequestsPerMinute, 2)} user requests/min)`, [
    ['calls', `${trim(demand.callsPerMinute, 1)} calls/min (${trim(demand.callsPerSecond, 1)} calls/s)`],
    // Total tokens read as plain "tokens" (the worked example's wording); input-counted quotas say so.
    ['tokens', `${compactCount(demand.tokensPerMinute)} ${input.countedTokens === 'input' ? 'input tokens' : 'tokens'}/min (${compactCount(demand.tokensPerCall)} per call)`],
    [
      'quota use',
      `requests ${pct(quotaUse.requests)} of ${compactCount(quota.requestsPerMinute)}/min, tokens ${pct(quotaUse.tokens)} of ${compactCount(quota.tokensPerMinute)}/min`,
    ],
    ['binding axis', bindingText],
    [
      'calls in flight',
      `≈${Math.round(plan.inFlight.fleet)} across the fleet (${trim(demand.callsPerSecond, 1)} calls/s × ${trim(input.latencySeconds, 2)} s, Little's law)`,
    ],
  ]);
}

function replicaSection(plan: Plan): string {
  const { perReplica, fleet } = plan;
  return section(`Budget per replica (${pct(plan.budget.fraction)} of the quota over ${plural(fleet.replicas, 'replica')})`, [
    ['tokens/min', compactCount(perReplica.tokensPerMinute)],
    ['requests/min', compactCount(perReplica.requestsPerMinute)],
    ['sustainable calls/min', `≈${Math.floor(perReplica.callsPerMinute + 1e-9)} (${trim(perReplica.callsPerMinute, 1)})`],
    ['user requests/min', `${perReplica.userRequestsPerMinute} (${trim(perReplica.userRequestsPerMinuteExact, 1)})`],
    ['calls in flight', `≈${Math.round(plan.inFlight.perReplica)} (${trim(plan.inFlight.perReplica, 1)})`],
    ['permits', `${perReplica.permits} (in flight rounded up to whole user requests)`],
    ['maxWait', `${trim(perReplica.maxWaitSeconds, 2)} s`],
  ]);
}

function fleetSection(plan: Plan): string {
  const { demand, fleet, admission, overload } = plan;
  const advice = shareAdvice(plan);
  return section('Fleet', [
    [
      'user requests/min',
      `${fleet.userRequestsPerMinute} sustainable against a demand of ${trim(demand.userRequestsPerMinute, 2)}${advice ? ` (${formatShareAdvice(plan, advice)})` : ''}`,
    ],
    [
      'shortfall',
      fleet.shortfallUserRequestsPerMinute > 0
        ? `${trim(fleet.shortfallUserRequestsPerMinute, 2)} user requests/min (${pct(fleet.shortfallFraction)} of the demand)`
        : 'none: the demand fits the budget',
    ],
    ['served', `${trim(admission.servedUserRequestsPerMinute, 1)} user requests/min (the whole requests the budget holds, every branch answered)`],
    [
      'shed',
      admission.shedUserRequestsPerMinute > 0
        ? `${trim(admission.shedUserRequestsPerMinute, 1)} user requests/min (${pct(admission.shedFraction)} of the demand: answered 429 at once, before any model call)`
        : '0 user requests/min',
    ],
    ['partial', '≈0 (a request is admitted whole or shed whole)'],
    [
      'with --admission call',
      overload.secondsUntilMaxWait === null
        ? 'the queue does not grow'
        : `queue grows by ${trim(overload.excessCallsPerMinute, 1)} calls/min; waits reach maxWait after ≈${Math.round(overload.secondsUntilMaxWait)} s, then ≈${trim(overload.timeoutsPerMinute, 1)} calls/min time out`,
    ],
  ]);
}

function burstSection(plan: Plan): string {
  const { burst, perReplica } = plan;
  return section(`Burst (${plural(burst.users, 'user')} at once)`, [
    ...burst.waves.map((wave) => [`t = ${trim(wave.atSeconds, 2)} s`, `${plural(wave.calls, 'call')} (${wave.kind})`] as const),
    [
      'busiest replica',
      `${burst.busiestReplicaCallsAtStart} calls at t = 0 against ${perReplica.permits} permits: ` +
        (burst.queuedAtStart > 0
          ? `${burst.queuedAtStart} queue up to ≈${trim(burst.queuedWaitSeconds, 2)} s (${burst.withinMaxWait ? 'within' : 'BEYOND'} maxWait)`
          : 'none queue'),
    ],
    [
      'burst tokens',
      `${compactCount(burst.busiestReplicaTokensAtStart)} reserved at t = 0 of ${compactCount(perReplica.tokensPerMinute)}/min (${burst.tokensFitBudget ? 'fits' : 'DOES NOT fit'})`,
    ],
    [
      'burst requests',
      `${burst.busiestReplicaCallsAtStart} at t = 0 of ${compactCount(perReplica.requestsPerMinute)}/min (${burst.requestsFitBudget ? 'fits' : 'DOES NOT fit'})`,
    ],
  ]);
}

export function formatPlan(plan: Plan): string {
  const parts = [`Capacity plan: ${treeLine(plan)}`, demandSection(plan), replicaSection(plan), fleetSection(plan), burstSection(plan)];
  if (plan.fixes.length > 0) {
    const lines = plan.fixes.map((fix, i) => `  ${i + 1}. ${fix.feasible ? '' : '(not enough alone) '}${fix.summary}`);
    parts.push(['Fixes, best first', ...lines].join('\n'));
  }
  return `${parts.join('\n\n')}\n`;
}
